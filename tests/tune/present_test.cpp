// tune::present, the one function behind `ragform present`, /v1/rag/present and ragform.present:
// a profile applied to one JSON record renders what the tune renderer measured, whatever the
// record's loader format; the profile's task only picks the template; bad records are RowErrors
// naming the reason (the front ends add where the record came from).
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "eval/datasets.h"
#include "eval/jsonl.h"
#include "tune/present.h"

namespace {

using namespace ragform;
using nlohmann::json;

const json kRecord = {
    {"id", "r1"},
    {"question", "Who played with Max?"},
    {"answers", {"Lily"}},
    {"ctxs",
     {{{"title", "Park"},
       {"text", "Lily went to the park. She saw a big dog. The dog was named Max."},
       {"isgold", true}},
      {{"title", "Ball"}, {"text", "Tom had a red ball. He threw it high in the sky."}},
      {{"title", "Cafe"}, {"text", "Zurich has a cafe. Its coffee is strong and hot."}}}}};

tune::Profile profile_of(const tune::Presentation& p, tune::Task t = tune::Task::Qa) {
  tune::Profile prof;
  prof.presentation = p;
  prof.task = t;
  return prof;
}

// What the tune renderer gives for the record read as the loaders read it.
std::string rendered(const json& record, const tune::Profile& prof) {
  const eval::QaRecord r = eval::to_qa_record(record, *eval::detect_format(record), {});
  return tune::render(r, prof.presentation, prof.task, tune::template_for(prof.task)).prompt;
}

TEST(TunePresent, RendersWhatTheSearchMeasured) {
  tune::Presentation p;
  p.delimiter = "-";
  p.p = 0.5;
  p.format_seed = 3;
  p.format = "yaml";
  p.order = tune::Order::Reversed;
  p.k = 2;
  const tune::Profile prof = profile_of(p);
  const tune::Presented got = tune::present(kRecord, prof);
  EXPECT_EQ(got.id, "r1");
  EXPECT_EQ(got.prompt, rendered(kRecord, prof));
  EXPECT_NE(got.prompt, rendered(kRecord, profile_of(tune::original_presentation())));
  EXPECT_EQ(got.documents, 2u);
  EXPECT_EQ(got.gold_position, 1);  // k = 2 keeps Park and Ball; reversed puts Park second
  EXPECT_FALSE(got.prompt_tokens);  // no reader, no count
}

TEST(TunePresent, ObjectKeysInOrder) {
  const tune::Profile prof = profile_of(tune::original_presentation());
  const auto j = tune::presented_json(tune::present(kRecord, prof), prof);
  std::string keys;
  for (const auto& [k, v] : j.items()) keys += k + ",";
  EXPECT_EQ(keys, "id,prompt,documents,gold_position,task,presentation,");
  EXPECT_EQ(j["presentation"], tune::label(prof.presentation));
  EXPECT_EQ(j["task"], "qa");
}

// A profile tuned on the needle task applies to canonical QA records: its template, their ctxs.
TEST(TunePresent, TheTaskOnlyPicksTheTemplate) {
  const tune::Profile needle = profile_of(tune::original_presentation(), tune::Task::Needle);
  const tune::Presented got = tune::present(kRecord, needle);
  EXPECT_EQ(got.prompt, rendered(kRecord, needle));
  EXPECT_NE(got.prompt, tune::present(kRecord, profile_of(tune::original_presentation())).prompt);
  EXPECT_EQ(got.documents, 3u);
}

TEST(TunePresent, OtherLoaderFormatsToo) {
  // A HotpotQA distractor record (Hugging Face schema): its paragraphs are the documents.
  const json hotpot = {
      {"id", "h1"},
      {"question", "Who played with Max?"},
      {"answer", "Lily"},
      {"type", "bridge"},
      {"context",
       {{"title", {"Park", "Ball"}},
        {"sentences",
         {{"Lily went to the park.", " The dog was named Max."}, {"Tom had a red ball."}}}}},
      {"supporting_facts", {{"title", {"Park"}}, {"sent_id", {0}}}}};
  const tune::Profile prof = profile_of(tune::original_presentation());
  const tune::Presented got = tune::present(hotpot, prof);
  EXPECT_EQ(got.prompt, rendered(hotpot, prof));
  EXPECT_NE(got.prompt.find("(Title: Ball) Tom had a red ball."), std::string::npos) << got.prompt;
  EXPECT_EQ(got.documents, 2u);
  EXPECT_EQ(got.gold_position, 0);
}

TEST(TunePresent, BadRecordsAreRowErrors) {
  const tune::Profile prof = profile_of(tune::original_presentation());
  try {
    tune::present(json{{"id", "x"}, {"question", "q"}, {"answers", {"a"}}}, prof);
    FAIL() << "a record without ctxs was presented";
  } catch (const eval::RowError& e) {
    EXPECT_STREQ(e.what(), "record x has no documents (ctxs) to present");
  }
  EXPECT_THROW(tune::present(json{{"title", "no question"}}, prof), eval::RowError);
  EXPECT_THROW(tune::present(json::array({1}), prof), eval::RowError);
  json bad = kRecord;
  bad["ctxs"][1]["text"] = 5;
  EXPECT_THROW(tune::present(bad, prof), eval::RowError);
  // A kv profile needs key-value records.
  EXPECT_THROW(tune::present(kRecord, profile_of(tune::original_presentation(), tune::Task::Kv)),
               eval::RowError);
}

TEST(TunePresent, AProfileThatCannotRenderIsAUsageError) {
  tune::Presentation p;
  p.spotlight = 2;
  p.delimiter = "-";  // spotlight keeps sentences as written
  EXPECT_THROW(tune::check_profile(profile_of(p)), UsageError);
  EXPECT_THROW(tune::present(kRecord, profile_of(p)), UsageError);
}

TEST(TunePresent, KvProfileOnKeyValueRecords) {
  const json kv = {
      {"ordered_kv_records", json::array({json::array({"k1", "v1"}), json::array({"k2", "v2"}),
                                          json::array({"k3", "v3"})})},
      {"key", "k2"},
      {"value", "v2"}};
  const tune::Profile prof = profile_of(tune::original_presentation(), tune::Task::Kv);
  const tune::Presented got = tune::present(kv, prof);
  EXPECT_EQ(got.prompt, rendered(kv, prof));
  EXPECT_NE(got.prompt.find("\"k2\""), std::string::npos) << got.prompt;
  EXPECT_EQ(got.gold_position, 1);
}

}  // namespace

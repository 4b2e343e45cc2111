// run_generate (spotlight/run.h) on a damaged store row (issue 40): a selection row whose
// extra.selected holds a string, or whose spans are not byte offsets, stops the run with a message
// naming the row (run, question, variant) and what is wrong, in words: not nlohmann's
// "[json.exception.type_error.306]".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "eval/qa_record.h"
#include "pipelines/spotlight/run.h"
#include "store/run_store.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::spotlight {
namespace {

std::string damaged(const std::string& tag, const nlohmann::json& extra, bool without_tokens,
                    double emphasis) {
  store::RunStore st(ragform::testing::temp_dir(tag) / "runs.sqlite");
  store::RunConfig rc;
  rc.pipeline = "spotlight eval";
  const int64_t run = st.begin_run(rc);
  store::Result row;
  row.run = run;
  row.instance = "q1";
  row.variant = "spotlight";
  row.prompt = "Question: who?\nEvidence:\n<Rel0.90> Ann wrote it.\nAnswer:";
  row.output = "x";
  row.extra = extra;
  st.put(row);
  eval::QaRecord rec;
  rec.id = "q1";
  rec.question = "who?";
  rec.answers = {"Ann"};
  ragform::testing::FakeReader rd;
  rd.answer = [](const std::string&) { return std::string("Ann"); };
  GenerateOptions g;
  g.spotlight_run = run;
  g.without_tokens = without_tokens;
  g.emphasis_factor = emphasis;
  try {
    run_generate(rd, st, {rec}, g);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_names_the_row(const std::string& what, const std::string& why) {
  EXPECT_EQ(what.find("json.exception"), std::string::npos) << what;
  EXPECT_NE(what.find("run 1, question 'q1', variant 'spotlight'"), std::string::npos) << what;
  EXPECT_NE(what.find(why), std::string::npos) << what;
  EXPECT_NE(what.find("rerun spotlight eval --store"), std::string::npos) << what;
}

using nlohmann::json;

TEST(SpotlightStoreRow, ASelectionThatIsNotSentencesIsNamed) {
  const json strings = {{"question", "who?"}, {"selected", json::array({"Ann wrote it."})}};
  expect_names_the_row(damaged("spotlight-row-selected", strings, true, 1.0),
                       "selected[0] that is not a sentence");
  const json numbers = {{"question", "who?"},
                        {"selected", json::array({json::object({{"text", 7}})})}};
  expect_names_the_row(damaged("spotlight-row-text", numbers, true, 1.0),
                       "selected[0] that is not a sentence");
}

TEST(SpotlightStoreRow, SpansThatAreNotOffsetsAreNamed) {
  const std::vector<json> bad = {
      json::array({json::array({"a", 3})}), json::array({json::array({3, 1})}),
      json::array({json::array({0, 100000})}), json::array({7}), json("x")};
  for (size_t i = 0; i < bad.size(); ++i) {
    const json extra = json::object({{"spans", bad[i]}});
    expect_names_the_row(damaged("spotlight-row-spans-" + std::to_string(i), extra, false, 2.0),
                         "spans");
  }
}

}  // namespace
}  // namespace ragform::spotlight

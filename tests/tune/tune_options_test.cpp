// tune_options: a held-out split that overlaps the dev split is not held out (issue 40, item 6).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "support/test_support.h"
#include "tune/run.h"

namespace {

using namespace ragform;

eval::QaRecord record(const std::string& id, const std::string& q, const std::string& doc) {
  eval::QaRecord r;
  r.id = id;
  r.question = q;
  r.answers = {"a"};
  r.source_format = "litm-qa";
  r.source_line = 1;
  eval::Context c;
  c.title = "t";
  c.text = doc;
  r.ctxs.push_back(c);
  return r;
}

// Issue 40, third pass: copies of one held-out record under new ids were counted as independent
// pairs (6 records x 5 copies gave 30 held-out items), narrowing the interval the deploy rule
// reads. The first of each is kept.
TEST(TuneOptions, RepeatsWithinTheHeldOutSplitAreDropped) {
  std::vector<eval::QaRecord> held = {record("h1", "q1", "x"), record("h2", "q1", "x"),
                                      record("h3", "Q1 ", "x"), record("h4", "q1", "w"),
                                      record("h5", "q2", "x")};
  EXPECT_EQ(tune::drop_holdout_repeats(held), 2u);
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held[0].id, "h1");
  EXPECT_EQ(held[1].id, "h4");
  EXPECT_EQ(held[2].id, "h5");
  EXPECT_EQ(tune::drop_holdout_repeats(held), 0u);
}

TEST(TuneOptions, OverlapIsFoundByIdAndByWholeRecord) {
  const std::vector<eval::QaRecord> dev = {record("d1", "q1", "x"), record("d2", "q2", "y")};
  std::vector<eval::QaRecord> held = {
      record("h1", "q1", "x"),         // the same record under another id
      record("d2", "other", "z"),      // the same id given by the file
      record("h3", "q1", "w"),         // the same question over other documents: a different record
      record("litm-qa:1", "q9", "v"),  // a defaulted id ("<format>:<line>") is not compared
  };
  std::vector<eval::QaRecord> dev_default = dev;
  dev_default.push_back(record("litm-qa:1", "q8", "u"));
  EXPECT_EQ(tune::drop_dev_overlap(dev_default, held), 2u);
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].id, "h3");
  EXPECT_EQ(held[1].id, "litm-qa:1");
}

// Issue 40, D6: only exact copies were caught. Each variant below renders the prompts of its dev
// record byte for byte (or differs in what the prompt's normalisation cannot see): dropped.
TEST(TuneOptions, OverlapIgnoresWhatThePromptDoesNotShow) {
  eval::QaRecord dev = record("d1", "who is lily 0", "Lily went to the park.");
  dev.answers = {"Lily"};
  eval::Context other;
  other.title = "u";
  other.text = "Tom had a ball.";
  dev.ctxs.push_back(other);
  const std::vector<std::pair<std::string, std::function<void(eval::QaRecord&)>>> same = {
      {"hasanswer", [](eval::QaRecord& r) { r.ctxs[0].hasanswer = true; }},
      {"isgold", [](eval::QaRecord& r) { r.ctxs[0].isgold = true; }},
      {"document ids and scores",
       [](eval::QaRecord& r) {
         r.ctxs[0].id = "zz0";
         r.ctxs[1].score = 2.0;
       }},
      {"duplicated answer",
       [](eval::QaRecord& r) {
         r.answers = {"Lily", "Lily"};
       }},
      {"alias answer",
       [](eval::QaRecord& r) {
         r.answers = {"Lily", "lily"};
       }},
      {"reordered answers",
       [](eval::QaRecord& r) {
         r.answers = {"Lily", "Lil"};
       }},
      {"reversed documents", [](eval::QaRecord& r) { std::swap(r.ctxs[0], r.ctxs[1]); }},
      {"question case", [](eval::QaRecord& r) { r.question = "Who is Lily 0"; }},
      {"question spaces", [](eval::QaRecord& r) { r.question = " who  is\tlily 0 "; }},
      {"trailing newline", [](eval::QaRecord& r) { r.ctxs[1].text += "\n"; }},
      // Invisible format characters (issue 40, third pass): zero-width space, soft hyphen, BOM.
      {"invisible characters",
       [](eval::QaRecord& r) {
         r.question = "who is \xE2\x80\x8Blily 0";
         r.ctxs[0].text = "\xEF\xBB\xBFLily went to the pa\xC2\xADrk.";
       }},
      // Every default-ignorable code point (fifth pass: U+200E, U+FE0F, U+2062 and U+E0020 let a
      // copy of the dev split pass as held out): LRM, variation selector 16, invisible times, a
      // tag space, combining grapheme joiner, Hangul filler, an LRE..PDF pair.
      {"default-ignorable code points",
       [](eval::QaRecord& r) {
         r.question =
             "who\xE2\x80\x8E is \xEF\xB8\x8F"
             "lily\xE2\x81\xA2 0\xF3\xA0\x80\xA0";
         r.ctxs[0].text = "\xCD\x8FLily went\xE3\x85\xA4 to the \xE2\x80\xAApark\xE2\x80\xAC.";
       }},
      // The question's punctuation (eleventh pass, K4: a question ending in "?", " ?" or "." or
      // quoted in curly quotes was kept as held out): the same question.
      {"a question mark", [](eval::QaRecord& r) { r.question = "who is lily 0?"; }},
      {"a spaced question mark", [](eval::QaRecord& r) { r.question = "who is lily 0 ?"; }},
      {"a full stop", [](eval::QaRecord& r) { r.question = "who is lily 0."; }},
      {"curly quotes",
       [](eval::QaRecord& r) { r.question = "who is \xE2\x80\x9Clily\xE2\x80\x9D 0"; }},
  };
  for (const auto& [what, change] : same) {
    eval::QaRecord d = dev;
    if (what == "reordered answers") d.answers = {"Lil", "Lily"};
    std::vector<eval::QaRecord> held = {dev};
    held[0].id = "h1";
    change(held[0]);
    EXPECT_EQ(tune::drop_dev_overlap({d}, held), 1u) << what;
  }
  // What the prompt shows, or what is graded, differs: kept.
  const std::vector<std::pair<std::string, std::function<void(eval::QaRecord&)>>> other_records = {
      {"an extra document",
       [](eval::QaRecord& r) {
         r.ctxs.push_back(r.ctxs[1]);
         r.ctxs.back().text = "An unrelated sentence.";
       }},
      {"a document's title", [](eval::QaRecord& r) { r.ctxs[1].title = "v"; }},
      {"a word of a document", [](eval::QaRecord& r) { r.ctxs[0].text = "Lily went home."; }},
      {"another answer", [](eval::QaRecord& r) { r.answers = {"Tom"}; }},
      {"a further answer", [](eval::QaRecord& r) { r.answers.push_back("Tom"); }},
      {"the question", [](eval::QaRecord& r) { r.question = "who is lily 1"; }},
      // A document's punctuation is in the prompt: another record (dropping would be safe, but
      // documents are compared as the prompt shows them).
      {"a document's punctuation", [](eval::QaRecord& r) { r.ctxs[0].text += "!"; }},
  };
  for (const auto& [what, change] : other_records) {
    std::vector<eval::QaRecord> held = {dev};
    held[0].id = "h1";
    change(held[0]);
    EXPECT_EQ(tune::drop_dev_overlap({dev}, held), 0u) << what;
  }
}

// Issue 40, third and fourth passes (H2, D3): documents past the space's smallest k are in no
// prompt of that k's candidates, so a dev record with more documents behind the same first ones is
// the same prompts under them.
// Seventh pass, F9: key-value records were compared byte for byte, so a dev record with a
// zero-width space in one pair's key, or a space around a value, was kept as held out. Their
// pairs are folded as the documents are; another value, or another order, is another record.
TEST(TuneOptions, KvRecordsAreComparedAsThePromptShowsThem) {
  eval::QaRecord dev;
  dev.id = "d1";
  dev.question = "Extract the value of key k2.";
  dev.answers = {"v2"};
  eval::KvExtra kv;
  kv.key = "k2";
  kv.value = "v2";
  kv.records = {{"k1", "v1"}, {"k2", "v2"}, {"k3", "v3"}};
  kv.gold_index = 1;
  dev.kv = kv;
  auto held_with = [&](const std::function<void(eval::KvExtra&)>& change) {
    eval::QaRecord h = dev;
    h.id = "h1";
    change(*h.kv);
    std::vector<eval::QaRecord> held = {h};
    return tune::drop_dev_overlap({dev}, held);
  };
  EXPECT_EQ(held_with([](eval::KvExtra& k) {
              k.records[0].first =
                  "k\xE2\x80\x8B"
                  "1";
            }),
            1u);
  EXPECT_EQ(held_with([](eval::KvExtra& k) { k.records[2].second = " v3 "; }), 1u);
  EXPECT_EQ(held_with([](eval::KvExtra& k) { k.records[2].second = "v4"; }), 0u);
  EXPECT_EQ(held_with([](eval::KvExtra& k) { std::swap(k.records[0], k.records[2]); }), 0u);
}

TEST(TuneOptions, OverlapComparesTheDocumentsACandidateCanShow) {
  eval::QaRecord dev = record("d1", "q1", "first");
  eval::QaRecord held = dev;
  held.id = "h1";
  eval::Context extra;
  extra.title = "t";
  extra.text = "a document no candidate shows";
  held.ctxs.push_back(extra);
  std::vector<eval::QaRecord> h = {held};
  EXPECT_EQ(tune::drop_dev_overlap({dev}, h, /*compared=*/0), 0u);  // "all" shows it
  EXPECT_EQ(tune::drop_dev_overlap({dev}, h, /*compared=*/2), 0u);
  EXPECT_EQ(tune::drop_dev_overlap({dev}, h, /*compared=*/1), 1u);
  // Within the compared ones the documents still count (reordered is the same multiset).
  held.ctxs.insert(held.ctxs.begin(), extra);
  h = {held};
  EXPECT_EQ(tune::drop_dev_overlap({dev}, h, /*compared=*/1), 0u);

  // tune_options takes the space's smallest k ("all" alone compares every document).
  auto dir = ragform::testing::temp_dir("tune_options_shown");
  const std::string a =
      R"({"id": "a", "question": "who?", "answers": ["x"], "ctxs": [{"title": "t", "text": "x did it"}]})";
  const std::string a_more =
      R"({"id": "b", "question": "who?", "answers": ["x"], "ctxs": [{"title": "t", "text": "x did it"}, {"title": "u", "text": "more"}]})";
  const std::string c =
      R"({"id": "c", "question": "where?", "answers": ["z"], "ctxs": [{"title": "t", "text": "in z"}]})";
  ragform::testing::write_file(dir / "dev.jsonl", a + "\n");
  ragform::testing::write_file(dir / "held.jsonl", a_more + "\n" + c + "\n");
  tune::TuneArgs args;
  args.task = "qa";
  args.input = (dir / "dev.jsonl").string();
  args.holdout = (dir / "held.jsonl").string();
  args.k = std::vector<std::string>{"1"};
  EXPECT_EQ(tune::tune_options(args).holdout_overlap, 1u);
  args.k = std::vector<std::string>{"1", "all"};  // the k = 1 candidates show the same prompts
  EXPECT_EQ(tune::tune_options(args).holdout_overlap, 1u);
  args.k = std::vector<std::string>{"2", "all"};
  EXPECT_EQ(tune::tune_options(args).holdout_overlap, 0u);
  args.k = std::vector<std::string>{"all"};
  EXPECT_EQ(tune::tune_options(args).holdout_overlap, 0u);
}

TEST(TuneOptions, HoldoutEqualToDevIsRefusedAndAPartialOverlapDropped) {
  auto dir = ragform::testing::temp_dir("tune_options_overlap");
  const std::string a =
      R"({"id": "a", "question": "who?", "answers": ["x"], "ctxs": [{"title": "t", "text": "x did it"}]})";
  const std::string b =
      R"({"id": "b", "question": "what?", "answers": ["y"], "ctxs": [{"title": "t", "text": "it was y"}]})";
  const std::string c =
      R"({"id": "c", "question": "where?", "answers": ["z"], "ctxs": [{"title": "t", "text": "in z"}]})";
  ragform::testing::write_file(dir / "dev.jsonl", a + "\n" + b + "\n");
  ragform::testing::write_file(dir / "part.jsonl", b + "\n" + c + "\n");
  tune::TuneArgs args;
  args.task = "qa";
  args.input = (dir / "dev.jsonl").string();
  args.holdout = (dir / "dev.jsonl").string();
  try {
    tune::tune_options(args);
    ADD_FAILURE() << "a held-out split equal to dev was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("all 2 held-out records are also in the dev split"),
              std::string::npos)
        << e.what();
  }
  args.holdout = (dir / "part.jsonl").string();
  const tune::TuneOptions o = tune::tune_options(args);
  EXPECT_EQ(o.holdout_overlap, 1u);
  ASSERT_EQ(o.holdout.size(), 1u);
  EXPECT_EQ(o.holdout[0].id, "c");
  // Generated needle splits come from disjoint seeds: nothing to drop.
  args = {};
  args.task = "needle";
  EXPECT_EQ(tune::tune_options(args).holdout_overlap, 0u);
}

}  // namespace

namespace {

// Issue 40, item 17: records tune cannot grade or store fail before the run, with FILE:LINE.
TEST(TuneOptions, RecordsWithoutAnswersOrWithADuplicateIdAreRefusedUpFront) {
  auto dir = ragform::testing::temp_dir("tune_options_records");
  const std::string a =
      R"({"id": "a", "question": "who?", "answers": ["x"], "ctxs": [{"title": "t", "text": "x did it"}]})";
  const std::string no_answer =
      R"({"id": "n", "question": "what?", "answers": [], "ctxs": [{"title": "t", "text": "y"}]})";
  const std::string a_again =
      R"({"id": "a", "question": "where?", "answers": ["z"], "ctxs": [{"title": "t", "text": "in z"}]})";
  ragform::testing::write_file(dir / "none.jsonl", a + "\n" + no_answer + "\n");
  ragform::testing::write_file(dir / "dup.jsonl", a + "\n" + a_again + "\n");
  ragform::tune::TuneArgs args;
  args.task = "qa";
  args.holdout = (dir / "dup.jsonl").string();
  auto message = [&](const std::string& input) -> std::string {
    args.input = input;
    try {
      ragform::tune::tune_options(args);
    } catch (const ragform::UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message((dir / "none.jsonl").string()).find("none.jsonl:2: no gold answers"),
            std::string::npos);
  EXPECT_NE(
      message((dir / "dup.jsonl").string()).find("dup.jsonl:2: id 'a' is also the id of line 1"),
      std::string::npos);
}

}  // namespace

// A key-value answer is a UUID, 34 of Gemma 3's tokens: at the default 12 every kv answer was cut
// and graded wrong, whatever the presentation. Unless told, kv generates 48; the others 12.
TEST(TuneOptions, AKvSearchGeneratesEnoughTokensForAUuid) {
  tune::TuneArgs a;
  a.task = "needle";
  EXPECT_EQ(tune::tune_options(a).max_tokens, 12);
  a.max_tokens = 30;
  EXPECT_EQ(tune::tune_options(a).max_tokens, 30);
  // Two one-record kv files (dev and held out), in lost-in-the-middle's key-value format.
  const auto dir = ragform::testing::temp_dir("tune-kv-tokens");
  auto record = [](const std::string& key, const std::string& value) {
    return "{\"ordered_kv_records\": [[\"" + key + "\", \"" + value +
           "\"], [\"9f4a92b9-5f69-4725-ba1e-403f08dea695\", "
           "\"703a7ce5-f17f-4e6d-b895-5836ba5ec71c\"]], \"key\": \"" +
           key + "\", \"value\": \"" + value + "\"}\n";
  };
  ragform::testing::write_file(dir / "dev.jsonl", record("a54e2eed-e625-4570-9f74-3624e77d6684",
                                                         "d1ff29be-4e2a-4208-a182-0cea716be3d4"));
  ragform::testing::write_file(dir / "held.jsonl", record("2a8d601d-1d69-4e64-9f90-8ad825a74195",
                                                          "bb3ba2a5-7de8-434b-a86e-a88bb9fa7289"));
  tune::TuneArgs k;
  k.task = "kv";
  k.input = (dir / "dev.jsonl").string();
  k.holdout = (dir / "held.jsonl").string();
  EXPECT_EQ(tune::tune_options(k).max_tokens, 48);
}

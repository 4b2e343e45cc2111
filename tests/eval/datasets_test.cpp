// Loaders on small files written by the test: one per format (FlashRAG and LongBench-v2 have no
// real file in ../shared/data), format detection, ids, and the field errors (wrong type, missing
// field) with file, line and reason.
#include "eval/datasets.h"

#include <gtest/gtest.h>

#include <string>

#include "support/test_support.h"

namespace {

using namespace ragform::eval;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

std::string write(const std::string& name, const std::string& bytes) {
  auto p = temp_dir("datasets") / name;
  write_file(p, bytes);
  return p.string();
}

DataError load_error(const std::string& path, Format f = Format::Auto) {
  try {
    LoadOptions o;
    o.format = f;
    load_qa_file(path, o);
  } catch (const DataError& e) {
    return e;
  }
  ADD_FAILURE() << "no DataError for " << path;
  return DataError(path, 0, "none");
}

TEST(Datasets, FormatNamesRoundTrip) {
  for (Format f : known_formats()) EXPECT_EQ(parse_format(format_name(f)), f);
  EXPECT_EQ(parse_format("auto"), Format::Auto);
  EXPECT_EQ(known_formats().size(), 7u);
  try {
    parse_format("squad");
    FAIL();
  } catch (const ragform::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown format 'squad' (one of: auto, litm-kv"),
              std::string::npos)
        << e.what();
  }
}

TEST(Datasets, DetectFromFields) {
  using nlohmann::json;
  EXPECT_EQ(detect_format(json::parse(R"({"question":"q","answers":["a"],"ctxs":[]})")),
            Format::LitmQa);
  EXPECT_EQ(detect_format(json::parse(R"({"question":"q","answer":["a"]})")), Format::NqOpen);
  EXPECT_EQ(detect_format(json::parse(R"({"question":"q","golden_answers":["a"]})")),
            Format::FlashRag);
  EXPECT_EQ(detect_format(json::parse(R"({"key":"k","value":"v","ordered_kv_records":[]})")),
            Format::LitmKv);
  EXPECT_EQ(detect_format(json::parse(R"({"question":"q","answer":"a","supporting_facts":{}})")),
            Format::HotpotQa);
  EXPECT_EQ(detect_format(json::parse(R"({"question":"q","adv_texts":[]})")), Format::PoisonedRag);
  EXPECT_EQ(detect_format(json::parse(R"({"question":"q","choice_A":"x","answer":"A"})")),
            Format::LongBenchV2);
  EXPECT_EQ(detect_format(json::parse(R"({"text":"t"})")), std::nullopt);
}

TEST(Datasets, LitmQaWithIdsScoresAndClosedBookRows) {
  std::string path = write(
      "litm.jsonl",
      R"({"question": "q1", "answers": ["a", "b"], "ctxs": [)"
      R"({"id": "doc7", "title": "T", "text": "x a y", "hasanswer": true, "isgold": true, "score": "1.5"},)"
      R"({"title": null, "text": "z", "isgold": false}]})"
      "\n"
      R"({"id": 42, "question": "q2", "answers": []})"
      "\n");
  auto r = load_qa_file(path);
  EXPECT_EQ(r.info.format, Format::LitmQa);
  ASSERT_EQ(r.records.size(), 2u);
  const QaRecord& a = r.records[0];
  EXPECT_EQ(a.id, "litm-qa:1");
  EXPECT_EQ(a.source_format, "litm-qa");
  EXPECT_EQ(a.source_line, 1u);
  EXPECT_EQ(a.answers, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(a.ctxs.size(), 2u);
  EXPECT_EQ(a.ctxs[0].id, "doc7");
  EXPECT_EQ(a.ctxs[0].title, "T");
  EXPECT_EQ(a.ctxs[0].hasanswer, true);
  EXPECT_TRUE(a.ctxs[0].isgold);
  EXPECT_DOUBLE_EQ(*a.ctxs[0].score, 1.5);
  EXPECT_EQ(a.ctxs[1].id, "litm-qa:1/1");
  EXPECT_EQ(a.ctxs[1].title, "");
  EXPECT_EQ(a.ctxs[1].hasanswer, std::nullopt);
  EXPECT_FALSE(a.ctxs[1].score.has_value());
  EXPECT_EQ(r.records[1].id, "42");
  EXPECT_TRUE(r.records[1].ctxs.empty());
  EXPECT_FALSE(a.hotpot || a.kv || a.poison || a.choice);
}

TEST(Datasets, NqOpenIdsAreFormatAndLine) {
  auto r = load_qa_file(write("nq.jsonl",
                              "{\"question\": \"q\", \"answer\": [\"x\"]}\n\n"
                              "{\"question\": \"r\", \"answer\": [\"y\", \"z\"]}\n"));
  EXPECT_EQ(r.info.format, Format::NqOpen);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[1].id, "nq-open:3");
  EXPECT_EQ(r.records[1].answers, (std::vector<std::string>{"y", "z"}));
}

TEST(Datasets, FlashRag) {
  auto r = load_qa_file(write(
      "flashrag.jsonl",
      R"({"id": "test_0", "question": "who wrote x?", "golden_answers": ["Ann", "Ann B."], "metadata": {"src": "nq"}})"
      "\n"
      R"({"id": "test_1", "question": "when?", "golden_answers": ["1999"]})"
      "\n"));
  EXPECT_EQ(r.info.format, Format::FlashRag);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[0].id, "test_0");
  EXPECT_EQ(r.records[0].question, "who wrote x?");
  EXPECT_EQ(r.records[0].answers, (std::vector<std::string>{"Ann", "Ann B."}));
  EXPECT_EQ(r.records[1].answers, (std::vector<std::string>{"1999"}));
  DataError e = load_error(
      write("flashrag_bad.jsonl", R"({"id": "t", "question": "q", "golden_answers": ["a", 3]})"));
  EXPECT_EQ(e.reason(), "field 'golden_answers[1]': expected string, got number");
}

const char* kLongBench =
    R"({"_id": "66f36490821e116aacb2cc22", "domain": "Single-Document QA", "sub_domain": "Financial",)"
    R"( "difficulty": "easy", "length": "short", "question": "Which is true?", "choice_A": "one",)"
    R"( "choice_B": "two", "choice_C": "three", "choice_D": "four", "answer": "C", "context": "A long document."})";

TEST(Datasets, LongBenchV2) {
  auto r = load_qa_file(write("lb.jsonl", std::string(kLongBench) + "\n"));
  EXPECT_EQ(r.info.format, Format::LongBenchV2);
  ASSERT_EQ(r.records.size(), 1u);
  const QaRecord& q = r.records[0];
  EXPECT_EQ(q.id, "66f36490821e116aacb2cc22");
  ASSERT_TRUE(q.choice);
  EXPECT_EQ(q.choice->choices[0], "one");
  EXPECT_EQ(q.choice->choices[3], "four");
  EXPECT_EQ(q.choice->answer, 'C');
  EXPECT_EQ(q.choice->answer_index, 2);
  EXPECT_EQ(q.choice->difficulty, "easy");
  EXPECT_EQ(q.choice->length, "short");
  EXPECT_EQ(q.choice->domain, "Single-Document QA");
  EXPECT_EQ(q.answers, (std::vector<std::string>{"C"}));
  ASSERT_EQ(q.ctxs.size(), 1u);
  EXPECT_EQ(q.ctxs[0].text, "A long document.");

  std::string bad = kLongBench;
  bad.replace(bad.find("\"answer\": \"C\""), 13, "\"answer\": \"E\"");
  EXPECT_EQ(load_error(write("lb_bad.jsonl", bad)).reason(),
            "field 'answer': expected one of \"A\", \"B\", \"C\", \"D\", got \"E\"");
  std::string missing = kLongBench;
  const std::string field = " \"difficulty\": \"easy\",";
  missing.replace(missing.find(field), field.size(), "");
  EXPECT_EQ(load_error(write("lb_missing.jsonl", missing)).reason(), "missing field 'difficulty'");
}

TEST(Datasets, HotpotQaBothSchemas) {
  std::string hf =
      R"({"id": "h1", "question": "q?", "answer": "Tulsa", "type": "bridge", "level": "hard",)"
      R"( "supporting_facts": {"title": ["B", "Z"], "sent_id": [1, 0]},)"
      R"( "context": {"title": ["A", "B"], "sentences": [["A0."], ["B0.", " B1."]]}})";
  std::string orig =
      R"({"_id": "h2", "question": "q?", "answer": "yes", "type": "comparison",)"
      R"( "supporting_facts": [["A", 0], ["B", 5]], "context": [["A", ["x", " y"]], ["B", ["z"]]]})";
  auto r = load_qa_file(write("hotpot.jsonl", hf + "\n" + orig + "\n"));
  EXPECT_EQ(r.info.format, Format::HotpotQa);
  ASSERT_EQ(r.records.size(), 2u);
  const QaRecord& a = r.records[0];
  EXPECT_EQ(a.id, "h1");
  EXPECT_EQ(a.answers, (std::vector<std::string>{"Tulsa"}));
  ASSERT_EQ(a.ctxs.size(), 2u);
  EXPECT_EQ(a.ctxs[1].text, "B0. B1.");
  EXPECT_EQ(a.ctxs[1].sentence_offsets, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(a.ctxs[1].text.substr(a.ctxs[1].sentence_offsets[1]), " B1.");
  EXPECT_FALSE(a.ctxs[0].isgold);
  EXPECT_TRUE(a.ctxs[1].isgold);
  EXPECT_EQ(a.ctxs[1].id, "h1/1");
  ASSERT_TRUE(a.hotpot);
  EXPECT_EQ(a.hotpot->type, "bridge");
  EXPECT_EQ(a.hotpot->level, "hard");
  ASSERT_EQ(a.hotpot->supporting_facts.size(), 2u);
  EXPECT_EQ(a.hotpot->supporting_facts[0].context_index, 1);
  EXPECT_TRUE(a.hotpot->supporting_facts[0].sentence_ok);
  EXPECT_EQ(a.hotpot->supporting_facts[1].title, "Z");  // no paragraph titled Z: kept, flagged
  EXPECT_EQ(a.hotpot->supporting_facts[1].context_index, -1);
  EXPECT_FALSE(a.hotpot->supporting_facts[1].sentence_ok);
  const QaRecord& b = r.records[1];
  EXPECT_EQ(b.id, "h2");
  EXPECT_EQ(b.ctxs[0].text, "x y");
  EXPECT_EQ(b.hotpot->level, "");
  EXPECT_EQ(b.hotpot->supporting_facts[1].context_index, 1);
  EXPECT_FALSE(b.hotpot->supporting_facts[1].sentence_ok);  // sent_id 5 of a 1-sentence paragraph

  std::string mismatch = hf;
  mismatch.replace(mismatch.find("[1, 0]"), 6, "[1]");
  EXPECT_EQ(load_error(write("hp_bad.jsonl", mismatch)).reason(),
            "field 'supporting_facts': 2 titles but 1 sent_ids");
  // A sentence index beyond int is an error naming the field, never a truncated index.
  std::string huge = hf;
  huge.replace(huge.find("[1, 0]"), 6, "[1, 4294967296]");
  DataError e = load_error(write("hp_huge.jsonl", huge));
  EXPECT_EQ(e.reason(),
            "field 'supporting_facts.sent_id[1]': 4294967296 is out of range for an int");
  EXPECT_EQ(e.line(), 1u);
  std::string huge_orig = orig;
  huge_orig.replace(huge_orig.find("[\"B\", 5]"), 8, "[\"B\", -2147483649]");
  EXPECT_EQ(load_error(write("hp_huge2.jsonl", huge_orig)).reason(),
            "field 'supporting_facts[1][1]': -2147483649 is out of range for an int");
}

TEST(Datasets, KvRetrieval) {
  std::string ok =
      R"({"ordered_kv_records": [["k1", "v1"], ["k2", "v2"], ["k3", "v3"]], "key": "k2", "value": "v2"})";
  auto r = load_qa_file(write("kv.jsonl", ok + "\n"));
  EXPECT_EQ(r.info.format, Format::LitmKv);
  ASSERT_EQ(r.records.size(), 1u);
  const QaRecord& q = r.records[0];
  EXPECT_EQ(q.id, "litm-kv:1");
  EXPECT_EQ(q.question, "k2");
  EXPECT_EQ(q.answers, (std::vector<std::string>{"v2"}));
  ASSERT_TRUE(q.kv);
  EXPECT_EQ(q.kv->gold_index, 1u);
  EXPECT_EQ(q.kv->records[2].second, "v3");
  EXPECT_EQ(
      load_error(write("kv_nokey.jsonl",
                       R"({"ordered_kv_records": [["k1", "v1"]], "key": "k9", "value": "v9"})"))
          .reason(),
      "key \"k9\" is not among ordered_kv_records");
  EXPECT_EQ(
      load_error(write("kv_val.jsonl",
                       R"({"ordered_kv_records": [["k1", "v1"]], "key": "k1", "value": "v9"})"))
          .reason(),
      "ordered_kv_records[0] maps key \"k1\" to \"v1\", not to value \"v9\"");
  EXPECT_EQ(load_error(write("kv_pair.jsonl",
                             R"({"ordered_kv_records": [["k1"]], "key": "k1", "value": "v1"})"))
                .reason(),
            "field 'ordered_kv_records[0]': expected [key, value] pair, got array");
}

TEST(Datasets, PoisonedRagKeyedDocumentIdsFromKeys) {
  std::string doc =
      "{\n"
      "  \"q1\": {\"question\": \"who?\", \"correct answer\": \"Ann\", \"incorrect answer\": "
      "\"Bob\",\n"
      "          \"adv_texts\": [\"Bob did it.\", \"It was Bob.\"]},\n"
      "  \"q2\": {\"id\": \"own\", \"question\": \"when?\", \"correct answer\": \"1990\",\n"
      "          \"incorrect answer\": \"1980\", \"adv_texts\": []}\n"
      "}\n";
  auto r = load_qa_file(write("poison.json", doc));
  EXPECT_EQ(r.info.format, Format::PoisonedRag);
  EXPECT_EQ(r.info.layout, JsonLayout::Object);
  ASSERT_EQ(r.records.size(), 2u);
  const QaRecord& a = r.records[0];
  EXPECT_EQ(a.id, "q1");
  EXPECT_EQ(a.source_line, 2u);
  EXPECT_EQ(a.answers, (std::vector<std::string>{"Ann"}));
  ASSERT_TRUE(a.poison);
  EXPECT_EQ(a.poison->incorrect_answer, "Bob");
  ASSERT_EQ(a.ctxs.size(), 2u);
  EXPECT_EQ(a.ctxs[1].text, "It was Bob.");
  EXPECT_TRUE(a.ctxs[1].adversarial);
  EXPECT_FALSE(a.ctxs[1].isgold);
  EXPECT_EQ(a.ctxs[1].id, "q1/1");
  EXPECT_EQ(r.records[1].id, "own");
  EXPECT_EQ(r.records[1].source_line, 4u);
}

TEST(Datasets, WrongTypesAndMissingFieldsNameFileLineAndField) {
  std::string path = write("types.jsonl",
                           "{\"question\": \"q\", \"answers\": [\"a\"]}\n"
                           "{\"question\": \"q\", \"answers\": \"a\"}\n"
                           "{\"question\": \"q\", \"answers\": [\"a\"], \"ctxs\": [{\"text\": "
                           "\"t\"}, {\"text\": null}]}\n"
                           "{\"answers\": [\"a\"]}\n"
                           "{\"question\": 7, \"answers\": [\"a\"]}\n"
                           "{\"question\": \"q\", \"answers\": [\"a\"], \"ctxs\": [{\"text\": "
                           "\"t\", \"isgold\": \"yes\"}]}\n"
                           "{\"question\": \"q\", \"answers\": [\"a\"], \"ctxs\": [{\"text\": "
                           "\"t\", \"score\": \"high\"}]}\n"
                           "{\"question\": \"q\", \"answers\": [\"b\"]}\n");
  DataError e = load_error(path);
  EXPECT_EQ(std::string(e.what()),
            path + ":2: field 'answers': expected array of strings, got string");
  LoadOptions o;
  o.read.skip_bad = true;
  auto r = load_qa_file(path, o);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.records[1].answers[0], "b");
  EXPECT_EQ(r.records[1].source_line, 8u);
  EXPECT_EQ(r.info.stats.rows_ok, 2u);
  EXPECT_EQ(r.info.stats.rows_bad, 6u);
  const auto& bad = r.info.stats.first_bad;
  ASSERT_EQ(bad.size(), 6u);
  EXPECT_EQ(bad[0].line, 2u);
  EXPECT_EQ(bad[1].line, 3u);
  EXPECT_EQ(bad[1].reason, "field 'ctxs[1].text': expected string, got null");
  EXPECT_EQ(bad[2].reason, "missing field 'question'");
  EXPECT_EQ(bad[3].reason, "field 'question': expected string, got number");
  EXPECT_EQ(bad[4].reason, "field 'ctxs[0].isgold': expected boolean, got string");
  EXPECT_EQ(bad[5].reason, "field 'ctxs[0].score': expected a number, got string \"high\"");
}

// Issue 40, item 12: a blank gold answer normalises to "" and would grade every output correct.
TEST(Datasets, BlankAnswersAreRowErrors) {
  std::string path = write("blank.jsonl",
                           "{\"question\": \"q\", \"answers\": [\"a\", \" \"]}\n"
                           "{\"question\": \"q\", \"answers\": [\"\"]}\n");
  LoadOptions o;
  o.read.skip_bad = true;
  auto r = load_qa_file(path, o);
  EXPECT_EQ(r.records.size(), 0u);
  const auto& bad = r.info.stats.first_bad;
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].reason, "field 'answers[1]': a blank answer would grade every output correct");
  EXPECT_EQ(bad[1].reason, "field 'answers[0]': a blank answer would grade every output correct");
}

TEST(Datasets, ForcedFormatAndUndetectableRows) {
  std::string litm = write("litm2.jsonl", "{\"question\": \"q\", \"answers\": [\"a\"]}\n");
  EXPECT_EQ(load_error(litm, Format::NqOpen).reason(), "missing field 'answer'");
  DataError e = load_error(write("other.jsonl", "{\"foo\": 1, \"bar\": 2}\n"));
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.reason().rfind("cannot detect the data format: fields {bar, foo} match none of", 0),
            0u)
      << e.reason();
}

TEST(Datasets, DetectionUsesTheFirstValidRowAndLimitStops) {
  std::string path = write("skipfirst.jsonl",
                           "{\"question\": \"q\", \"answer\": [\n"
                           "{\"question\": \"q1\", \"answer\": [\"a\"]}\n"
                           "{\"question\": \"q2\", \"answer\": [\"b\"]}\n"
                           "{\"question\": \"q3\", \"answer\": [\"c\"]}\n");
  LoadOptions o;
  o.read.skip_bad = true;
  auto r = load_qa_file(path, o);
  EXPECT_EQ(r.info.format, Format::NqOpen);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].id, "nq-open:2");
  EXPECT_EQ(r.info.stats.rows_bad, 1u);
  o.limit = 2;
  auto l = load_qa_file(path, o);
  ASSERT_EQ(l.records.size(), 2u);
  EXPECT_EQ(l.records[1].question, "q2");
}

}  // namespace

namespace {

// Deterministic mutation smoke test: damaged files of every layout either load or fail with a
// DataError naming the file; nothing else escapes (ASan runs this too).
TEST(Datasets, MutatedInputsOnlyEverRaiseDataError) {
  const std::string seeds[] = {
      "{\"question\": \"q\", \"answers\": [\"a\"], \"ctxs\": [{\"title\": \"t\", \"text\": \"x\", "
      "\"hasanswer\": true, \"isgold\": true}]}\n{\"question\": \"r\", \"answers\": []}\n",
      "{\n \"k\": {\"question\": \"q\", \"correct answer\": \"a\", \"incorrect answer\": \"b\", "
      "\"adv_texts\": [\"x\"]}\n}\n",
      "[{\"id\": \"h\", \"question\": \"q\", \"answer\": \"a\", \"supporting_facts\": {\"title\": "
      "[\"A\"], \"sent_id\": [0]}, \"context\": {\"title\": [\"A\"], \"sentences\": [[\"s\"]]}}]",
      "{\"ordered_kv_records\": [[\"k\", \"v\"]], \"key\": \"k\", \"value\": \"v\"}\n",
  };
  uint32_t x = 2024;
  auto rnd = [&] {
    x = x * 1664525u + 1013904223u;
    return x >> 8;
  };
  const char alphabet[] = "{}[]\",:\\ \n\x80\xFFtrue0";
  auto dir = temp_dir("mutate");
  int n = 0, errors = 0;
  for (const std::string& seed : seeds) {
    for (int k = 0; k < 150; ++k, ++n) {
      std::string s = seed;
      int edits = 1 + static_cast<int>(rnd() % 3);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t at = rnd() % s.size();
        switch (rnd() % 3) {
          case 0:
            s[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
            break;
          case 1:
            s.erase(at, 1 + rnd() % 4);
            break;
          default:
            s.resize(at);
            break;
        }
      }
      std::string path = (dir / ("m" + std::to_string(n) + ".json")).string();
      write_file(path, s);
      for (bool skip : {false, true}) {
        LoadOptions o;
        o.read.skip_bad = skip;
        try {
          auto r = load_qa_file(path, o);
          EXPECT_EQ(r.records.size(), r.info.stats.rows_ok);
        } catch (const DataError& e) {
          ++errors;
          EXPECT_EQ(e.file(), path);
          EXPECT_FALSE(e.reason().empty());
        }
      }
    }
  }
  EXPECT_GT(errors, 100);  // the mutations do break files
}

}  // namespace

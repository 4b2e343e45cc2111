// Every file in ../shared/data/{lost-in-the-middle,nq-open,hotpotqa-distractor,poisonedrag} loads,
// with the row counts of MANIFEST.md and field values of specific rows checked against the files
// (values read independently with Python's json module).
#include <gtest/gtest.h>

#include <string>

#include "eval/datasets.h"
#include "support/test_support.h"

namespace {

using namespace ragform::eval;

LoadResult load(const std::filesystem::path& p) { return load_qa_file(p.string()); }

size_t total_answers(const LoadResult& r) {
  size_t n = 0;
  for (auto& q : r.records) n += q.answers.size();
  return n;
}

TEST(DatasetsFixture, LostInTheMiddleNqOpenOracle) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto r = load(path);
  EXPECT_EQ(r.info.format, Format::LitmQa);
  EXPECT_TRUE(r.info.gzip);
  EXPECT_EQ(r.info.layout, JsonLayout::Lines);
  ASSERT_EQ(r.records.size(), 2655u);
  EXPECT_EQ(r.info.stats.rows_bad, 0u);
  const QaRecord& a = r.records[0];
  EXPECT_EQ(a.id, "litm-qa:1");
  EXPECT_EQ(a.question, "who got the first nobel prize in physics");
  EXPECT_EQ(a.answers, (std::vector<std::string>{"Wilhelm Conrad R\xC3\xB6ntgen"}));
  ASSERT_EQ(a.ctxs.size(), 1u);
  EXPECT_EQ(a.ctxs[0].title, "List of Nobel laureates in Physics");
  EXPECT_EQ(a.ctxs[0].text.rfind("The first Nobel Prize in Physics was awarded in 1901", 0), 0u);
  EXPECT_EQ(a.ctxs[0].hasanswer, true);
  EXPECT_TRUE(a.ctxs[0].isgold);
  EXPECT_EQ(r.records[1].answers, (std::vector<std::string>{"May 18, 2018"}));
  EXPECT_EQ(r.records[1].ctxs[0].title, "Deadpool 2");
  const QaRecord& last = r.records[2654];
  EXPECT_EQ(last.question, "when did computer become widespread in homes and schools");
  EXPECT_EQ(last.answers, (std::vector<std::string>{"1980s"}));
  EXPECT_EQ(last.ctxs[0].title, "Home computer");
  EXPECT_EQ(last.source_line, 2655u);
  EXPECT_EQ(total_answers(r), 4654u);
  EXPECT_EQ(r.records[1080].answers.size(), 13u);
  for (auto& q : r.records) {
    ASSERT_EQ(q.ctxs.size(), 1u) << q.id;
    EXPECT_TRUE(q.ctxs[0].isgold && q.ctxs[0].hasanswer.value_or(false)) << q.id;
  }
}

TEST(DatasetsFixture, LostInTheMiddleKvRetrieval) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/kv-retrieval-75_keys.jsonl.gz");
  auto r = load(path);
  EXPECT_EQ(r.info.format, Format::LitmKv);
  ASSERT_EQ(r.records.size(), 500u);
  const QaRecord& a = r.records[0];
  ASSERT_TRUE(a.kv);
  EXPECT_EQ(a.kv->key, "2a8d601d-1d69-4e64-9f90-8ad825a74195");
  EXPECT_EQ(a.kv->value, "bb3ba2a5-7de8-434b-a86e-a88bb9fa7289");
  EXPECT_EQ(a.question, a.kv->key);
  EXPECT_EQ(a.answers, (std::vector<std::string>{a.kv->value}));
  EXPECT_EQ(a.kv->gold_index, 18u);
  EXPECT_EQ(a.kv->records[0].first, "a54e2eed-e625-4570-9f74-3624e77d6684");
  EXPECT_EQ(a.kv->records[0].second, "d1ff29be-4e2a-4208-a182-0cea716be3d4");
  const QaRecord& last = r.records[499];
  EXPECT_EQ(last.kv->gold_index, 44u);
  EXPECT_EQ(last.kv->records[44].first, "ee17cc77-6342-44df-ad24-263c24c18def");
  EXPECT_EQ(last.kv->records[44].second, "41c410e1-776c-4295-b15e-f28949052b7e");
  for (auto& q : r.records) EXPECT_EQ(q.kv->records.size(), 75u) << q.id;
}

TEST(DatasetsFixture, NqOpenDev) {
  REQUIRE_SHARED(path, "data/nq-open/NQ-open.dev.jsonl");
  auto r = load(path);
  EXPECT_EQ(r.info.format, Format::NqOpen);
  EXPECT_FALSE(r.info.gzip);
  ASSERT_EQ(r.records.size(), 3610u);
  EXPECT_EQ(r.records[0].question, "when was the last time anyone was on the moon");
  EXPECT_EQ(r.records[0].answers,
            (std::vector<std::string>{"14 December 1972 UTC", "December 1972"}));
  EXPECT_EQ(r.records[1].answers, (std::vector<std::string>{"Bobby Scott", "Bob Russell"}));
  EXPECT_EQ(r.records[3609].id, "nq-open:3610");
  EXPECT_EQ(r.records[3609].question, "what is the meaning of the name comanche");
  EXPECT_EQ(r.records[3609].answers, (std::vector<std::string>{"enemy"}));
  EXPECT_EQ(r.records[2300].answers.size(), 23u);
  EXPECT_EQ(total_answers(r), 6490u);
}

struct HotpotTotals {
  size_t contexts = 0, facts = 0, sentences = 0, bridge = 0, unresolved = 0;
};
HotpotTotals totals(const LoadResult& r) {
  HotpotTotals t;
  for (auto& q : r.records) {
    t.contexts += q.ctxs.size();
    t.facts += q.hotpot->supporting_facts.size();
    for (auto& c : q.ctxs) t.sentences += c.sentences.size();
    for (auto& f : q.hotpot->supporting_facts) t.unresolved += !f.sentence_ok;
    t.bridge += q.hotpot->type == "bridge";
  }
  return t;
}

TEST(DatasetsFixture, HotpotQaDistractorDev) {
  REQUIRE_SHARED(path, "data/hotpotqa-distractor/dev.jsonl");
  auto r = load(path);
  EXPECT_EQ(r.info.format, Format::HotpotQa);
  ASSERT_EQ(r.records.size(), 300u);
  const QaRecord& a = r.records[0];
  EXPECT_EQ(a.id, "5a8ce55f554299441c6b9f62");
  EXPECT_EQ(a.question,
            "The band who released the debut album \"Tinted Windows\" had their first performance "
            "in what city?");
  EXPECT_EQ(a.answers, (std::vector<std::string>{"Tulsa"}));
  ASSERT_TRUE(a.hotpot);
  EXPECT_EQ(a.hotpot->type, "bridge");
  EXPECT_EQ(a.hotpot->level, "hard");
  ASSERT_EQ(a.ctxs.size(), 10u);
  const size_t sentences[10] = {3, 5, 9, 3, 8, 6, 4, 4, 5, 7};
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(a.ctxs[i].sentences.size(), sentences[i]) << i;
  EXPECT_EQ(a.ctxs[0].title, "Act of Congress (music group)");
  EXPECT_EQ(a.ctxs[9].title, "Tinted Windows (band)");
  ASSERT_EQ(a.hotpot->supporting_facts.size(), 2u);
  const SupportingFact& f = a.hotpot->supporting_facts[1];
  EXPECT_EQ(f.title, "Tinted Windows (band)");
  EXPECT_EQ(f.sent_id, 3);
  EXPECT_EQ(f.context_index, 9);
  EXPECT_TRUE(f.sentence_ok);
  // The evidence sentence, located through the offsets.
  const Context& c = a.ctxs[9];
  EXPECT_EQ(c.text.substr(c.sentence_offsets[3], c.sentences[3].size()),
            " The first performance by the band was on March 18, 2009 at Cain's Ballroom in Tulsa, "
            "Oklahoma in a small show at the side-stage.");
  EXPECT_EQ(c.text.rfind(
                "Tinted Windows is an American rock supergroup formed by guitarist James Iha", 0),
            0u);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(a.ctxs[i].isgold, i == 3 || i == 9) << i;
  EXPECT_EQ(r.records[299].id, "5ab8b02d5542991b5579efdb");
  EXPECT_EQ(r.records[299].answers[0], "no");
  EXPECT_EQ(r.records[299].hotpot->type, "comparison");
  // A few rows have fewer than 10 paragraphs: row 84 has only its two gold ones.
  ASSERT_EQ(r.records[84].ctxs.size(), 2u);
  EXPECT_EQ(r.records[84].ctxs[0].title, "Dictyosperma");
  EXPECT_EQ(r.records[84].ctxs[1].title, "Huernia");
  HotpotTotals t = totals(r);
  EXPECT_EQ(t.contexts, 2987u);
  EXPECT_EQ(t.facts, 735u);
  EXPECT_EQ(t.sentences, 12364u);
  EXPECT_EQ(t.bridge, 230u);
  EXPECT_EQ(t.unresolved, 0u);
}

TEST(DatasetsFixture, HotpotQaDistractorTrain) {
  REQUIRE_SHARED(path, "data/hotpotqa-distractor/train.jsonl");
  auto r = load(path);
  EXPECT_EQ(r.info.format, Format::HotpotQa);
  ASSERT_EQ(r.records.size(), 300u);
  EXPECT_EQ(r.records[0].id, "5abf63f15542997ec76fd3ea");
  EXPECT_EQ(r.records[0].answers[0], "October 1922");
  EXPECT_EQ(r.records[299].id, "5abe364e5542993f32c2a08e");
  EXPECT_EQ(r.records[299].answers[0], "Teen Titans Go!");
  HotpotTotals t = totals(r);
  EXPECT_EQ(t.contexts, 2980u);
  EXPECT_EQ(t.facts, 740u);
  EXPECT_EQ(t.sentences, 12158u);
  EXPECT_EQ(t.bridge, 238u);
}

TEST(DatasetsFixture, PoisonedRagNq) {
  REQUIRE_SHARED(path, "data/poisonedrag/nq.json");
  auto r = load(path);
  EXPECT_EQ(r.info.format, Format::PoisonedRag);
  EXPECT_EQ(r.info.layout, JsonLayout::Object);
  ASSERT_EQ(r.records.size(), 100u);
  const QaRecord& a = r.records[0];
  EXPECT_EQ(a.id, "test1");
  EXPECT_EQ(a.source_line, 2u);
  EXPECT_EQ(a.question, "how many episodes are in chicago fire season 4");
  EXPECT_EQ(a.answers, (std::vector<std::string>{"23"}));
  ASSERT_TRUE(a.poison);
  EXPECT_EQ(a.poison->incorrect_answer, "24");
  ASSERT_EQ(a.ctxs.size(), 5u);
  EXPECT_EQ(a.ctxs[0].text.rfind(
                "Chicago Fire, a popular television drama, released its fourth season", 0),
            0u);
  for (auto& c : a.ctxs) EXPECT_TRUE(c.adversarial && !c.isgold);
  EXPECT_EQ(r.records[1].id, "test11");
  EXPECT_EQ(r.records[1].source_line, 15u);
  EXPECT_EQ(r.records[99].id, "test466");
  EXPECT_EQ(r.records[99].answers[0], "Frankie Valli");
  EXPECT_EQ(r.records[99].poison->incorrect_answer, "Elvis Presley");
}

TEST(DatasetsFixture, PoisonedRagHotpotOneLineDocument) {
  REQUIRE_SHARED(path, "data/poisonedrag/hotpotqa.json");
  auto r = load(path);
  EXPECT_EQ(r.info.format, Format::PoisonedRag);
  EXPECT_EQ(r.info.layout, JsonLayout::Object);
  ASSERT_EQ(r.records.size(), 100u);
  EXPECT_EQ(r.records[0].id, "5adbf0a255429947ff17385a");
  EXPECT_EQ(r.records[0].question,
            "Are the Laleli Mosque and Esma Sultan Mansion located in the same neighborhood?");
  EXPECT_EQ(r.records[0].answers[0], "no");
  EXPECT_EQ(r.records[0].poison->incorrect_answer, "yes");
  EXPECT_EQ(r.records[99].id, "5ac2659b55429963665199a1");
  EXPECT_EQ(r.records[99].answers[0], "25");
  EXPECT_EQ(r.records[99].poison->incorrect_answer, "30");
  for (auto& q : r.records) EXPECT_EQ(q.ctxs.size(), 5u) << q.id;
}

TEST(DatasetsFixture, StreamingStopsAtTheLimit) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  LoadOptions o;
  o.limit = 3;
  std::vector<std::string> qs;
  auto info = for_each_qa_record(path.string(), o,
                                 [&](QaRecord& q, const JsonRow&) { qs.push_back(q.question); });
  ASSERT_EQ(qs.size(), 3u);
  EXPECT_EQ(qs[1], "when is the next deadpool movie being released");
  EXPECT_EQ(info.stats.rows_ok, 3u);
}

}  // namespace

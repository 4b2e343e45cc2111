// SpotlightRAG selection and annotation: category tagger rules, <Rel> prefix format, prompt
// layout, and the `spotlight select --json` output contract on a hand-written HotpotQA record.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "pipelines/spotlight/evaluate.h"
#include "pipelines/spotlight/select.h"
#include "support/test_support.h"

namespace ragform::spotlight {
namespace {

TEST(SpotlightTagger, Rules) {
  EXPECT_EQ(categorize("The match was cancelled because of rain."), "causal");
  EXPECT_EQ(categorize("Prices rose due to the drought in 1998."),
            "causal");  // causal before temporal
  EXPECT_EQ(categorize("He has lived there since he was young."), "causal");
  EXPECT_EQ(categorize("Tulsa is a city in Oklahoma, founded in 1898."), "definition");
  EXPECT_EQ(categorize("The band was also called The Windows."), "definition");
  EXPECT_EQ(categorize("She has lived there since 1990."), "temporal");
  EXPECT_EQ(categorize("It opened in March."), "temporal");
  EXPECT_EQ(categorize("It opened in May."), "temporal");
  EXPECT_EQ(categorize("it may open later"), "other");  // the modal verb is not the month
  EXPECT_EQ(categorize("the 1980s were loud"), "temporal");
  EXPECT_EQ(categorize("It seats 4500 people."),
            "numeric");  // 4500 is not a year in 1000..2099? it is not
  EXPECT_EQ(categorize("It seats 2500 people."), "numeric");
  EXPECT_EQ(categorize("About three million people live there."), "numeric");
  EXPECT_EQ(categorize("It was founded by John Smith."), "entity");
  EXPECT_EQ(categorize("Nothing much happened here."), "other");
}

TEST(SpotlightAnnotate, RelTokenAndPrompt) {
  EXPECT_EQ(rel_token(0.8249), "<Rel0.82>");
  EXPECT_EQ(rel_token(0.825001), "<Rel0.83>");
  EXPECT_EQ(rel_token(1.7), "<Rel1.00>");
  EXPECT_EQ(rel_token(-0.1), "<Rel0.00>");
  EXPECT_EQ(build_prompt("Who?", {"<Rel1.00> <entity> A B.", "<Rel0.00> <other> c."}),
            "Question: Who?\nEvidence:\n<Rel1.00> <entity> A B.\n<Rel0.00> <other> c.\nAnswer:");
}

TEST(SpotlightAnnotate, SelectOrdersAndAnnotates) {
  std::vector<Document> docs{{"d0", "T0", "x y. Mary Ann went.", {{0, 4}, {5, 19}}},
                             {"d1", "T1", " In 1990 z.", {{0, 11}}}};
  ScoredQuestion sq;
  sq.sentences = {{0, 0, 0.1, 0.0, {}}, {0, 1, 0.5, 1.0, {}}, {1, 0, 0.3, 0.5, {}}};
  Selection s = select_and_annotate("Q?", docs, sq, {2, Order::Score, true});
  ASSERT_EQ(s.selected.size(), 2u);
  EXPECT_EQ(s.selected[0].text, "Mary Ann went.");
  EXPECT_EQ(s.selected[0].prefix, "<Rel1.00>");
  EXPECT_EQ(s.selected[0].category, "entity");
  EXPECT_EQ(s.selected[1].text, "In 1990 z.");  // leading space of the stored sentence trimmed
  EXPECT_EQ(s.selected[1].category, "temporal");
  EXPECT_EQ(s.prompt,
            "Question: Q?\nEvidence:\n<Rel1.00> <entity> Mary Ann went.\n<Rel0.50> <temporal> In "
            "1990 z.\nAnswer:");
  // Document order puts doc 0 first anyway; drop special tokens.
  s = select_and_annotate("Q?", docs, sq, {3, Order::Document, false});
  EXPECT_EQ(s.prompt, "Question: Q?\nEvidence:\nx y.\nMary Ann went.\nIn 1990 z.\nAnswer:");
}

// Pass 23: an empty or blank sentence (HotpotQA has some) is never selected, however it scores:
// it was annotated with an empty evidence line. The next sentences fill its place.
TEST(SpotlightAnnotate, BlankSentencesAreNotSelected) {
  std::vector<Document> docs{{"d0", "T0", "A b.   C d.", {{0, 4}, {4, 7}, {7, 11}}}};
  ScoredQuestion sq;
  sq.sentences = {{0, 0, 0.2, 0.5, {}}, {0, 1, 0.9, 1.0, {}}, {0, 2, 0.1, 0.0, {}}};
  const Selection s = select_and_annotate("Q?", docs, sq, {2, Order::Score, true});
  ASSERT_EQ(s.selected.size(), 2u);
  EXPECT_EQ(s.selected[0].text, "A b.");
  EXPECT_EQ(s.selected[1].text, "C d.");
  EXPECT_EQ(s.prompt.find(" \n"), std::string::npos) << s.prompt;
  EXPECT_THROW(select_and_annotate("Q?", docs, sq, {0, Order::Score, true}), UsageError);
}

TEST(SpotlightContextSweep, GoldPlusFirstDistractorsInFileOrder) {
  std::vector<Document> docs;
  for (int i = 0; i < 6; ++i) docs.push_back({"d" + std::to_string(i), "", "x.", {{0, 2}}});
  // Gold in documents 1 and 4; distractors in file order are 0, 2, 3, 5.
  std::vector<std::pair<int, int>> gold{{1, 0}, {4, 0}};
  ContextSubset c0 = with_distractors(docs, gold, 0);
  ASSERT_EQ(c0.docs.size(), 2u);
  EXPECT_EQ(c0.docs[0].id, "d1");
  EXPECT_EQ(c0.docs[1].id, "d4");
  EXPECT_EQ(c0.gold, (std::vector<std::pair<int, int>>{{0, 0}, {1, 0}}));
  ContextSubset c2 = with_distractors(docs, gold, 2);
  std::vector<std::string> ids;
  for (const auto& d : c2.docs) ids.push_back(d.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"d0", "d1", "d2", "d4"}));
  EXPECT_EQ(c2.gold, (std::vector<std::pair<int, int>>{{1, 0}, {3, 0}}));
  EXPECT_EQ(with_distractors(docs, gold, 8).docs.size(), 6u);  // all there are
  EXPECT_THROW(with_distractors(docs, gold, -1), Error);
  EXPECT_THROW(with_distractors(docs, {{6, 0}}, 1), Error);
}

TEST(SpotlightBaselines, Bm25LeadRandomRecall) {
  std::vector<Document> docs{{"d0", "", "cats purr. dogs bark loudly.", {{0, 10}, {11, 28}}},
                             {"d1", "", "fish swim. dogs dogs.", {{0, 10}, {11, 21}}}};
  Ranking lead = rank_lead(docs);
  EXPECT_EQ(lead, (Ranking{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_EQ(rank_lead_per_doc(docs), (Ranking{{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
  // BM25 for "dogs": df = 2 of N = 4 -> idf = ln(1 + 2.5/2.5) = ln 2; avgdl = 2.25;
  // (1,1): tf 2, dl 2 -> 2*2.2/(2 + 1.2*(.25 + .75*2/2.25)) ; (0,1): tf 1, dl 3 -> lower.
  Ranking b = rank_bm25("dogs?", docs);
  EXPECT_EQ(b[0], (std::pair<int, int>{1, 1}));
  EXPECT_EQ(b[1], (std::pair<int, int>{0, 1}));
  Ranking r1 = rank_random(docs, 5), r2 = rank_random(docs, 5);
  EXPECT_EQ(r1, r2);
  EXPECT_EQ(r1.size(), 4u);
  EXPECT_DOUBLE_EQ(recall_at(lead, {{0, 1}, {1, 1}}, 2), 0.5);
  EXPECT_DOUBLE_EQ(recall_at(b, {{0, 1}, {1, 1}}, 2), 1.0);
  EXPECT_EQ(position_bin(0, 1), 0);
  EXPECT_EQ(position_bin(4, 5), 4);
  EXPECT_EQ(position_bin(1, 5), 1);  // x = 0.25
}

TEST(SpotlightCli, SelectJsonContract) {
  auto dir = testing::temp_dir("spotlight_cli");
  testing::write_file(
      dir / "v.json",
      R"({"capital": [1, 0, 0, 0, 0], "city": [0.9, 0, 0, 0, 0.1], "is": [0, 1, 0, 0, 0],
    "the": [0, 0, 1, 0, 0], "of": [0, 0, 0, 1, 0], "a": [0, 0, 0.3, 0, 1], "river": [0, 0, 0, 0, 1],
    "what": [0, 0.5, 0.5, 0, 0]})");
  testing::write_file(
      dir / "q.jsonl",
      R"({"id": "q1", "question": "What is the capital of Freedonia?", "answer": "Fredville", "type": "bridge", "level": "easy",)"
      R"( "supporting_facts": {"title": ["Freedonia"], "sent_id": [1]},)"
      R"( "context": {"title": ["Freedonia", "Rivers"], "sentences": [["It is a river land.", " Its capital city is Fredville."], ["A river is a river.", " The river."]]}})"
      "\n");
  auto r = testing::run_ragform("spotlight select --input " + (dir / "q.jsonl").string() +
                                " --vectors " + (dir / "v.json").string() +
                                " -K 2 -k 1 --lambda 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["id"], "q1");
  ASSERT_EQ(j["selected"].size(), 2u);
  const auto& top = j["selected"][0];  // document order: Freedonia #0 then #1
  for (const char* f : {"title", "doc_id", "sent_id", "text", "R", "prefix", "category", "matches"})
    EXPECT_TRUE(top.contains(f)) << f;
  bool found = false;
  for (const auto& s : j["selected"]) {
    if (s["sent_id"] == 1 && s["title"] == "Freedonia") {
      found = true;
      EXPECT_EQ(s["text"], "Its capital city is Fredville.");
      EXPECT_DOUBLE_EQ(s["R"].get<double>(), 1.0);
      EXPECT_EQ(s["prefix"], "<Rel1.00>");
      // capital -> capital with cosine 1; Freedonia (OOV identity token) has no match here.
      bool cap = false;
      for (const auto& m : s["matches"])
        if (m["q"] == "capital") {
          cap = true;
          EXPECT_EQ(m["c"], "capital");
          EXPECT_NEAR(m["s"].get<double>(), 1.0, 1e-6);
        }
      EXPECT_TRUE(cap);
    }
  }
  EXPECT_TRUE(found) << r.out;
  EXPECT_NE(
      j["prompt"].get<std::string>().find("<Rel1.00> <entity> Its capital city is Fredville."),
      std::string::npos);
  // Bad input: a clear usage error.
  r = testing::run_ragform("spotlight select --input " + (dir / "q.jsonl").string() + " --json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--vectors"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ragform::spotlight

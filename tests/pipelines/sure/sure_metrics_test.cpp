// RR/WR/LR (SURE eq. 3) on hand-built outcomes, checked against hand computation; parsing helpers.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/metrics.h"
#include "pipelines/sure/perturb_llm.h"
#include "pipelines/sure/preserve.h"
#include "pipelines/sure/prompts.h"

using namespace ragform::sure;

namespace {
// An outcome of its own original (a new pair id each call).
Outcome o(const char* kind, const char* cat, Subset s, bool org, bool pert) {
  static int n = 0;
  return Outcome{"p" + std::to_string(n++), kind, cat, s, org, pert};
}
}  // namespace

TEST(SureMetrics, HandBuiltCase) {
  // 10 pairs of format/json: 4 correct->correct, 2 wrong->wrong, 3 correct->wrong, 1
  // wrong->correct.
  std::vector<Outcome> v;
  for (int i = 0; i < 4; ++i) v.push_back(o("format/json", "format", Subset::KG, true, true));
  for (int i = 0; i < 2; ++i) v.push_back(o("format/json", "format", Subset::UN, false, false));
  for (int i = 0; i < 3; ++i) v.push_back(o("format/json", "format", Subset::KG, true, false));
  v.push_back(o("format/json", "format", Subset::UG, false, true));
  Rates r = compute_rates(v);
  EXPECT_EQ(r.n, 10);
  EXPECT_DOUBLE_EQ(r.rr, 0.6);
  EXPECT_DOUBLE_EQ(r.lr, 0.3);
  EXPECT_DOUBLE_EQ(r.wr, 0.1);
  EXPECT_DOUBLE_EQ(r.org, 0.7);
  EXPECT_DOUBLE_EQ(r.acc, 0.5);
  EXPECT_DOUBLE_EQ(r.mcnemar_p, 0.625);  // 2 * P(X <= 1), X ~ Bin(4, 1/2) = 2 * 5/16
  ASSERT_TRUE(r.rr_ci_lo.has_value());
  EXPECT_LE(*r.rr_ci_lo, 0.6);
  EXPECT_GE(*r.rr_ci_hi, 0.6);

  v.push_back(o("logic/reverse", "logic", Subset::KN, true, true));
  auto rows = robustness_report(v);
  // overall all + K-G, K-N, U-G, U-N; paper's category format (golden; logic has no golden pair);
  // pooled category format all + K-G, U-G, U-N; logic all + K-N; perturbation format/json (4
  // rows); logic/reverse (2 rows).
  ASSERT_EQ(rows.size(), 5u + 1u + 4u + 2u + 4u + 2u);
  EXPECT_EQ(rows[0].subset, "all");
  EXPECT_EQ(rows[0].rates.n, 11);
  EXPECT_NEAR(rows[0].rates.rr, 7.0 / 11, 1e-12);
  EXPECT_EQ(rows[1].subset, "K-G");
  EXPECT_EQ(rows[1].rates.n, 7);
  EXPECT_NEAR(rows[1].rates.lr, 3.0 / 7, 1e-12);
  EXPECT_EQ(rows[1].to_json()["LR"].get<double>(), 3.0 / 7);
  Rates empty = compute_rates({});
  EXPECT_EQ(empty.n, 0);
}

TEST(SureMetrics, CategoryRobustnessIsTheMeanOfPerturbationRatesOnGoldenPairs) {
  // style/simple: 4 golden pairs, 2 robust (RR 1/2, LR 1/4, WR 1/4); style/complex: 1 golden
  // pair, robust (RR 1); plus 5 robust noise pairs of style/simple that the paper leaves out.
  std::vector<Outcome> v;
  v.push_back(o("style/simple", "style", Subset::KG, true, true));
  v.push_back(o("style/simple", "style", Subset::UG, false, false));
  v.push_back(o("style/simple", "style", Subset::KG, true, false));
  v.push_back(o("style/simple", "style", Subset::UG, false, true));
  v.push_back(o("style/complex", "style", Subset::KG, true, true));
  for (int i = 0; i < 5; ++i) v.push_back(o("style/simple", "style", Subset::KN, false, false));
  auto row = category_robustness(v, "style");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->scope, "category");
  EXPECT_EQ(row->subset, "golden");
  EXPECT_EQ(row->perturbations, 2);
  EXPECT_EQ(row->rates.n, 5);
  // Paper: (1/2 + 1) / 2 = 0.75. Pooling golden pairs would give 3/5 = 0.6; pooling every pair
  // (golden and noise) 8/10 = 0.8.
  EXPECT_DOUBLE_EQ(row->rates.rr, 0.75);
  EXPECT_DOUBLE_EQ(row->rates.lr, (0.25 + 0) / 2);
  EXPECT_DOUBLE_EQ(row->rates.wr, (0.25 + 0) / 2);
  EXPECT_DOUBLE_EQ(row->rates.org, (0.5 + 1) / 2);
  EXPECT_DOUBLE_EQ(row->rates.acc, (0.5 + 1) / 2);
  EXPECT_FALSE(row->rates.rr_ci_lo.has_value());
  EXPECT_EQ(row->to_json()["perturbations"], 2);
  EXPECT_FALSE(category_robustness(v, "logic").has_value());
  // The report carries both readings under their own names.
  auto rows = robustness_report(v);
  const ReportRow *paper = nullptr, *pooled = nullptr;
  for (const auto& r : rows) {
    if (r.scope == "category" && r.key == "style") paper = &r;
    if (r.scope == "category_pooled" && r.key == "style" && r.subset == "all") pooled = &r;
  }
  ASSERT_TRUE(paper && pooled);
  EXPECT_DOUBLE_EQ(paper->rates.rr, 0.75);
  EXPECT_DOUBLE_EQ(pooled->rates.rr, 0.8);
  EXPECT_FALSE(pooled->to_json().contains("perturbations"));
}

// Pass 23: a group that pools perturbations holds each original once per perturbation; Org and
// `originals` count each original once (reproduce's category Org had n = 8 for 2 originals, and a
// Wilson interval four times too narrow).
TEST(SureMetrics, OrgCountsEachOriginalOnce) {
  std::vector<Outcome> v;
  for (const char* kind : {"format/json", "format/yaml", "format/markdown", "format/html"}) {
    v.push_back(Outcome{"a#0", kind, "format", Subset::UG, false, false});
    v.push_back(Outcome{"b#0", kind, "format", Subset::UG, true, true});
  }
  v.push_back(Outcome{"c#0", "format/json", "format", Subset::UG, true, false});
  const Rates r = compute_rates(v);
  EXPECT_EQ(r.n, 9);
  EXPECT_EQ(r.originals, 3);
  EXPECT_EQ(r.originals_correct, 2);
  EXPECT_DOUBLE_EQ(r.org, 2.0 / 3);  // pooled pairs would say 5/9
  auto rows = robustness_report(v);
  for (const auto& row : rows)
    if (row.scope == "category_pooled" && row.subset == "U-G") {
      EXPECT_EQ(row.to_json()["originals"], 3);
      EXPECT_EQ(row.to_json()["n"], 9);
    }
  const auto paper = category_robustness(v, "format");
  ASSERT_TRUE(paper.has_value());
  EXPECT_EQ(paper->rates.originals, 3);
}

TEST(SureParsing, RankingNliAndRewrites) {
  std::string note;
  EXPECT_EQ(parse_ranking("3, 1, 2", 3, note), (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(note, "");
  EXPECT_EQ(parse_ranking("[3] then [3], 9", 3, note), (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(note, "partial ranking: 2 missing, 1 out of range, 1 repeated");
  EXPECT_EQ(parse_ranking("no idea", 2, note), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(note, "no ranking parsed: fallback to document order");
  EXPECT_EQ(parse_nli(" Entailment."), NliLabel::Entailment);
  EXPECT_EQ(parse_nli("neutral, not entailment"), NliLabel::Neutral);
  EXPECT_EQ(parse_nli("This is not entailment"), NliLabel::Neutral);
  EXPECT_EQ(parse_nli("Contradiction"), NliLabel::Contradiction);
  EXPECT_EQ(parse_nli("yes"), NliLabel::Unparsed);
  EXPECT_EQ(clean_rewrite("Here is the rewritten document:\n\"A b.\"\n"), "A b.");
  EXPECT_EQ(clean_rewrite("  plain text "), "plain text");
  EXPECT_EQ(fill("{a}-{b}-{x y}", {{"a", "{b}"}, {"b", "2"}}), "{b}-2-{x y}");
  EXPECT_THROW(fill("{missing}", {}), ragform::Error);
  PromptSet ps = load_prompts();
  EXPECT_NE(ps.get("nli").find("Premise: {premise}"), std::string::npos);
  EXPECT_EQ(ps.version.at("nli"), "nli.v1");
  EXPECT_THROW(load_prompts("/nonexistent/dir"), ragform::Error);
}

TEST(SureParsing, JudgeVerdictAndPrompts) {
  EXPECT_TRUE(parse_judge_verdict("Orwell is George Orwell.\nVerdict: correct"));
  EXPECT_FALSE(parse_judge_verdict("Verdict: correct?\nOn reflection...\nVERDICT: **Incorrect**"));
  EXPECT_THROW(parse_judge_verdict("I think it is right."), ragform::Error);
  EXPECT_THROW(parse_judge_verdict("Verdict: maybe"), ragform::Error);
  PromptSet ps = load_prompts();
  std::string jp = judge_prompt(ps, "who?", {"A", "B"}, "It is A.");
  EXPECT_NE(jp.find("Gold answers: A; B\nResponse: It is A.\nReasoning:"), std::string::npos);
  std::string rp = rag_prompt(ps, "(Title: T) text", "who?", false);
  EXPECT_EQ(rp.rfind(ps.get("qa_instruction"), 0), 0u);
  EXPECT_NE(rp.find("Document: (Title: T) text\n\nQuestion: who?\nAnswer:"), std::string::npos);
  EXPECT_TRUE(grade("Reading note: ... Answer: Paris", {"Paris"}, true));
  EXPECT_FALSE(grade("Paris is not it. Answer: NO-RES", {"Paris"}, true));
  EXPECT_TRUE(grade("Paris is not it. Answer: NO-RES", {"Paris"}, false));
}

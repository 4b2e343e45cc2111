// Causal-feature preservation (SURE 3.4, App. C) pair by pair: the answer rules (Golden keeps an
// answer, Noise gains none), the direction of the two NLI questions (premise = original for the
// forward one), and which kinds are NLI-checked (all by default, reader-made with --nli llm).
#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "base/error.h"
#include "pipelines/sure/preserve.h"
#include "pipelines/sure/prompts.h"

using namespace ragform;
using namespace ragform::sure;

namespace {

// Answers the Figure 10 prompt from a table keyed by (premise, hypothesis); "entailment" when
// the pair is not in the table. Records every (premise, hypothesis) it was asked.
class NliTable : public reader::Reader {
 public:
  std::map<std::pair<std::string, std::string>, std::string> verdict;
  std::vector<std::pair<std::string, std::string>> asked;
  reader::Capabilities capabilities() const override { return {true, false, false, false}; }
  std::string describe() const override { return "nli-table"; }
  std::string chat_mode() const override { return "raw"; }
  static std::string between(const std::string& s, const std::string& a, const std::string& b) {
    size_t i = s.find(a) + a.size();
    return s.substr(i, s.find(b, i) - i);
  }
  reader::Generation generate(const std::string& p, const reader::GenerateParams&) override {
    std::string prem = between(p, "Premise: ", "\nHypothesis: ");
    std::string hyp = between(p, "\nHypothesis: ", "\nDoes the premise");
    asked.emplace_back(prem, hyp);
    auto it = verdict.find({prem, hyp});
    reader::Generation g;
    g.text = it == verdict.end() ? "entailment" : it->second;
    return g;
  }
  reader::ScoreResult score(const std::string&, const std::string&) override {
    throw NotSupported("nli-table", "score");
  }
  reader::AttentionResult attention(const std::string&, const reader::AttentionQuery&) override {
    throw NotSupported("nli-table", "attention");
  }
  reader::HiddenResult hidden(const std::string&, int) override {
    throw NotSupported("nli-table", "hidden");
  }
  int count_tokens(const std::string& p) override { return static_cast<int>(p.size()); }
};

Pair pair(const std::string& id, const std::string& kind, const std::string& org,
          const std::string& pert) {
  Pair p;
  p.id = id;
  p.perturbation = kind;
  p.category = kind.substr(0, kind.find('/'));
  p.question = "Where is the Louvre?";
  p.answers = {"Paris"};
  p.original = org;
  p.perturbed = pert;
  return p;
}

}  // namespace

TEST(SurePreserve, PerPairVerdicts) {
  std::vector<Pair> ps = {
      // 0 Golden keeps the answer, both directions entail: kept.
      pair("a", "style/simple", "The Louvre is in Paris.", "the louvre is in paris."),
      // 1 Golden loses the answer: dropped before NLI.
      pair("b", "style/simple", "The Louvre is in Paris.", "The Louvre is in France."),
      // 2 Noise gains the answer (a title embedded by a template): dropped before NLI.
      pair("c", "format/json", "A museum in France.", "{\"title\": \"Paris\"}"),
      // 3 Noise stays noise: NLI-checked and kept.
      pair("d", "format/json", "A museum in France.", "{\"text\": \"A museum in France.\"}"),
      // 4 forward (original => perturbed) entails, backward is neutral: dropped as backward.
      pair("e", "logic/reverse", "Paris. It has the Louvre.", "It has the Louvre. Paris."),
      // 5 forward neutral, backward entails: dropped as forward.
      pair("f", "logic/random", "Paris hosts it. Big.", "Big. Paris hosts it."),
      // 6 failed perturbation.
      pair("g", "style/complex", "Paris.", ""),
  };
  ps[6].failed = true;
  ps[6].note = "empty rewrite";
  NliTable nli;
  nli.verdict[{"It has the Louvre. Paris.", "Paris. It has the Louvre."}] = "neutral";
  nli.verdict[{"Paris hosts it. Big.", "Big. Paris hosts it."}] = "Contradiction";
  FilterCounts c;
  auto v = filter_pairs(ps, &nli, load_prompts(), FilterOptions{}, c);
  ASSERT_EQ(v.size(), 7u);
  EXPECT_TRUE(v[0].keep);
  EXPECT_EQ(v[0].nli_forward, "entailment");
  EXPECT_EQ(v[0].nli_backward, "entailment");
  EXPECT_FALSE(v[1].keep);
  EXPECT_EQ(v[1].reason, "golden lost answer");
  EXPECT_EQ(v[1].nli_forward, "");
  EXPECT_FALSE(v[2].keep);
  EXPECT_EQ(v[2].reason, "noise gained answer");
  EXPECT_TRUE(v[3].keep);
  EXPECT_EQ(v[3].nli_forward, "entailment");  // a rule-based kind, checked by default
  EXPECT_FALSE(v[4].keep);
  EXPECT_EQ(v[4].reason, "nli backward: neutral");
  EXPECT_EQ(v[4].nli_forward, "entailment");
  EXPECT_FALSE(v[5].keep);
  EXPECT_EQ(v[5].reason, "nli forward: contradiction");
  EXPECT_FALSE(v[6].keep);
  EXPECT_EQ(v[6].reason, "failed perturbation: empty rewrite");
  // The forward question has the original as premise: its first NLI prompt.
  ASSERT_EQ(nli.asked.size(), 8u);  // 4 pairs x 2 directions
  EXPECT_EQ(nli.asked[0], std::make_pair(ps[0].original, ps[0].perturbed));
  EXPECT_EQ(nli.asked[1], std::make_pair(ps[0].perturbed, ps[0].original));
  EXPECT_EQ(c.input, 7);
  EXPECT_EQ(c.failed_perturbation, 1);
  EXPECT_EQ(c.golden_lost_answer, 1);
  EXPECT_EQ(c.noise_gained_answer, 1);
  EXPECT_EQ(c.nli_checked, 4);
  EXPECT_EQ(c.nli_forward_not_entailed, 1);
  EXPECT_EQ(c.nli_backward_not_entailed, 1);
  EXPECT_EQ(c.kept, 2);

  // --nli llm: only reader-made kinds (style) are asked; the rule-based pairs 3-5 are kept.
  NliTable nli2 = nli;
  nli2.asked.clear();
  FilterCounts c2;
  FilterOptions llm;
  llm.nli = NliScope::ReaderMade;
  auto v2 = filter_pairs(ps, &nli2, load_prompts(), llm, c2);
  EXPECT_EQ(nli2.asked.size(), 2u);
  EXPECT_TRUE(v2[3].keep && v2[4].keep && v2[5].keep);
  EXPECT_EQ(v2[4].nli_forward, "");
  EXPECT_EQ(c2.kept, 4);
  // No reader and NLI asked for: an error, not a silent keep.
  FilterCounts c3;
  EXPECT_THROW(filter_pairs(ps, nullptr, load_prompts(), FilterOptions{}, c3), ragform::Error);
  FilterOptions none;
  none.nli = NliScope::None;
  EXPECT_EQ(filter_pairs(ps, nullptr, load_prompts(), none, c3)[4].keep, true);
}

// SURE analyses on hand-built inputs: SIG selection, the attention sample (per category or per
// outcome), the attention shift, its groups and Welch's t (hand computed), readability features,
// training-data synthesis from a run store, oracle K-S sets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "base/error.h"
#include "pipelines/sure/analyses.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/perturb_rules.h"
#include "support/test_support.h"

using namespace ragform;
using namespace ragform::sure;

namespace {

// One token per byte (no BOS): count_tokens(s) = |s|, so every position is known by hand. The
// attention row of query position q has mean[j] = j + 1000 q, so a result names both the span
// and the query position it came from. score() returns log(1/2) per byte of the continuation and
// records what it was asked.
class ByteReader : public reader::Reader {
 public:
  std::vector<std::pair<std::string, std::string>> scored;
  reader::AttentionQuery last_query;
  reader::Capabilities capabilities() const override { return {false, true, true, false}; }
  std::string describe() const override { return "bytes"; }
  std::string chat_mode() const override { return "raw"; }
  reader::Generation generate(const std::string&, const reader::GenerateParams&) override {
    throw NotSupported("bytes", "generate");
  }
  reader::ScoreResult score(const std::string& prompt, const std::string& cont) override {
    scored.emplace_back(prompt, cont);
    reader::ScoreResult r;
    for (char c : cont) r.tokens.push_back({static_cast<unsigned char>(c), {c}, std::log(0.5)});
    r.sum = static_cast<double>(cont.size()) * std::log(0.5);
    return r;
  }
  reader::AttentionResult attention(const std::string& prompt,
                                    const reader::AttentionQuery& q) override {
    last_query = q;
    reader::AttentionResult r;
    r.ids.assign(prompt.size(), 0);
    int pos =
        q.query_positions.empty() ? static_cast<int>(prompt.size()) - 1 : q.query_positions[0];
    reader::AttentionRows row;
    row.query_position = pos;
    for (int j = 0; j <= pos; ++j) row.mean.push_back(static_cast<float>(j + 1000 * pos));
    r.rows.push_back(row);
    return r;
  }
  reader::HiddenResult hidden(const std::string&, int) override {
    throw NotSupported("bytes", "hidden");
  }
  int count_tokens(const std::string& p) override { return static_cast<int>(p.size()); }
};

}  // namespace

TEST(SureAnalyses, SigKeepsGoldenPairsUnrobustForEveryReader) {
  auto o = [](const char* id, const char* k, Subset s, bool a, bool b) {
    return Outcome{id, k, "format", s, a, b};
  };
  std::vector<Outcome> A = {o("p1", "format/json", Subset::KG, true, false),
                            o("p2", "format/json", Subset::KG, true, false),
                            o("p3", "format/json", Subset::KN, true, false),
                            o("p4", "format/json", Subset::UG, false, true),
                            o("p5", "format/html", Subset::UG, false, true)};
  std::vector<Outcome> B = {o("p1", "format/json", Subset::KG, false, true),
                            o("p2", "format/json", Subset::KG, true, true),
                            o("p3", "format/json", Subset::KN, false, true),
                            o("p5", "format/html", Subset::UG, true, false)};
  auto sig = select_sig({A, B}, 100, 1);
  ASSERT_EQ(sig.size(), 2u);
  EXPECT_EQ(sig["format/json"],
            std::vector<std::string>{"p1"});  // p2 robust in B, p3 noise, p4 missing
  EXPECT_EQ(sig["format/html"], std::vector<std::string>{"p5"});
  // N caps and seeds: 30 candidates, 10 chosen, same seed same choice.
  std::vector<Outcome> C;
  for (int i = 0; i < 30; ++i)
    C.push_back(o(("q" + std::to_string(i)).c_str(), "logic/reverse", Subset::KG, true, false));
  auto s1 = select_sig({C}, 10, 5), s2 = select_sig({C}, 10, 5), s3 = select_sig({C}, 10, 6);
  EXPECT_EQ(s1["logic/reverse"].size(), 10u);
  EXPECT_EQ(s1, s2);
  EXPECT_NE(s1, s3);
}

TEST(SureAnalyses, AttentionGroupsAndWelch) {
  auto rep =
      attention_report({{0, 1, 1}, {0, 2, 1}, {0, 1, 1.5}, {-1, 1, 3}, {1, 2, 0}, {1, 3, 0}});
  ASSERT_EQ(rep.groups.size(), 3u);
  EXPECT_EQ(rep.groups[0].n, 3);
  EXPECT_NEAR(rep.groups[0].a_org, 4.0 / 3, 1e-12);
  EXPECT_NEAR(rep.groups[0].a_pert, 3.5 / 3, 1e-12);
  EXPECT_NEAR(rep.groups[0].delta, 0.5, 1e-12);
  EXPECT_NEAR(rep.groups[1].delta, 2.0, 1e-12);
  EXPECT_NEAR(rep.groups[2].delta, 2.5, 1e-12);
  // Robust dA {0, 1, 0.5}, changed {2, 2, 3}: t = (0.5 - 7/3) / sqrt(0.25/3 + (1/3)/3).
  ASSERT_TRUE(rep.welch_t.has_value());
  EXPECT_NEAR(*rep.welch_t, (0.5 - 7.0 / 3) / std::sqrt(0.25 / 3 + 1.0 / 9), 1e-9);
  EXPECT_GT(*rep.welch_p, 0.0);
  EXPECT_LT(*rep.welch_p, 0.05);
}

namespace {

// Pairs over three feature categories and all three outcomes: per category 5 Robust, 3 Win and
// 1 Lose (ids "<category>-<label>-<i>"), interleaved so no stratum is a run of the input.
std::vector<LabelledPair> labelled_sample_input() {
  std::vector<LabelledPair> out;
  const std::pair<int, int> counts[] = {{0, 5}, {-1, 3}, {1, 1}};
  for (int i = 0; i < 5; ++i)
    for (const char* cat : {"style", "logic", "format"})
      for (const auto& [label, n] : counts) {
        if (i >= n) continue;
        LabelledPair lp;
        lp.pair.category = cat;
        lp.pair.perturbation = std::string(cat) + "/x";
        lp.pair.id = std::string(cat) + "-" + std::to_string(label) + "-" + std::to_string(i);
        lp.label = label;
        out.push_back(lp);
      }
  return out;
}

std::map<std::string, size_t> count_by(const std::vector<LabelledPair>& v, bool category) {
  std::map<std::string, size_t> m;
  for (const auto& lp : v) ++m[category ? lp.pair.category : std::to_string(lp.label)];
  return m;
}

std::vector<std::string> ids(const std::vector<LabelledPair>& v) {
  std::vector<std::string> out;
  for (const auto& lp : v) out.push_back(lp.pair.id);
  return out;
}

}  // namespace

// The attention sample: `category` draws up to N per feature category whatever the outcomes,
// `outcome` up to N per Robust/Win/Lose group whatever the categories; both are a function of the
// seed alone, and `outcome` is the documented shuffle per label (the draw of before).
TEST(SureAnalyses, AttentionSampleDrawsUpToNPerCategoryOrPerOutcome) {
  const auto in = labelled_sample_input();
  ASSERT_EQ(in.size(), 27u);
  AttentionSampleOptions so;
  EXPECT_EQ(so.by, AttentionSampling::Category);  // the default: the paper's reading
  so.per_group = 4;
  so.seed = 3;
  std::map<std::string, size_t> drawn;
  auto cat = sample_attention_pairs(in, so, &drawn);
  EXPECT_EQ(count_by(cat, true),
            (std::map<std::string, size_t>{{"format", 4}, {"logic", 4}, {"style", 4}}));
  EXPECT_EQ(drawn, count_by(cat, true));
  std::set<std::string> unique;
  for (const auto& id : ids(cat)) EXPECT_TRUE(unique.insert(id).second) << id;
  EXPECT_EQ(ids(sample_attention_pairs(in, so)), ids(cat));  // same seed, same sample
  so.seed = 4;
  EXPECT_NE(ids(sample_attention_pairs(in, so)), ids(cat));
  so.seed = 3;

  so.by = AttentionSampling::Outcome;
  drawn.clear();
  auto out = sample_attention_pairs(in, so, &drawn);
  // 15 Robust, 9 Win, 3 Lose in the input: 4, 4, 3 drawn, from all categories.
  EXPECT_EQ(count_by(out, false), (std::map<std::string, size_t>{{"-1", 4}, {"0", 4}, {"1", 3}}));
  EXPECT_EQ(drawn, (std::map<std::string, size_t>{{"Lose", 3}, {"Robust", 4}, {"Win", 4}}));
  EXPECT_EQ(ids(sample_attention_pairs(in, so)), ids(out));
  // The documented draw of the Robust group: its pairs in input order, std::shuffle by
  // mt19937_64(mix_seed(seed, "0", "attention")), the first 4.
  std::vector<std::string> robust;
  for (const auto& lp : in)
    if (lp.label == 0) robust.push_back(lp.pair.id);
  std::mt19937_64 rng(mix_seed(3, "0", "attention"));
  std::shuffle(robust.begin(), robust.end(), rng);
  robust.resize(4);
  std::vector<std::string> got;
  for (const auto& lp : out)
    if (lp.label == 0) got.push_back(lp.pair.id);
  EXPECT_EQ(got, robust);

  // More than a stratum holds: all of it.
  so.per_group = 100;
  EXPECT_EQ(sample_attention_pairs(in, so).size(), 27u);
  so.by = AttentionSampling::Category;
  EXPECT_EQ(sample_attention_pairs(in, so).size(), 27u);

  EXPECT_EQ(parse_attention_sampling("outcome"), AttentionSampling::Outcome);
  EXPECT_EQ(parse_attention_sampling("category"), AttentionSampling::Category);
  EXPECT_THROW(parse_attention_sampling("group"), ragform::UsageError);
  EXPECT_EQ(so.to_json().dump(), R"({"by":"category","per_group":100,"seed":3})");
}

// measure_attention_shift on the byte reader: each pair's A_org and A_pert with its label, and a
// pair whose answer is in neither document counted, not measured.
TEST(SureAnalyses, AttentionShiftMeasuresEachSampledPair) {
  auto prompts = load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  ByteReader r;
  LabelledPair a;
  a.pair.id = "q#0";
  a.pair.perturbation = "logic/reverse";
  a.pair.category = "logic";
  a.pair.question = "who met?";
  a.pair.answers = {"Tom"};
  a.pair.title = "T";
  a.pair.original = "Tom met 1 friend. It rained.";
  a.pair.perturbed = "It rained. Tom met 1 friend.";
  a.label = 1;
  LabelledPair b = a;
  b.pair.answers = {"Ann"};
  b.label = 0;
  AttentionOptions ao;
  auto shift = measure_attention_shift(r, prompts, {a, b}, ao, false);
  ASSERT_EQ(shift.rows.size(), 1u);
  EXPECT_EQ(shift.no_span, 1u);
  const auto& [label, a_org, a_pert] = shift.rows[0];
  EXPECT_EQ(label, 1);
  const std::string go = grounding_original(a.pair), gp = grounding_perturbed(a.pair);
  EXPECT_DOUBLE_EQ(a_org, *answer_span_attention(r, rag_prompt(prompts, go, "who met?", false), go,
                                                 "who met?", {"Tom"}, ao));
  EXPECT_DOUBLE_EQ(a_pert, *answer_span_attention(r, rag_prompt(prompts, gp, "who met?", false), gp,
                                                  "who met?", {"Tom"}, ao));
  EXPECT_NE(a_org, a_pert);  // "Tom" moved: the span's positions differ
}

TEST(SureAnalyses, AnswerSpanOnWordBoundaries) {
  const std::string g = "Born in 1990, Tom met 1 friend.";
  // "1" inside "1990" (byte 8) is no answer; the standalone "1" at byte 22 is.
  auto s = find_answer_span(g, {"1"});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s, std::make_pair(size_t{22}, size_t{23}));
  EXPECT_EQ(*find_answer_span(g, {"tom MET", "1"}), std::make_pair(size_t{14}, size_t{21}));
  EXPECT_EQ(*find_answer_span(g, {"1990"}), std::make_pair(size_t{8}, size_t{12}));
  EXPECT_FALSE(find_answer_span(g, {"Bor", "om", "friends"}).has_value());
  // Answers ending in punctuation need no boundary on that side.
  EXPECT_EQ(*find_answer_span("in the U.S.A today", {"U.S."}),
            std::make_pair(size_t{7}, size_t{11}));
  // Earliest start wins; at the same start the longer answer.
  EXPECT_EQ(*find_answer_span("New York City", {"City", "New York", "New"}),
            std::make_pair(size_t{0}, size_t{8}));
}

TEST(SureAnalyses, AnswerSpanAttentionQueriesTheQuestionsLastToken) {
  // Bytes: "Doc: " 0-4, grounding 5-35 ("1" of "1990" at 13, the word "1" at 27, "Tom met" at
  // 19-25), "\nQuestion: " 36-46, "who?" 47-50, "\nAnswer:" 51-58.
  const std::string g = "Born in 1990, Tom met 1 friend.";
  const std::string prompt = "Doc: " + g + "\nQuestion: who?\nAnswer:";
  ByteReader r;
  AttentionOptions ao;
  // Paper: query = "?" of "who?" at 50; span byte 27: 27 + 1000 * 50.
  auto a = answer_span_attention(r, prompt, g, "who?", {"1"}, ao);
  ASSERT_TRUE(a.has_value());
  EXPECT_DOUBLE_EQ(*a, 50027.0);
  ASSERT_EQ(r.last_query.query_positions, std::vector<int>{50});
  // Mean over a multi-token span: positions 19..25 -> 22.
  EXPECT_DOUBLE_EQ(*answer_span_attention(r, prompt, g, "who?", {"Tom met"}, ao), 50022.0);
  // Option: the prompt's final token, ":" at 58.
  ao.query = AttentionQueryToken::PromptEnd;
  EXPECT_DOUBLE_EQ(*answer_span_attention(r, prompt, g, "who?", {"1"}, ao), 58027.0);
  EXPECT_FALSE(answer_span_attention(r, prompt, g, "who?", {"friends"}, ao).has_value());
  ao.query = AttentionQueryToken::QuestionEnd;
  EXPECT_THROW(answer_span_attention(r, prompt, g, "where?", {"1"}, ao), ragform::Error);
  EXPECT_EQ(parse_attention_query("prompt"), AttentionQueryToken::PromptEnd);
  EXPECT_THROW(parse_attention_query("last"), ragform::UsageError);
}

TEST(SureAnalyses, OracleScoreIsTheMeanOverAnswersOfSummedLogProbs) {
  ByteReader r;
  // " Paris" = 6 tokens, " City of Light" = 14 tokens, log(1/2) each: eq. 5 gives 6 log(1/2)
  // and 14 log(1/2); footnote 7 averages them: 10 log(1/2) (the sum would be 20 log(1/2)).
  double o = oracle_score(r, "P", {"Paris", "City of Light"});
  EXPECT_NEAR(o, 10 * std::log(0.5), 1e-12);
  ASSERT_EQ(r.scored.size(), 2u);
  EXPECT_EQ(r.scored[0], std::make_pair(std::string("P"), std::string(" Paris")));
  EXPECT_EQ(r.scored[1].second, " City of Light");
  EXPECT_THROW(oracle_score(r, "P", {}), ragform::Error);
}

TEST(SureAnalyses, ReadabilityFeatures) {
  EXPECT_EQ(count_syllables("reading"), 2);
  EXPECT_EQ(count_syllables("table"), 2);
  EXPECT_EQ(count_syllables("make"), 1);
  EXPECT_EQ(count_syllables("a"), 1);
  // 6 words, 1 sentence, 6 syllables: 206.835 - 1.015 * 6 - 84.6 * 1.
  EXPECT_NEAR(flesch_reading_ease("The cat sat on the mat."), 116.145, 1e-9);
  EXPECT_DOUBLE_EQ(distinct_1("The cat the dog"), 0.75);
  EXPECT_THROW(distinct_1("  "), ragform::Error);
}

TEST(SureAnalyses, TrainingDataFromStore) {
  auto dir = ragform::testing::temp_dir("sure_export");
  store::RunStore st(dir / "r.sqlite", store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  store::RunConfig rc;
  rc.pipeline = "sure eval";
  int64_t run = st.begin_run(rc);
  auto put = [&](const std::string& inst, const std::string& var, const std::string& out, bool ok,
                 bool golden) {
    store::Result r;
    r.run = run;
    r.instance = inst;
    r.variant = var;
    r.prompt = "P(" + inst + "," + var + ")";
    r.output = out;
    r.correct = ok;
    r.extra["golden"] = golden;
    st.put(r);
  };
  put("q1#0", "original", "Paris", true, true);
  put("q1#0", "format/json", "NO-RES", false, true);  // Lose: unrobust golden
  put("q1#0", "logic/reverse", "Paris", true, true);  // robust
  put("q2#0", "original", "NO-RES", false, true);
  put("q2#0", "style/simple", "Rome", true, true);  // Win: unrobust golden
  put("q3#1", "original", "x", true, false);
  put("q3#1", "format/html", "y", false, false);  // noise: not used
  TrainingData td = synthesize_training_data(st, run);
  EXPECT_EQ(td.unrobust_pairs, 2);
  ASSERT_EQ(td.sft.size(), 4u);
  ASSERT_EQ(td.dpo.size(), 4u);
  EXPECT_EQ(td.sft[0]["prompt"], "P(q1#0,original)");
  EXPECT_EQ(td.sft[0]["completion"], "Paris");
  EXPECT_EQ(td.sft[1]["prompt"], "P(q1#0,format/json)");
  EXPECT_EQ(td.sft[1]["completion"], "Paris");
  EXPECT_EQ(td.dpo[1]["chosen"], "Paris");
  EXPECT_EQ(td.dpo[1]["rejected"], "NO-RES");
  EXPECT_EQ(td.dpo[3]["chosen"], "Rome");
  EXPECT_EQ(td.dpo[3]["rejected"], "NO-RES");
}

TEST(SureAnalyses, OracleKsSets) {
  // Top-ranked documents always have token length 100+, bottom ones < 50: K-S D = 1.
  std::vector<std::vector<OracleDoc>> q;
  for (int i = 0; i < 20; ++i) {
    std::vector<OracleDoc> docs(3);
    docs[0] = {-1.0, {50, 0.5, 100.0 + i, 10}};
    docs[1] = {-5.0, {50, 0.5, 40.0 - i, 10}};
    docs[2] = {-3.0, {50, 0.5, 70.0, 10}};
    q.push_back(docs);
  }
  auto rows = oracle_ks(q, 1);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2].feature, "token_length");
  EXPECT_DOUBLE_EQ(rows[2].d, 1.0);
  EXPECT_LT(rows[2].p, 1e-6);
  EXPECT_DOUBLE_EQ(rows[0].d, 0.0);  // identical Flesch everywhere
  EXPECT_THROW(oracle_ks({q[0]}, 1), ragform::Error);
}

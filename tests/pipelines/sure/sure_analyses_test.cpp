// SURE analyses on hand-built inputs: SIG selection, attention groups and Welch's t (hand
// computed), readability features, training-data synthesis from a run store, oracle K-S sets.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "pipelines/sure/analyses.h"
#include "support/test_support.h"

using namespace ragform;
using namespace ragform::sure;

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

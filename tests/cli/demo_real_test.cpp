// One small end-to-end run of each pipeline on the trained reader (RAGFORM_GEMMA, Gemma 3 270M):
// `ragform demo -m` runs C-NORM's calibration and gold-position evaluation, SURE's perturbations,
// filter and robustness metrics, and Spotlight's selection, writing one run store and a report.
// stories260K's demo test (tests/report/demo_fixture_test.cpp) checks the step commands and the
// rows' bytes; this one checks that the same job completes on a 262k-vocabulary, sliding-window
// model that reads, with every pipeline's rows stored. 6 min 46 s here (2 cores shared with a
// build), most of it SURE's 100 pairs.
#include <gtest/gtest.h>

#include "store/run_store.h"
#include "support/real_models.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

TEST(DemoReal, EveryPipelineRunsOnGemma) {
  REQUIRE_REAL_MODEL(gemma, "RAGFORM_GEMMA");
  const fs::path dir = ragform::testing::temp_dir("demo-real");
  const std::string shared = ragform::testing::shared_dir().string();
  auto r = ragform::testing::run_ragform("demo -m " + ragform::testing::quoted(gemma) +
                                         " --shared " + ragform::testing::quoted(shared) +
                                         " --out-dir " + ragform::testing::quoted(dir) +
                                         " --needle 2 -k 3 --nq 6 --hotpot 10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / "ragform-demo.html"));
  EXPECT_NE(r.out.find("C-NORM    calibrated delimiter f* = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spotlight 10 HotpotQA questions, recall@6:"), std::string::npos) << r.out;
  ragform::store::RunStore st(dir / "ragform-demo.sqlite",
                              ragform::store::RunStore::Mode::read_only);
  std::map<std::string, int64_t> rows;
  for (const auto& run : st.runs()) rows[run.pipeline] += st.counts(run.id).rows;
  EXPECT_EQ(rows["cnorm calibrate"], 6 * 11);
  EXPECT_EQ(rows["cnorm eval"], 2 * 3 * 3);
  EXPECT_GT(rows["sure eval"], 0);
  EXPECT_EQ(rows["spotlight eval"], 10 * 5);
  std::printf("[measured] demo on Gemma 3 270M (needle 2, k 3, nq 6, hotpot 10):\n%s\n",
              r.out.c_str());
}

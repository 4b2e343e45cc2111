// `ragform demo -m RAGFORM_GEMMA` at given sizes, and the checks the real tier's two demo tests
// share: C-NORM's calibration and gold-position evaluation, SURE's perturbations, filter and
// robustness metrics, and Spotlight's selection each complete on a 262k-vocabulary,
// sliding-window model that reads, with every pipeline's rows in the one run store.
// stories260K's demo test (tests/report/demo_fixture_test.cpp) checks the step commands and the
// rows' bytes.
#pragma once
#include <cstdio>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::testing {

inline void check_demo_on_gemma(const std::string& gemma, int needle, int docs, int nq,
                                int hotpot) {
  namespace fs = std::filesystem;
  const fs::path dir = temp_dir("demo-real");
  const std::string sizes = " --needle " + std::to_string(needle) + " -k " + std::to_string(docs) +
                            " --nq " + std::to_string(nq) + " --hotpot " + std::to_string(hotpot);
  auto r = run_ragform("demo -m " + testing::quoted(gemma) + " --shared " +
                       testing::quoted(shared_dir().string()) + " --out-dir " +
                       testing::quoted(dir) + sizes);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir / "ragform-demo.html"));
  EXPECT_NE(r.out.find("C-NORM    calibrated delimiter f* = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spotlight " + std::to_string(hotpot) + " HotpotQA questions, recall@6:"),
            std::string::npos)
      << r.out;
  // The demo's one finding about the reader (a perturbation effect and its CI, or that none
  // shows at this size) and every category's share of changed grades with its CI.
  EXPECT_NE(r.out.find("            finding: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("by category (all pairs, 95% CI): "), std::string::npos) << r.out;
  store::RunStore st(dir / "ragform-demo.sqlite", store::RunStore::Mode::read_only);
  std::map<std::string, int64_t> rows;
  for (const auto& run : st.runs()) rows[run.pipeline] += st.counts(run.id).rows;
  EXPECT_EQ(rows["cnorm calibrate"], 6 * 11);        // -S 6 samples x 11 candidate delimiters
  EXPECT_EQ(rows["cnorm eval"], needle * docs * 3);  // every gold position x 3 methods
  EXPECT_GT(rows["sure eval"], 0);
  EXPECT_EQ(rows["spotlight eval"], hotpot * 5);
  std::printf("[measured] demo on Gemma 3 270M (%s):\n%s\n", sizes.c_str(), r.out.c_str());
}

}  // namespace ragform::testing

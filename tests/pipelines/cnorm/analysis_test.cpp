// The analyses of `cnorm eval` (analysis.h) on hand-computed values: average ranks with ties,
// Spearman's rho (textbook example), the bootstrap interval's degenerate and ordered cases, and
// f* by calibration sample size.
#include "pipelines/cnorm/analysis.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"

namespace ragform::cnorm {

TEST(CnormAnalysis, AverageRanksAndSpearman) {
  EXPECT_EQ(average_ranks({3, 1, 2, 2}), (std::vector<double>{4, 1, 2.5, 2.5}));
  EXPECT_EQ(average_ranks({}), std::vector<double>{});
  // sum d^2 = 4, rho = 1 - 6 * 4 / (5 * (25 - 1)) = 0.8.
  EXPECT_NEAR(*spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 0.8, 1e-12);
  EXPECT_NEAR(*spearman({1, 2, 3}, {10, 100, 1000}), 1.0, 1e-12);  // monotone, not linear
  EXPECT_NEAR(*spearman({1, 2, 3}, {3, 2, 1}), -1.0, 1e-12);
  // With ties: ranks x = {1, 2.5, 2.5, 4}, y = {1, 2, 3, 4}: Pearson of the ranks = 4.5 /
  // sqrt(4.5 * 5) = sqrt(0.9).
  EXPECT_NEAR(*spearman({1, 2, 2, 3}, {1, 2, 3, 4}), std::sqrt(0.9), 1e-12);
  EXPECT_FALSE(spearman({1, 1, 1}, {1, 2, 3}).has_value());
  EXPECT_FALSE(spearman({1}, {1}).has_value());
  EXPECT_THROW(spearman({1, 2}, {1}), Error);
}

TEST(CnormAnalysis, BootstrapSpearman) {
  // Every question ranks the candidates alike: every resample gives rho = 1.
  std::vector<double> x = {0.1, 0.2, 0.3};
  std::vector<std::vector<double>> same(5, {0.0, 0.5, 1.0});
  RankCorrelation r = bootstrap_spearman(x, same, 0.95, 200, 1);
  EXPECT_NEAR(*r.rho, 1.0, 1e-12);
  EXPECT_NEAR(*r.lo, 1.0, 1e-12);
  EXPECT_NEAR(*r.hi, 1.0, 1e-12);
  EXPECT_EQ(r.resamples, 200u);
  EXPECT_EQ(r.n, 3u);
  // Questions disagree: the interval is ordered, contains rho and stays in [-1, 1]; seeded.
  std::vector<std::vector<double>> mixed = {{0, 0.5, 1}, {1, 0.5, 0}, {0, 1, 0.5},
                                            {0, 0.5, 1}, {0.5, 0, 1}, {0, 1, 1}};
  RankCorrelation m = bootstrap_spearman(x, mixed, 0.9, 500, 7);
  ASSERT_TRUE(m.rho && m.lo && m.hi);
  EXPECT_LE(*m.lo, *m.hi);
  EXPECT_GE(*m.lo, -1.0);
  EXPECT_LE(*m.hi, 1.0);
  EXPECT_LE(*m.lo, *m.rho);
  EXPECT_GE(*m.hi, *m.rho);
  RankCorrelation m2 = bootstrap_spearman(x, mixed, 0.9, 500, 7);
  EXPECT_EQ(*m.lo, *m2.lo);
  EXPECT_THROW(bootstrap_spearman(x, {{1, 2}}), Error);
  EXPECT_FALSE(bootstrap_spearman(x, {}).rho.has_value());
}

TEST(CnormAnalysis, BestBySampleSize) {
  std::vector<CandidateScore> c(2);
  c[0].abs = {0.1, 0.9, 0.9};
  c[1].abs = {0.5, 0.5, 0.5};
  // S=1: 0.1 vs 0.5 -> 1; S=2: 0.5 vs 0.5 -> first (0); S=3: 0.633 vs 0.5 -> 0.
  EXPECT_EQ(best_by_sample_size(c), (std::vector<size_t>{1, 0, 0}));
  c[1].abs.pop_back();  // a halving profile: not every candidate has S scores
  EXPECT_THROW(best_by_sample_size(c), Error);
}

}  // namespace ragform::cnorm

// Statistics (eval/stats.h) against published reference values; the source of every expected
// number is cited next to it. "numerical integration" values were computed independently of the
// incomplete-beta code, by midpoint-rule integration of the Student-t density (400k points).
#include "eval/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "base/error.h"

namespace ragform::eval {
namespace {

// R's `sleep` data set (Cushny & Peebles 1905): extra hours of sleep, drug 1 and drug 2.
const std::vector<double> kSleep1 = {0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
const std::vector<double> kSleep2 = {1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};

// R's `mtcars` (Henderson & Velleman 1981): mpg and wt (1000 lbs) of the 32 cars.
const std::vector<double> kMpg = {21.0, 21.0, 22.8, 21.4, 18.7, 18.1, 14.3, 24.4, 22.8, 19.2, 17.8,
                                  16.4, 17.3, 15.2, 10.4, 10.4, 14.7, 32.4, 30.4, 33.9, 21.5, 15.5,
                                  15.2, 13.3, 19.2, 27.3, 26.0, 30.4, 15.8, 19.7, 15.0, 21.4};
const std::vector<double> kWt = {2.620, 2.875, 2.320, 3.215, 3.440, 3.460, 3.570, 3.190,
                                 3.150, 3.440, 3.440, 4.070, 3.730, 3.780, 5.250, 5.424,
                                 5.345, 2.200, 1.615, 1.835, 2.465, 3.520, 3.435, 3.840,
                                 3.845, 1.935, 2.140, 1.513, 3.170, 2.770, 3.570, 2.780};

TEST(Distributions, IncompleteBetaClosedForms) {
  for (double x : {0.0, 0.01, 0.3, 0.5, 0.77, 0.999, 1.0}) {
    EXPECT_NEAR(incomplete_beta(1, 1, x), x, 1e-14);
    EXPECT_NEAR(incomplete_beta(3.5, 1, x), std::pow(x, 3.5), 1e-14);
    EXPECT_NEAR(incomplete_beta(1, 2.5, x), 1 - std::pow(1 - x, 2.5), 1e-14);
    EXPECT_NEAR(incomplete_beta(2.2, 7.1, x), 1 - incomplete_beta(7.1, 2.2, 1 - x), 1e-13);
  }
  EXPECT_NEAR(incomplete_beta(40, 40, 0.5), 0.5, 1e-13);
  // Integer a, b: I_x(2,3) = sum_{j=2}^{4} C(4,j) x^j (1-x)^(4-j); at x = 0.3 that is
  // 0.2646 + 0.0756 + 0.0081 = 0.3483 (by hand).
  EXPECT_NEAR(incomplete_beta(2, 3, 0.3), 0.3483, 1e-14);
  EXPECT_THROW(incomplete_beta(0, 1, 0.5), Error);
  EXPECT_THROW(incomplete_beta(1, 1, 1.5), Error);
}

TEST(Distributions, StudentTMatchesTables) {
  // Two-sided 5% and 1% critical values from standard t tables (e.g. Montgomery & Runger,
  // Applied Statistics and Probability for Engineers, Table V), given to 3 decimals.
  EXPECT_NEAR(student_t_cdf(12.706, 1), 0.975, 2e-5);
  EXPECT_NEAR(student_t_cdf(2.228, 10), 0.975, 5e-5);
  EXPECT_NEAR(student_t_cdf(2.042, 30), 0.975, 5e-5);
  EXPECT_NEAR(student_t_cdf(4.032, 5), 0.995, 5e-6);
  EXPECT_NEAR(student_t_cdf(-2.228, 10), 0.025, 5e-5);
  EXPECT_DOUBLE_EQ(student_t_cdf(0, 7.3), 0.5);
  // Cauchy (df = 1): P(T <= t) = 1/2 + atan(t)/pi exactly.
  for (double t : {-30.0, -1.0, 0.2, 3.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / M_PI, 1e-14);
  }
  // Large df approaches the normal: Phi(1.959964) = 0.975.
  EXPECT_NEAR(student_t_cdf(1.959964, 1e7), 0.975, 1e-6);
  EXPECT_NEAR(student_t_quantile(0.975, 10), 2.228139, 1e-6);   // table value 2.228
  EXPECT_NEAR(student_t_quantile(0.025, 30), -2.042272, 1e-6);  // table value 2.042
  EXPECT_EQ(student_t_two_sided_p(INFINITY, 3), 0.0);
  EXPECT_THROW(student_t_cdf(1, 0), Error);
  EXPECT_THROW(student_t_quantile(1.0, 5), Error);
}

TEST(Distributions, ChiSquareAndKolmogorovMatchTables) {
  // Chi-square(1) critical values 3.841459 (5%) and 6.634897 (1%): any chi-square table.
  EXPECT_NEAR(chi_square1_sf(3.841459), 0.05, 1e-7);
  EXPECT_NEAR(chi_square1_sf(6.634897), 0.01, 1e-7);
  EXPECT_EQ(chi_square1_sf(0), 1.0);
  // Kolmogorov distribution critical values 1.2238 (10%), 1.3581 (5%), 1.6276 (1%)
  // (Smirnov 1948 table; Massey 1951, JASA 46:68-78), and P(K <= 1) = 0.7300 (Kolmogorov 1933).
  EXPECT_NEAR(kolmogorov_sf(1.2238), 0.10, 1e-4);
  EXPECT_NEAR(kolmogorov_sf(1.3581), 0.05, 1e-4);
  EXPECT_NEAR(kolmogorov_sf(1.6276), 0.01, 1e-4);
  EXPECT_NEAR(kolmogorov_sf(1.0), 0.27, 1e-4);
  // The two series agree where they meet.
  EXPECT_NEAR(kolmogorov_sf(std::nextafter(1.0, 0.0)), kolmogorov_sf(1.0), 1e-12);
  EXPECT_EQ(kolmogorov_sf(0), 1.0);
  EXPECT_NEAR(kolmogorov_sf(0.05), 1.0, 1e-15);
  EXPECT_LT(kolmogorov_sf(5), 1e-20);
}

TEST(Bootstrap, PercentileIntervalOfTheMean) {
  std::vector<double> x(100);
  std::iota(x.begin(), x.end(), 1.0);
  BootstrapCI ci = bootstrap_mean_ci(x, 0.95, 20000, 42);
  EXPECT_DOUBLE_EQ(ci.mean, 50.5);
  // Normal theory: 50.5 +- 1.959964 * sigma / sqrt(100) with the plug-in sigma = 28.866 (the
  // bootstrap resamples the empirical distribution): [44.842, 56.158].
  EXPECT_NEAR(ci.lo, 44.842, 0.4);
  EXPECT_NEAR(ci.hi, 56.158, 0.4);
  // Seeded: the same seed gives the same interval, another seed a slightly different one.
  BootstrapCI again = bootstrap_mean_ci(x, 0.95, 20000, 42);
  EXPECT_EQ(again.lo, ci.lo);
  EXPECT_EQ(again.hi, ci.hi);
  BootstrapCI other = bootstrap_mean_ci(x, 0.95, 20000, 7);
  EXPECT_NE(other.lo, ci.lo);
  // 0/1 data, n = 2: resampled means are 0, 0.5, 1 with P(0) = P(1) = 1/4, so the 2.5% and
  // 97.5% quantiles of 10000 resamples are 0 and 1.
  std::vector<double> coin = {0, 1};
  BootstrapCI c = bootstrap_mean_ci(coin, 0.95, 10000, 1);
  EXPECT_EQ(c.lo, 0.0);
  EXPECT_EQ(c.hi, 1.0);
}

TEST(Bootstrap, DegenerateInputs) {
  std::vector<double> one = {7};
  BootstrapCI c = bootstrap_mean_ci(one);
  EXPECT_EQ(c.mean, 7);
  EXPECT_EQ(c.lo, 7);
  EXPECT_EQ(c.hi, 7);
  std::vector<double> same = {3, 3, 3, 3};
  c = bootstrap_mean_ci(same, 0.9, 100, 3);
  EXPECT_EQ(c.lo, 3);
  EXPECT_EQ(c.hi, 3);
  std::vector<double> empty, nan = {1, NAN};
  EXPECT_THROW(bootstrap_mean_ci(empty), Error);
  EXPECT_THROW(bootstrap_mean_ci(same, 1.0), Error);
  EXPECT_THROW(bootstrap_mean_ci(same, 0.95, 0), Error);
  EXPECT_THROW(bootstrap_mean_ci(nan), Error);
}

TEST(Pearson, MtcarsMatchesR) {
  // R: cor.test(mtcars$mpg, mtcars$wt) -> t = -9.559, df = 30, p-value = 1.294e-10,
  // cor -0.8676594.
  PearsonResult r = pearson(kMpg, kWt);
  EXPECT_NEAR(r.r, -0.8676594, 5e-8);
  EXPECT_NEAR(r.t, -9.559, 5e-4);
  EXPECT_EQ(r.df, 30);
  EXPECT_NEAR(r.p, 1.294e-10, 5e-14);
}

TEST(Pearson, HandExampleAndDegenerateInputs) {
  // x = 1..5, y = 2 4 5 4 5: sxy = 6, sxx = 10, syy = 6, r = 6/sqrt(60) = sqrt(0.6);
  // t = r sqrt(3 / 0.4) = 3/sqrt(2); p (df 3) = 0.1240271 by numerical integration.
  std::vector<double> x = {1, 2, 3, 4, 5}, y = {2, 4, 5, 4, 5};
  PearsonResult r = pearson(x, y);
  EXPECT_NEAR(r.r, std::sqrt(0.6), 1e-15);
  EXPECT_NEAR(r.t, 3 / std::sqrt(2.0), 1e-13);
  EXPECT_NEAR(r.p, 0.12402706, 1e-7);
  std::vector<double> lin = {3, 5, 7, 9, 11};
  r = pearson(x, lin);
  EXPECT_EQ(r.r, 1.0);
  EXPECT_EQ(r.p, 0.0);
  EXPECT_TRUE(std::isinf(r.t) && r.t > 0);
  std::vector<double> flat = {2, 2, 2, 2, 2}, two = {1, 2};
  EXPECT_THROW(pearson(x, flat), Error);
  EXPECT_THROW(pearson(two, two), Error);
  EXPECT_THROW(pearson(x, two), Error);
}

TEST(Welch, SleepDataMatchesR) {
  // R: t.test(extra ~ group, data = sleep) ->
  //   t = -1.8608, df = 17.776, p-value = 0.07939
  //   95 percent confidence interval: -3.3654832  0.2054832; means 0.75 and 2.33.
  WelchResult w = welch_t_test(kSleep1, kSleep2);
  EXPECT_NEAR(w.mean_x, 0.75, 1e-14);
  EXPECT_NEAR(w.mean_y, 2.33, 1e-14);
  EXPECT_NEAR(w.t, -1.8608, 5e-5);
  EXPECT_NEAR(w.df, 17.776, 5e-4);
  EXPECT_NEAR(w.p, 0.07939, 5e-6);
  EXPECT_NEAR(w.ci_lo, -3.3654832, 5e-8);
  EXPECT_NEAR(w.ci_hi, 0.2054832, 5e-8);
  // Swapping the samples flips t and keeps df and p.
  WelchResult s = welch_t_test(kSleep2, kSleep1);
  EXPECT_NEAR(s.t, -w.t, 1e-14);
  EXPECT_NEAR(s.p, w.p, 1e-14);
}

TEST(Welch, HandExampleAndDegenerateInputs) {
  // x = 1 2 3, y = 4 5 6: variances 1 and 1, se^2 = 2/3, t = -3/sqrt(2/3) = -3.674235,
  // df = (2/3)^2 / ((1/3)^2/2 * 2) = 4; p = 0.02131164 by numerical integration.
  std::vector<double> x = {1, 2, 3}, y = {4, 5, 6};
  WelchResult w = welch_t_test(x, y);
  EXPECT_NEAR(w.t, -3 / std::sqrt(2.0 / 3.0), 1e-13);
  EXPECT_NEAR(w.df, 4, 1e-12);
  EXPECT_NEAR(w.p, 0.02131164, 1e-8);
  // One sample constant: df reduces to n_other - 1 = 2.
  std::vector<double> flat = {5, 5, 5};
  EXPECT_NEAR(welch_t_test(x, flat).df, 2, 1e-12);
  std::vector<double> flat2 = {1, 1}, one = {1};
  EXPECT_THROW(welch_t_test(flat, flat2), Error);
  EXPECT_THROW(welch_t_test(x, one), Error);
  std::vector<double> inf = {1, INFINITY};
  EXPECT_THROW(welch_t_test(x, inf), Error);
}

// Exact P(D >= d) by enumerating every way to label n of the n+m pooled ranks as "x".
double brute_force_ks_p(double d_obs, size_t n, size_t m) {
  size_t total = 0, extreme = 0;
  const size_t N = n + m;
  for (uint32_t mask = 0; mask < (1u << N); ++mask) {
    if (static_cast<size_t>(__builtin_popcount(mask)) != n) continue;
    ++total;
    double d = 0;
    size_t i = 0, j = 0;
    for (size_t k = 0; k < N; ++k) {
      ((mask >> k) & 1u) ? ++i : ++j;
      d = std::max(d, std::fabs(double(i) / double(n) - double(j) / double(m)));
    }
    if (d >= d_obs - 1e-12) ++extreme;
  }
  return double(extreme) / double(total);
}

TEST(KolmogorovSmirnov, HandExample) {
  // ECDF differences at 1..12 (x = 1 2 5 7 9, y = 3 4 6 8 10 11 12) peak after 9:
  // 5/5 - 4/7 = 3/7 (by hand).
  std::vector<double> x = {9, 1, 5, 2, 7}, y = {3, 12, 4, 6, 8, 10, 11};
  KsResult k = ks_two_sample(x, y);
  EXPECT_NEAR(k.d, 3.0 / 7.0, 1e-15);
  ASSERT_TRUE(k.p_exact.has_value());
  EXPECT_NEAR(*k.p_exact, brute_force_ks_p(3.0 / 7.0, 5, 7), 1e-12);
  EXPECT_EQ(k.p, *k.p_exact);
  EXPECT_NEAR(k.p_asymptotic, kolmogorov_sf(std::sqrt(35.0 / 12.0) * 3.0 / 7.0), 1e-15);
}

TEST(KolmogorovSmirnov, ExactPMatchesEnumeration) {
  for (auto [n, m] : {std::pair<size_t, size_t>{3, 4}, {4, 4}, {5, 6}, {2, 9}, {7, 8}}) {
    for (size_t num = 1; num <= n * m; ++num) {
      const double d = double(num) / double(n * m);
      EXPECT_NEAR(ks_exact_p(d, n, m), brute_force_ks_p(d, n, m), 1e-12)
          << "n=" << n << " m=" << m << " d=" << d;
    }
  }
  // The smallest attainable D has p = 1.
  EXPECT_NEAR(ks_exact_p(0.25, 4, 4), 1.0, 1e-15);
  // Complete separation of 100 vs 100: only the two extreme orderings reach D = 1, so
  // p = 2 / C(200, 100) = 2.2124e-59 (C(200,100) = 9.0549e58) — no cancellation to 0.
  const double log_c = std::lgamma(201.0) - 2 * std::lgamma(101.0);
  EXPECT_NEAR(ks_exact_p(1.0, 100, 100) / (2 * std::exp(-log_c)), 1.0, 1e-9);
}

TEST(KolmogorovSmirnov, TiesAndLargeSamplesUseTheAsymptoticP) {
  // Pooled distinct values 1 2 3 4: differences .25, .75-.25, 1-.75, 0 -> D = 0.5 (by hand).
  std::vector<double> x = {1, 2, 2, 3}, y = {2, 3, 3, 4};
  KsResult k = ks_two_sample(x, y);
  EXPECT_DOUBLE_EQ(k.d, 0.5);
  EXPECT_FALSE(k.p_exact.has_value());
  EXPECT_EQ(k.p, k.p_asymptotic);
  EXPECT_NEAR(k.p, kolmogorov_sf(std::sqrt(2.0) * 0.5), 1e-15);
  // Identical samples: D = 0, p = 1.
  EXPECT_EQ(ks_two_sample(x, x).d, 0.0);
  EXPECT_EQ(ks_two_sample(x, x).p, 1.0);
  // 200 x 200 > 10000 pairs: asymptotic only. x = 0..199, y = 100..299: D = 0.5,
  // lambda = sqrt(100) * 0.5 = 5.
  std::vector<double> a(200), b(200);
  std::iota(a.begin(), a.end(), 0.0);
  std::iota(b.begin(), b.end(), 100.0);
  k = ks_two_sample(a, b);
  EXPECT_DOUBLE_EQ(k.d, 0.5);
  EXPECT_FALSE(k.p_exact.has_value());
  EXPECT_NEAR(k.p, kolmogorov_sf(5.0), 1e-30);
  std::vector<double> empty;
  EXPECT_THROW(ks_two_sample(x, empty), Error);
}

TEST(McNemar, AgrestiPresidentialApproval) {
  // Agresti, An Introduction to Categorical Data Analysis (2nd ed., 2007), sec. 8.1: approval
  // of the President in two surveys of the same 1600 people, discordant counts 150 and 86:
  // z0 = (86 - 150) / sqrt(236) = -4.17, z0^2 = 17.36, P < 0.0001.
  McNemarResult r = mcnemar(150, 86);
  EXPECT_NEAR(r.chi2, 4096.0 / 236.0, 1e-12);
  EXPECT_NEAR(std::sqrt(r.chi2), 4.17, 5e-3);
  EXPECT_LT(r.p_chi2, 1e-4);
  EXPECT_NEAR(r.chi2_corrected, 63.0 * 63.0 / 236.0, 1e-12);
  EXPECT_LT(r.p_exact, 1e-4);
}

TEST(McNemar, HandValues) {
  // b = 1, c = 9: exact two-sided p = 2 * (C(10,0) + C(10,1)) / 2^10 = 22/1024;
  // chi2 = 64/10 = 6.4; corrected = 49/10 = 4.9.
  McNemarResult r = mcnemar(1, 9);
  EXPECT_NEAR(r.p_exact, 22.0 / 1024.0, 1e-15);
  EXPECT_NEAR(r.chi2, 6.4, 1e-15);
  EXPECT_NEAR(r.chi2_corrected, 4.9, 1e-15);
  EXPECT_NEAR(r.p_chi2, chi_square1_sf(6.4), 1e-15);
  EXPECT_GT(r.p_chi2_corrected, r.p_chi2);
  // From paired outcomes.
  std::vector<bool> before = {true, true, false, false, true, false};
  std::vector<bool> after = {true, false, true, true, false, false};
  McNemarResult p = mcnemar(before, after);
  EXPECT_EQ(p.b, 2u);
  EXPECT_EQ(p.c, 2u);
  EXPECT_EQ(p.p_exact, 1.0);
  EXPECT_EQ(p.chi2, 0.0);
  EXPECT_EQ(p.chi2_corrected, 0.0);
  // No discordant pairs: defined, no evidence.
  McNemarResult z = mcnemar(0, 0);
  EXPECT_EQ(z.chi2, 0.0);
  EXPECT_EQ(z.p_chi2, 1.0);
  EXPECT_EQ(z.p_chi2_corrected, 1.0);
  EXPECT_EQ(z.p_exact, 1.0);
  // Large counts stay finite: b = 6000, c = 4000.
  McNemarResult big = mcnemar(6000, 4000);
  EXPECT_NEAR(big.chi2, 400.0, 1e-12);
  EXPECT_GE(big.p_exact, 0.0);
  EXPECT_LT(big.p_exact, 1e-80);
  std::vector<bool> shorter = {true};
  EXPECT_THROW(mcnemar(before, shorter), Error);
}

}  // namespace
}  // namespace ragform::eval

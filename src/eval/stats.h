// Statistics for comparing runs: bootstrap confidence interval of a mean, Pearson correlation,
// Welch's unequal-variance t-test, the two-sample Kolmogorov-Smirnov test and McNemar's test for
// paired binary outcomes (e.g. correct before / after a perturbation, SURE's Win/Lose counts).
// All functions are pure. Inputs that make a statistic undefined (too few values, zero variance)
// throw ragform::Error naming the test and the reason; results never contain NaN. The only
// non-finite value returned is a documented infinite t for a perfect correlation.
//
// Distribution functions: Student-t probabilities come from the regularized incomplete beta
// function I_x(a, b), evaluated with the continued fraction of Numerical Recipes (3rd ed.,
// sec. 6.4, eq. 6.4.5) by the modified Lentz method, with the symmetry I_x(a,b) = 1 - I_{1-x}(b,a)
// when x > (a+1)/(a+b+2). Chi-square(1) upper tails are erfc(sqrt(x/2)). The Kolmogorov
// distribution is its alternating series (Kolmogorov 1933) for lambda >= 1 and the Jacobi-theta
// form sqrt(2 pi)/lambda * sum exp(-(2k-1)^2 pi^2 / (8 lambda^2)) below.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ragform::eval {

// ---- distributions ----
// Regularized incomplete beta I_x(a, b) for a, b > 0 and 0 <= x <= 1.
double incomplete_beta(double a, double b, double x);
// P(T <= t) for Student's t with df > 0 degrees of freedom (df need not be an integer).
double student_t_cdf(double t, double df);
// Two-sided p-value P(|T| >= |t|).
double student_t_two_sided_p(double t, double df);
// The t with P(T <= t) = prob, 0 < prob < 1 (bisection on student_t_cdf to 1e-12 relative).
double student_t_quantile(double prob, double df);
// P(X >= x) for X ~ chi-square with 1 degree of freedom.
double chi_square1_sf(double x);
// Survival function of the Kolmogorov distribution: P(K > lambda) = 2 sum_{k>=1} (-1)^(k-1)
// exp(-2 k^2 lambda^2); 1 for lambda <= 0.
double kolmogorov_sf(double lambda);

// ---- bootstrap ----
struct BootstrapCI {
  double mean = 0;  // the sample mean
  double lo = 0;    // percentile-method bounds
  double hi = 0;
};
// The most bootstrap resamples any front end accepts: a million gives a CI's ends to far more
// digits than anyone reads, in 8 MB and about a second per thousand items; 2^31 asked for 16 GB.
inline constexpr size_t kMaxResamples = 1000000;

// Percentile bootstrap CI of the mean at `level` (e.g. 0.95): `resamples` resamples of size n
// drawn with replacement by std::mt19937_64(seed) (indices by rejection sampling, so the result
// is the same on every platform); lo/hi are the (1-level)/2 and (1+level)/2 quantiles of the
// resampled means, R's type-7 (linear interpolation) quantile. n == 1 gives lo == hi == mean.
// Errors: empty x, level outside (0, 1), resamples == 0, non-finite values.
BootstrapCI bootstrap_mean_ci(std::span<const double> x, double level = 0.95,
                              size_t resamples = 10000, uint64_t seed = 0);

// ---- Pearson correlation ----
struct PearsonResult {
  double r = 0;
  double t = 0;   // r sqrt(df / (1 - r^2)); +-infinity when |r| == 1
  double df = 0;  // n - 2
  double p = 1;   // two-sided, from Student's t with df degrees of freedom (0 when |r| == 1)
};
// Errors: sizes differ, n < 3, zero variance in x or y, non-finite values.
PearsonResult pearson(std::span<const double> x, std::span<const double> y);

// ---- Welch's t-test ----
struct WelchResult {
  double mean_x = 0, mean_y = 0;
  double t = 0;                 // (mean_x - mean_y) / sqrt(s_x^2/n_x + s_y^2/n_y)
  double df = 0;                // Welch-Satterthwaite
  double p = 1;                 // two-sided
  double ci_lo = 0, ci_hi = 0;  // confidence interval of mean_x - mean_y at `level`
};
// Errors: a sample with fewer than 2 values, both variances zero, non-finite values, level
// outside (0, 1).
WelchResult welch_t_test(std::span<const double> x, std::span<const double> y, double level = 0.95);

// ---- two-sample Kolmogorov-Smirnov ----
struct KsResult {
  double d = 0;             // sup |F_x - F_y| (ties handled: both ECDFs step together)
  double p_asymptotic = 1;  // kolmogorov_sf(sqrt(n m / (n + m)) d), as R and SciPy
  // Exact P(D >= d) under H0 by lattice-path counting, computed when n * m <= 10000 and the
  // pooled sample has no ties (R's rule for exact = NULL); empty otherwise.
  std::optional<double> p_exact;
  double p = 1;  // p_exact when present, else p_asymptotic
};
// Errors: an empty sample, non-finite values.
KsResult ks_two_sample(std::span<const double> x, std::span<const double> y);
// Exact P(D >= d) for sample sizes n and m without ties (exposed for tests).
double ks_exact_p(double d, size_t n, size_t m);

// ---- McNemar's test ----
struct McNemarResult {
  uint64_t b = 0;             // pairs with outcome (1, 0)
  uint64_t c = 0;             // pairs with outcome (0, 1)
  double chi2 = 0;            // (b - c)^2 / (b + c)
  double p_chi2 = 1;          // chi-square(1) upper tail
  double chi2_corrected = 0;  // Edwards: max(0, |b - c| - 1)^2 / (b + c)
  double p_chi2_corrected = 1;
  double p_exact = 1;  // two-sided binomial: min(1, 2 P(X <= min(b, c))), X ~ Bin(b + c, 1/2)
};
// From the discordant counts. No discordant pairs (b + c == 0) is no evidence of a difference:
// statistics 0 and all p-values 1. (R's mcnemar.test returns NaN there; and for b == c it uses
// (|b-c|-1)^2 = 1 in the corrected statistic where we use 0.)
McNemarResult mcnemar(uint64_t b, uint64_t c);
// From paired outcomes: b counts (first true, second false), c counts (false, true).
// Error when the sizes differ.
McNemarResult mcnemar(const std::vector<bool>& first, const std::vector<bool>& second);

}  // namespace ragform::eval

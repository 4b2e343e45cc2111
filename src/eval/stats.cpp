#include "eval/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>

#include "base/error.h"

namespace ragform::eval {

namespace {

void require_finite(std::span<const double> v, const char* test, const char* name) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) {
      throw Error(test, std::string(name) + "[" + std::to_string(i) + "] is not a finite number");
    }
  }
}

double mean_of(std::span<const double> v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// Sum of squared deviations from the mean (two-pass, for accuracy).
double ss_of(std::span<const double> v, double mean) {
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  return s;
}

// Continued fraction for I_x(a, b), Numerical Recipes eq. 6.4.5, modified Lentz method; y = 1-x.
double beta_cf(double a, double b, double x) {
  constexpr int kMaxIter = 100000;
  constexpr double kEps = 1e-15, kTiny = 1e-300;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= kMaxIter; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));  // even step d_{2m}
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));  // odd step d_{2m+1}
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < kEps) return h;
  }
  throw Error("incomplete_beta", "continued fraction did not converge for a=" + std::to_string(a) +
                                     " b=" + std::to_string(b) + " x=" + std::to_string(x));
}

// I_x(a, b) given both x and y = 1 - x (so callers can pass an exactly computed y).
double incomplete_beta_xy(double a, double b, double x, double y) {
  if (x <= 0) return 0;
  if (y <= 0) return 1;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log(y);
  const double front = std::exp(log_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, y) / b;
}

void require_df(double df, const char* where) {
  if (!(df > 0) || !std::isfinite(df)) {
    throw Error(where, "degrees of freedom must be positive and finite, got " + std::to_string(df));
  }
}

// Lower tail P(T <= -|t|) = I_{df/(df+t^2)}(df/2, 1/2) / 2.
double t_lower_tail(double t, double df) {
  if (std::isinf(t)) return 0;
  const double t2 = t * t;
  return 0.5 * incomplete_beta_xy(df / 2, 0.5, df / (df + t2), t2 / (df + t2));
}

// R's quantile type 7 of sorted values.
double quantile7(const std::vector<double>& sorted, double p) {
  const double h = (double(sorted.size()) - 1) * p;
  const size_t lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= sorted.size()) return sorted.back();
  return sorted[lo] + (h - double(lo)) * (sorted[lo + 1] - sorted[lo]);
}

// Unbiased index in [0, n) from a 64-bit generator (rejection sampling).
size_t bounded(std::mt19937_64& rng, uint64_t n) {
  const uint64_t limit =
      std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t r;
  do r = rng();
  while (r >= limit);
  return static_cast<size_t>(r % n);
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (!(a > 0) || !(b > 0) || !std::isfinite(a) || !std::isfinite(b)) {
    throw Error("incomplete_beta",
                "a and b must be positive, got a=" + std::to_string(a) + " b=" + std::to_string(b));
  }
  if (!(x >= 0 && x <= 1)) {
    throw Error("incomplete_beta", "x must lie in [0, 1], got " + std::to_string(x));
  }
  return incomplete_beta_xy(a, b, x, 1 - x);
}

double student_t_cdf(double t, double df) {
  require_df(df, "student_t_cdf");
  if (std::isnan(t)) throw Error("student_t_cdf", "t is NaN");
  const double tail = t_lower_tail(t, df);
  return t > 0 ? 1 - tail : tail;
}

double student_t_two_sided_p(double t, double df) {
  require_df(df, "student_t_two_sided_p");
  if (std::isnan(t)) throw Error("student_t_two_sided_p", "t is NaN");
  return std::min(1.0, 2 * t_lower_tail(t, df));
}

double student_t_quantile(double prob, double df) {
  require_df(df, "student_t_quantile");
  if (!(prob > 0 && prob < 1)) {
    throw Error("student_t_quantile",
                "probability must lie in (0, 1), got " + std::to_string(prob));
  }
  double lo = -1, hi = 1;
  while (student_t_cdf(lo, df) > prob) lo *= 2;
  while (student_t_cdf(hi, df) < prob) hi *= 2;
  for (int i = 0; i < 400 && hi - lo > 1e-12 * std::max(1.0, std::fabs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < prob ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double chi_square1_sf(double x) {
  if (std::isnan(x)) throw Error("chi_square1_sf", "x is NaN");
  if (x <= 0) return 1;
  return std::erfc(std::sqrt(x / 2));
}

double kolmogorov_sf(double lambda) {
  if (std::isnan(lambda)) throw Error("kolmogorov_sf", "lambda is NaN");
  if (lambda <= 0) return 1;
  if (lambda < 1) {
    // P(K <= lambda) = sqrt(2 pi)/lambda * sum_{k>=1} exp(-(2k-1)^2 pi^2 / (8 lambda^2)).
    const double f = -std::numbers::pi * std::numbers::pi / (8 * lambda * lambda);
    double s = 0;
    for (int k = 1; k <= 100; ++k) {
      const double term = std::exp(f * (2 * k - 1) * (2 * k - 1));
      s += term;
      if (term <= 1e-17 * s) break;
    }
    return std::clamp(1 - std::sqrt(2 * std::numbers::pi) / lambda * s, 0.0, 1.0);
  }
  double s = 0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    s += (k % 2 == 1) ? term : -term;
    if (term < 1e-17) break;
  }
  return std::clamp(2 * s, 0.0, 1.0);
}

BootstrapCI bootstrap_mean_ci(std::span<const double> x, double level, size_t resamples,
                              uint64_t seed) {
  const char* kWhere = "bootstrap_mean_ci";
  if (x.empty()) throw Error(kWhere, "no values");
  if (!(level > 0 && level < 1)) {
    throw Error(kWhere, "confidence level must lie in (0, 1), got " + std::to_string(level));
  }
  if (resamples == 0) throw Error(kWhere, "resamples must be at least 1");
  if (resamples > kMaxResamples)
    throw Error(kWhere, "resamples must be at most " + std::to_string(kMaxResamples));
  require_finite(x, kWhere, "x");
  BootstrapCI ci;
  ci.mean = mean_of(x);
  if (x.size() == 1) {
    ci.lo = ci.hi = ci.mean;
    return ci;
  }
  std::mt19937_64 rng(seed);
  std::vector<double> means(resamples);
  for (double& m : means) {
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i) s += x[bounded(rng, x.size())];
    m = s / double(x.size());
  }
  std::sort(means.begin(), means.end());
  ci.lo = quantile7(means, (1 - level) / 2);
  ci.hi = quantile7(means, (1 + level) / 2);
  return ci;
}

PearsonResult pearson(std::span<const double> x, std::span<const double> y) {
  const char* kWhere = "pearson";
  if (x.size() != y.size()) {
    throw Error(kWhere, "x has " + std::to_string(x.size()) + " values but y has " +
                            std::to_string(y.size()));
  }
  if (x.size() < 3) {
    throw Error(kWhere, "need at least 3 pairs for a p-value, got " + std::to_string(x.size()));
  }
  require_finite(x, kWhere, "x");
  require_finite(y, kWhere, "y");
  const double mx = mean_of(x), my = mean_of(y);
  const double sxx = ss_of(x, mx), syy = ss_of(y, my);
  if (sxx == 0) throw Error(kWhere, "x has zero variance: r is undefined");
  if (syy == 0) throw Error(kWhere, "y has zero variance: r is undefined");
  double sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my);
  PearsonResult res;
  res.r = std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
  res.df = double(x.size()) - 2;
  if (std::fabs(res.r) == 1) {
    res.t = std::copysign(std::numeric_limits<double>::infinity(), res.r);
    res.p = 0;
    return res;
  }
  res.t = res.r * std::sqrt(res.df / (1 - res.r * res.r));
  res.p = student_t_two_sided_p(res.t, res.df);
  return res;
}

WelchResult welch_t_test(std::span<const double> x, std::span<const double> y, double level) {
  const char* kWhere = "welch_t_test";
  if (x.size() < 2 || y.size() < 2) {
    throw Error(kWhere, "each sample needs at least 2 values, got " + std::to_string(x.size()) +
                            " and " + std::to_string(y.size()));
  }
  if (!(level > 0 && level < 1)) {
    throw Error(kWhere, "confidence level must lie in (0, 1), got " + std::to_string(level));
  }
  require_finite(x, kWhere, "x");
  require_finite(y, kWhere, "y");
  const double nx = double(x.size()), ny = double(y.size());
  WelchResult res;
  res.mean_x = mean_of(x);
  res.mean_y = mean_of(y);
  const double vx = ss_of(x, res.mean_x) / (nx - 1) / nx;  // squared standard error of mean_x
  const double vy = ss_of(y, res.mean_y) / (ny - 1) / ny;
  const double se2 = vx + vy;
  if (se2 == 0) throw Error(kWhere, "both samples have zero variance: t is undefined");
  const double se = std::sqrt(se2);
  res.t = (res.mean_x - res.mean_y) / se;
  res.df = se2 * se2 / (vx * vx / (nx - 1) + vy * vy / (ny - 1));
  res.p = student_t_two_sided_p(res.t, res.df);
  const double q = student_t_quantile((1 + level) / 2, res.df);
  res.ci_lo = res.mean_x - res.mean_y - q * se;
  res.ci_hi = res.mean_x - res.mean_y + q * se;
  return res;
}

double ks_exact_p(double d, size_t n, size_t m) {
  if (n == 0 || m == 0) throw Error("ks_exact_p", "empty sample");
  // D = max |i/n - j/m| over the lattice path of the merged sample = max |i m - j n| / (n m).
  // Count the monotone paths from (0,0) to (n,m) that touch |i m - j n| >= K somewhere
  // ("reached") among all C(n+m, n) paths; counting the extreme paths directly keeps tiny
  // p-values accurate (no 1 - P(D < d) cancellation). Counts stay below C(200,100) ~ 1e59 for
  // n m <= 10000, far inside double range.
  const double nm = double(n) * double(m);
  const double k = std::round(d * nm);
  if (k <= 0) return 1;
  std::vector<double> reached(m + 1), all(m + 1);
  for (size_t i = 0; i <= n; ++i) {
    for (size_t j = 0; j <= m; ++j) {
      double r = 0, tot = 0;
      if (i == 0 && j == 0) {
        tot = 1;
      } else {
        if (i > 0) r += reached[j], tot += all[j];
        if (j > 0) r += reached[j - 1], tot += all[j - 1];
      }
      if (std::fabs(double(i) * double(m) - double(j) * double(n)) >= k) r = tot;
      reached[j] = r;
      all[j] = tot;
    }
  }
  return std::clamp(reached[m] / all[m], 0.0, 1.0);
}

KsResult ks_two_sample(std::span<const double> x, std::span<const double> y) {
  const char* kWhere = "ks_two_sample";
  if (x.empty() || y.empty()) throw Error(kWhere, "both samples need at least one value");
  require_finite(x, kWhere, "x");
  require_finite(y, kWhere, "y");
  std::vector<double> a(x.begin(), x.end()), b(y.begin(), y.end());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const size_t n = a.size(), m = b.size();
  KsResult res;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    const double v = (j >= m || (i < n && a[i] <= b[j])) ? a[i] : b[j];
    while (i < n && a[i] <= v) ++i;
    while (j < m && b[j] <= v) ++j;
    res.d = std::max(res.d, std::fabs(double(i) / double(n) - double(j) / double(m)));
  }
  const double en = double(n) * double(m) / double(n + m);
  res.p_asymptotic = kolmogorov_sf(std::sqrt(en) * res.d);
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::sort(pooled.begin(), pooled.end());
  const bool ties = std::adjacent_find(pooled.begin(), pooled.end()) != pooled.end();
  if (double(n) * double(m) <= 10000 && !ties) res.p_exact = ks_exact_p(res.d, n, m);
  res.p = res.p_exact ? *res.p_exact : res.p_asymptotic;
  return res;
}

McNemarResult mcnemar(uint64_t b, uint64_t c) {
  McNemarResult res;
  res.b = b;
  res.c = c;
  const uint64_t n = b + c;
  if (n == 0) return res;
  const double diff = std::fabs(double(b) - double(c));
  res.chi2 = diff * diff / double(n);
  res.p_chi2 = chi_square1_sf(res.chi2);
  const double corrected = std::max(0.0, diff - 1);
  res.chi2_corrected = corrected * corrected / double(n);
  res.p_chi2_corrected = chi_square1_sf(res.chi2_corrected);
  // P(X <= min(b, c)) for X ~ Bin(n, 1/2), summed in log space.
  const uint64_t k = std::min(b, c);
  const double log_norm = std::lgamma(double(n) + 1) - double(n) * std::log(2.0);
  double cdf = 0;
  for (uint64_t i = 0; i <= k; ++i) {
    cdf += std::exp(log_norm - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1));
  }
  res.p_exact = std::min(1.0, 2 * cdf);
  return res;
}

McNemarResult mcnemar(const std::vector<bool>& first, const std::vector<bool>& second) {
  if (first.size() != second.size()) {
    throw Error("mcnemar", "paired outcomes differ in length: " + std::to_string(first.size()) +
                               " vs " + std::to_string(second.size()));
  }
  uint64_t b = 0, c = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    if (first[i] && !second[i]) ++b;
    if (!first[i] && second[i]) ++c;
  }
  return mcnemar(b, c);
}

}  // namespace ragform::eval

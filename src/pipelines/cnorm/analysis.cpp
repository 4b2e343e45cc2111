#include "pipelines/cnorm/analysis.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "base/error.h"

namespace ragform::cnorm {

std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    double rank = (double(i) + double(j)) / 2 + 1;  // mean of ranks i+1 .. j+1
    for (size_t t = i; t <= j; ++t) r[order[t]] = rank;
    i = j + 1;
  }
  return r;
}

std::optional<double> spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw Error("spearman", "x and y differ in length");
  if (x.size() < 2) return std::nullopt;
  auto rx = average_ranks(x), ry = average_ranks(y);
  double n = double(x.size()), mx = (n + 1) / 2, sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - mx);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - mx) * (ry[i] - mx);
  }
  if (sxx == 0 || syy == 0) return std::nullopt;
  return sxy / std::sqrt(sxx * syy);
}

namespace {

double quantile7(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double h = (double(v.size()) - 1) * q;
  size_t lo = size_t(std::floor(h));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - double(lo)) * (v[hi] - v[lo]);
}

}  // namespace

RankCorrelation bootstrap_spearman(const std::vector<double>& x,
                                   const std::vector<std::vector<double>>& acc, double level,
                                   size_t resamples, uint64_t seed) {
  if (!(level > 0 && level < 1)) throw Error("bootstrap", "level must be in (0, 1)");
  for (const auto& row : acc)
    if (row.size() != x.size()) throw Error("bootstrap", "an accuracy row has the wrong length");
  RankCorrelation out;
  out.n = x.size();
  if (acc.empty()) return out;
  const size_t n = acc.size();
  auto accuracy_of = [&](const std::vector<size_t>& idx) {
    std::vector<double> m(x.size(), 0.0);
    for (size_t i : idx)
      for (size_t c = 0; c < x.size(); ++c) m[c] += acc[i][c] / double(idx.size());
    return m;
  };
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t(0));
  out.rho = spearman(x, accuracy_of(all));
  std::mt19937_64 rng(seed);
  // Uniform index in [0, n) by rejection sampling (platform-independent, unlike
  // std::uniform_int_distribution).
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::vector<double> rhos;
  std::vector<size_t> idx(n);
  for (size_t b = 0; b < resamples; ++b) {
    for (auto& i : idx) {
      uint64_t u;
      do u = rng();
      while (u >= limit);
      i = size_t(u % n);
    }
    if (auto r = spearman(x, accuracy_of(idx))) rhos.push_back(*r);
  }
  out.resamples = rhos.size();
  if (!rhos.empty()) {
    out.lo = quantile7(rhos, (1 - level) / 2);
    out.hi = quantile7(rhos, (1 + level) / 2);
  }
  return out;
}

std::vector<size_t> best_by_sample_size(const std::vector<CandidateScore>& candidates) {
  if (candidates.empty()) throw Error("cnorm", "no candidates");
  const size_t S = candidates[0].abs.size();
  for (const auto& c : candidates)
    if (c.abs.size() != S || S == 0)
      throw Error("cnorm",
                  "stability of f* needs every candidate scored on the same S prompts "
                  "(an exhaustive search)");
  std::vector<size_t> best;
  for (size_t s = 1; s <= S; ++s) {
    size_t b = 0;
    double bm = -1;
    for (size_t c = 0; c < candidates.size(); ++c) {
      double m = 0;
      for (size_t t = 0; t < s; ++t) m += candidates[c].abs[t];
      m /= double(s);
      if (m > bm) {
        bm = m;
        b = c;
      }
    }
    best.push_back(b);
  }
  return best;
}

}  // namespace ragform::cnorm

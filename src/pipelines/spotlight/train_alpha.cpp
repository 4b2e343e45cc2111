// Coordinate search of the learned alpha's weights (see train_alpha.h).
#include "pipelines/spotlight/train_alpha.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "base/error.h"

namespace ragform::spotlight {

namespace {

// recall@K and AUC of one question's gold sentences under scores R (ranking: R descending,
// ties in document order, as top_sentences ranks).
std::pair<double, double> question_scores(const AlphaQuestion& q, const std::vector<double>& R,
                                          int K) {
  std::vector<size_t> order(R.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return R[a] > R[b]; });
  std::vector<bool> is_gold(R.size(), false);
  for (size_t g : q.gold) is_gold[g] = true;
  size_t hits = 0;
  for (size_t r = 0; r < order.size() && r < size_t(K); ++r) hits += is_gold[order[r]];
  const size_t others = R.size() - q.gold.size();
  double auc = 0;
  for (size_t g : q.gold) {
    double below = 0;
    for (size_t t = 0; t < R.size(); ++t)
      if (!is_gold[t]) below += R[g] > R[t] ? 1.0 : R[g] == R[t] ? 0.5 : 0.0;
    auc += others ? below / double(others) : 1.0;
  }
  // Gold sentences cut off before scoring count as missed and as ranked last.
  return {double(hits) / double(q.n_gold), auc / double(q.n_gold)};
}

AlphaObjective mean_objective(const std::vector<AlphaQuestion>& qs,
                              const std::function<std::vector<double>(const AlphaQuestion&)>& alpha,
                              const ScoreParams& p, int K) {
  AlphaObjective o;
  if (qs.empty()) return o;
  for (const AlphaQuestion& q : qs) {
    auto [recall, auc] = question_scores(q, relevance_for_alpha(q.terms, alpha(q), p), K);
    o.recall += recall;
    o.auc += auc;
  }
  o.recall /= double(qs.size());
  o.auc /= double(qs.size());
  return o;
}

// A permutation of 0..n-1 from rng, the same on every standard library (std::shuffle's
// algorithm is not specified).
std::vector<size_t> visiting_order(size_t n, std::mt19937_64& rng) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[size_t(rng() % i)]);
  return order;
}

}  // namespace

AlphaQuestion alpha_question(AlphaTerms terms, const std::vector<std::pair<int, int>>& gold) {
  AlphaQuestion q;
  q.n_gold = gold.size();
  if (q.n_gold == 0) throw Error("spotlight", "a training question needs gold sentences");
  for (size_t t = 0; t < terms.sent_ids.size(); ++t)
    if (std::find(gold.begin(), gold.end(), terms.sent_ids[t]) != gold.end()) q.gold.push_back(t);
  q.terms = std::move(terms);
  return q;
}

bool AlphaObjective::better_than(const AlphaObjective& o) const {
  constexpr double eps = 1e-12;  // sums of the same terms in another order are not better
  if (recall > o.recall + eps) return true;
  return recall >= o.recall - eps && auc > o.auc + eps;
}

AlphaObjective alpha_objective(const std::vector<AlphaQuestion>& qs, const AlphaWeights& w,
                               const ScoreParams& p, int K) {
  return mean_objective(
      qs, [&](const AlphaQuestion& q) { return learned_alpha(q.terms.features, w); }, p, K);
}

AlphaObjective fixed_alpha_objective(const std::vector<AlphaQuestion>& qs, Alpha kind,
                                     const ScoreParams& p, int K) {
  if (kind == Alpha::Learned) throw Error("spotlight", "a learned alpha has weights");
  return mean_objective(
      qs,
      [&](const AlphaQuestion& q) {
        const size_t n = q.terms.idf.size();
        std::vector<double> alpha(n, n ? 1.0 / n : 0.0);
        if (kind == Alpha::Uniform) return alpha;
        double z = 0;
        for (size_t i = 0; i < n; ++i) z += (alpha[i] = q.terms.idf[i]);
        if (z > 0)
          for (double& a : alpha) a /= z;
        return alpha;
      },
      p, K);
}

AlphaFit fit_alpha(const std::vector<AlphaQuestion>& qs, const ScoreParams& p,
                   const FitOptions& o) {
  if (qs.empty()) throw Error("spotlight train-alpha", "no training question");
  if (o.K < 1) throw UsageError("spotlight train-alpha", "K must be >= 1");
  if (!(o.step > 0 && o.min_step > 0 && o.bound > 0))
    throw UsageError("spotlight train-alpha", "step, min step and bound must be > 0");
  AlphaFit fit;
  fit.weights = idf_alpha_weights();
  fit.objective = alpha_objective(qs, fit.weights, p, o.K);
  fit.evaluations = 1;
  std::mt19937_64 rng(o.seed);
  for (double step = o.step; step >= o.min_step && fit.passes < o.max_passes;) {
    bool improved = false;
    for (size_t k : visiting_order(kAlphaFeatures, rng)) {
      for (double dir : {1.0, -1.0}) {
        AlphaWeights cand = fit.weights;
        cand[k] = std::clamp(cand[k] + dir * step, -o.bound, o.bound);
        if (cand[k] == fit.weights[k]) continue;
        const AlphaObjective obj = alpha_objective(qs, cand, p, o.K);
        ++fit.evaluations;
        if (obj.better_than(fit.objective)) {
          fit.weights = cand;
          fit.objective = obj;
          improved = true;
          break;
        }
      }
    }
    ++fit.passes;
    if (o.on_pass) o.on_pass(fit.passes, step, fit.objective);
    if (!improved) step /= 2;
  }
  return fit;
}

}  // namespace ragform::spotlight

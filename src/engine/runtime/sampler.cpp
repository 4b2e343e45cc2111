#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace ragform::runtime {

Sampler::Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) {
  if (p.top_p <= 0.0 || p.top_p > 1.0)
    throw UsageError("sampler", "top_p must be in (0, 1], got " + std::to_string(p.top_p));
  if (p.top_k < 0)
    throw UsageError("sampler", "top_k must be >= 0, got " + std::to_string(p.top_k));
}

int32_t Sampler::argmax(const float* logits, int n_vocab) {
  int32_t best = 0;
  for (int i = 1; i < n_vocab; ++i)
    if (logits[i] > logits[best]) best = i;
  return best;
}

int32_t Sampler::sample(const float* logits, int n_vocab) {
  if (p_.temperature <= 0.0) return argmax(logits, n_vocab);
  cand_.clear();
  for (int i = 0; i < n_vocab; ++i) cand_.emplace_back(logits[i], i);
  auto by_logit = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t k = (p_.top_k > 0 && p_.top_k < n_vocab) ? size_t(p_.top_k) : cand_.size();
  std::partial_sort(cand_.begin(), cand_.begin() + long(k), cand_.end(), by_logit);
  cand_.resize(k);
  // Softmax with temperature over the candidates.
  const double mx = cand_[0].first;
  std::vector<double> prob(k);
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += prob[i] = std::exp((cand_[i].first - mx) / p_.temperature);
  for (auto& x : prob) x /= sum;
  // Nucleus: the smallest prefix whose mass reaches top_p.
  size_t keep = k;
  if (p_.top_p < 1.0) {
    double cum = 0;
    for (size_t i = 0; i < k; ++i) {
      cum += prob[i];
      if (cum >= p_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double mass = 0;
  for (size_t i = 0; i < keep; ++i) mass += prob[i];
  double u = std::uniform_real_distribution<double>(0.0, mass)(rng_);
  for (size_t i = 0; i < keep; ++i) {
    u -= prob[i];
    if (u <= 0) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

namespace {
// A row's largest logit and the log of its softmax denominator relative to it (in double).
struct RowNorm {
  float max;
  double log_sum;
};
RowNorm row_norm(const float* logits, int n_vocab) {
  float mx = logits[0];
  for (int i = 1; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - mx);
  return {mx, std::log(sum)};
}
}  // namespace

double log_softmax_at(const float* logits, int n_vocab, int32_t id) {
  const RowNorm r = row_norm(logits, n_vocab);
  return double(logits[id]) - r.max - r.log_sum;
}

std::vector<std::pair<int32_t, double>> top_log_softmax(const float* logits, int n_vocab, int n,
                                                        int32_t id, double* id_logprob) {
  const RowNorm r = row_norm(logits, n_vocab);
  if (id_logprob && id >= 0 && id < n_vocab) *id_logprob = double(logits[id]) - r.max - r.log_sum;
  const size_t k = size_t(std::clamp(n, 0, n_vocab));
  // "a before b": likelier, ties toward the lower id. The k best so far are a heap whose top is
  // the worst of them, so a row costs O(V log k) and no V-sized buffer (a listing of 20 per
  // token over a 262k vocabulary ran a sort of a million bytes per position).
  const auto before = [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  };
  std::vector<int32_t> best;
  best.reserve(k);
  for (int32_t i = 0; i < n_vocab && k > 0; ++i) {
    if (best.size() < k) {
      best.push_back(i);
      std::push_heap(best.begin(), best.end(), before);
    } else if (before(i, best.front())) {
      std::pop_heap(best.begin(), best.end(), before);
      best.back() = i;
      std::push_heap(best.begin(), best.end(), before);
    }
  }
  std::sort_heap(best.begin(), best.end(), before);
  std::vector<std::pair<int32_t, double>> out;
  // The same expression as log_softmax_at, so a token's own entry equals its log-prob.
  for (int32_t b : best) out.emplace_back(b, double(logits[b]) - r.max - r.log_sum);
  return out;
}

}  // namespace ragform::runtime

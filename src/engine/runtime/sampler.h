// Token sampling: greedy (temperature <= 0) or seeded temperature / top-k / top-p sampling.
// Ties break toward the lower token id (as the fixtures' top-k orderings do).
#pragma once
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace ragform::runtime {

struct SamplingParams {
  double temperature = 0.0;  // <= 0: greedy
  int top_k = 0;             // 0 = whole vocabulary
  double top_p = 1.0;        // nucleus mass, (0, 1]
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingParams& p);
  // Picks a token from one row of logits (n_vocab values).
  int32_t sample(const float* logits, int n_vocab);
  static int32_t argmax(const float* logits, int n_vocab);

 private:
  SamplingParams p_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> cand_;
};

// log-softmax of one logits row at `id` (sum in double for stability).
double log_softmax_at(const float* logits, int n_vocab, int32_t id);

// The `n` most likely tokens of one logits row (at most n_vocab), most likely first, ties toward
// the lower id, each with its log-softmax as log_softmax_at gives it: an OpenAI completion's
// top_logprobs.
// With `id` and `id_logprob`: also log_softmax_at(logits, n_vocab, id), from the same pass over the
// row's normaliser (a listing's token and its alternatives: one exp per logit, not two).
std::vector<std::pair<int32_t, double>> top_log_softmax(const float* logits, int n_vocab, int n,
                                                        int32_t id = -1,
                                                        double* id_logprob = nullptr);

}  // namespace ragform::runtime

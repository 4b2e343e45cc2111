// Drift with position: RoPE frequency factors and sliding windows only show on long prompts, and
// llama.cpp's references stop at 68 tokens. So the engine runs a 320-token sequence (a 256-token
// prefill, then 64 single-token decode steps) and is compared at every position with the plain
// scalar reference of reference_forward.h (double precision, the formulas written out). The
// tolerances are the measured agreement with a margin; each test also shows that the reference
// with the feature switched off (no rope_freqs, no window) is far outside them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "engine/runtime/context.h"
#include "reference_forward.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

struct Case {
  const char* model;
  double tol_hidden, tol_logits;  // max |engine - reference| over every position / last logits
  bool break_rope_freqs, break_window;
};

struct Engine {
  std::vector<std::vector<float>> hidden;  // [T][n_embd], final norm output
  std::vector<float> logits_last;
};

// A deterministic token sequence: BOS then pseudo-random ids below min(n_vocab, 512).
std::vector<int32_t> tokens_for(int n_vocab, int bos, int n) {
  std::mt19937 rng(42);
  std::vector<int32_t> t{bos};
  while (int(t.size()) < n) t.push_back(int32_t(rng() % uint32_t(std::min(n_vocab, 512))));
  return t;
}

Engine run_engine(const model::Model& m, const std::vector<int32_t>& ids, int n_prefill) {
  Context ctx(m, {1024, KvType::F32, nullptr});
  Engine e;
  SeqInput in;
  in.seq = ctx.new_sequence();
  in.hidden_layer = m.hp().n_layer;
  in.logits = LogitsMode::None;
  const int E = m.hp().n_embd;
  for (size_t b = 0; b < ids.size();) {
    const size_t n = b == 0 ? size_t(n_prefill) : 1;
    in.tokens.assign(ids.begin() + long(b), ids.begin() + long(b + n));
    if (b + n == ids.size()) in.logits = LogitsMode::Last;
    auto out = ctx.eval({in});
    for (size_t r = 0; r < n; ++r)
      e.hidden.emplace_back(out[0].hidden.begin() + long(r * E),
                            out[0].hidden.begin() + long((r + 1) * E));
    if (b + n == ids.size()) e.logits_last = out[0].logits;
    b += n;
  }
  return e;
}

double max_diff_hidden(const Engine& e, const testing::ReferenceOutput& r) {
  double d = 0;
  for (size_t t = 0; t < r.final_hidden.size(); ++t)
    for (size_t i = 0; i < r.final_hidden[t].size(); ++i)
      d = std::max(d, std::fabs(e.hidden[t][i] - r.final_hidden[t][i]));
  return d;
}

class PositionDrift : public ::testing::TestWithParam<Case> {};

TEST_P(PositionDrift, EngineFollowsScalarReferenceAt320Tokens) {
  const Case c = GetParam();
  REQUIRE_SHARED(path, std::string("fixtures/models/") + c.model + ".gguf");
  auto m = model::Model::load(path.string());
  const int bos = int(m->file().get_int("tokenizer.ggml.bos_token_id", 1));
  const auto ids = tokens_for(m->hp().n_vocab, bos, 320);
  const Engine e = run_engine(*m, ids, 256);
  ASSERT_EQ(e.hidden.size(), ids.size());
  testing::ReferenceForward ref(*m);
  const auto r = ref.run(ids);
  const double dh = max_diff_hidden(e, r);
  double dl = 0;
  for (size_t i = 0; i < r.logits_last.size(); ++i)
    dl = std::max(dl, std::fabs(e.logits_last[i] - r.logits_last[i]));
  std::printf("[measured] %s 320 tokens: max|dhidden| %.3g, last max|dlogit| %.3g\n", c.model, dh,
              dl);
  EXPECT_LE(dh, c.tol_hidden);
  EXPECT_LE(dl, c.tol_logits);

  if (c.break_rope_freqs || c.break_window) {
    ref.use_rope_freqs = !c.break_rope_freqs;
    ref.use_window = !c.break_window;
    const double broken = max_diff_hidden(e, ref.run(ids));
    std::printf("[measured] %s reference without %s: max|dhidden| %.3g\n", c.model,
                c.break_rope_freqs ? "rope_freqs" : "the sliding window", broken);
    EXPECT_GT(broken, 10 * c.tol_hidden);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PositionDrift,
                         // tiny-llama31's output matrix is F16: the engine rounds the final
                         // hidden state to F16 for it (as ggml), the reference does not, so its
                         // logits bar is the F16 one. tiny-gemma3: F16 GELU table.
                         ::testing::Values(Case{"tiny-llama31", 1e-5, 5e-3, true, false},
                                           Case{"tiny-phi3", 1e-4, 1e-4, false, false},
                                           Case{"tiny-gemma3", 5e-3, 1e-2, false, true}),
                         [](const auto& param_info) {
                           std::string s = param_info.param.model;
                           for (auto& ch : s)
                             if (!std::isalnum((unsigned char)ch)) ch = '_';
                           return s;
                         });

}  // namespace
}  // namespace ragform::runtime

// Feeding a Context in the runtime fixture tests (context_fixture_test,
// batch_invariance_fixture_test): seeded random prompts, and a prompt's logits when it arrives in
// chunks (a chunk of 1 is a decode step), which the tests compare across batch shapes.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/runtime/context.h"

namespace ragform::runtime::testing {

// n token ids drawn uniformly from [first, n_vocab) by a generator seeded with `seed`.
inline std::vector<int32_t> random_tokens(int n, int n_vocab, uint32_t seed, int32_t first = 0) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(first, n_vocab - 1);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

// Logits of every position of `toks`, fed to a fresh sequence in chunks of the given sizes (which
// must add up to the prompt); the sequence is freed afterwards.
inline std::vector<float> logits_in_chunks(Context& ctx, const std::vector<int32_t>& toks,
                                           const std::vector<int>& chunks) {
  const int seq = ctx.new_sequence();
  std::vector<float> all;
  size_t at = 0;
  for (int c : chunks) {
    SeqInput in;
    in.seq = seq;
    in.tokens.assign(toks.begin() + long(at), toks.begin() + long(at + size_t(c)));
    in.logits = LogitsMode::All;
    auto out = ctx.eval({in});
    all.insert(all.end(), out[0].logits.begin(), out[0].logits.end());
    at += size_t(c);
  }
  EXPECT_EQ(at, toks.size());
  ctx.free_sequence(seq);
  return all;
}

}  // namespace ragform::runtime::testing

// Batch invariance of the forward pass (issue 23): a prompt's logits are the same bits whether it
// runs alone, in one forward pass with 15 other sequences, prefilled in one piece, in chunks or
// token by token (decode), and on 1 or 2 threads — for every weight type of the shared tinyq
// fixtures (F32, F16, BF16, Q8_0, Q4_0, Q4_K_M) and both KV cache types, with the engine's default
// options. The kernels return vec_dot's bits for any number of tokens (ops/gemm.h), attention
// reduces each query row over its own keys in one order, and norms and SwiGLU work per element or
// per row.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "context_feed.h"
#include "engine/model/engine_options.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

const char* const kModels[] = {"tinyq-f32.gguf",  "tinyq-f16.gguf",  "tinyq-bf16.gguf",
                               "tinyq-q8_0.gguf", "tinyq-q4_0.gguf", "tinyq-q4_k_m.gguf"};

using testing::logits_in_chunks;
using testing::random_tokens;

// Prompts from [1, n_vocab): the draws this test was written with.
constexpr int32_t kFirstToken = 1;

// The first index where a and b differ bitwise, or -1.
long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return long(i);
  return -1;
}

TEST(BatchInvarianceFixture, DefaultEngineOptionsAreTheExactF16Path) {
  // The default is part of the contract: an F16 model's numbers are its own unless the
  // approximate int16 products are asked for.
  EXPECT_EQ(EngineOptions{}.f16_gemm, ops::F16Gemm::exact);
  EXPECT_EQ(ops::MatmulPolicy{}.f16, ops::F16Gemm::exact);
}

TEST(BatchInvarianceFixture, SamePromptSameLogitsAloneInABatchAndInDecode) {
  for (const char* name : kModels) {
    REQUIRE_SHARED(path, std::string("fixtures/models/") + name);
    EngineOptions eo;
    eo.threads = 2;
    auto m = model::Model::load(path.string(), eo);
    ASSERT_EQ(m->policy().f16, ops::F16Gemm::exact) << name;
    const int V = m->hp().n_vocab, N = 37;
    const auto prompt = random_tokens(N, V, 7, kFirstToken);
    for (KvType kv : {KvType::F32, KvType::F16}) {
      SCOPED_TRACE(std::string(name) + (kv == KvType::F16 ? " kv f16" : " kv f32"));
      Context ctx(*m, {128, kv, nullptr, 2});
      const auto alone = logits_in_chunks(ctx, prompt, {N});
      ASSERT_EQ(alone.size(), size_t(N) * size_t(V));

      // In one forward pass with 15 other sequences of other lengths (prompt at index 5).
      std::vector<int> seqs;
      std::vector<SeqInput> batch;
      for (int s = 0; s < 16; ++s) {
        SeqInput in;
        in.seq = ctx.new_sequence();
        seqs.push_back(in.seq);
        in.tokens = s == 5 ? prompt : random_tokens(3 + 5 * s, V, 100 + uint32_t(s), kFirstToken);
        in.logits = LogitsMode::All;
        batch.push_back(in);
      }
      const auto out = ctx.eval(batch);
      EXPECT_EQ(first_difference(out[5].logits, alone), -1) << "in a batch of 16";
      for (int s : seqs) ctx.free_sequence(s);

      // Prefill in chunks (across the 16-token GEMM threshold), then decode token by token.
      EXPECT_EQ(first_difference(logits_in_chunks(ctx, prompt, {20, 1, 16}), alone), -1)
          << "chunks";
      EXPECT_EQ(
          first_difference(logits_in_chunks(ctx, prompt, std::vector<int>(size_t(N), 1)), alone),
          -1)
          << "decode";

      // One thread.
      Context one(*m, {128, kv, nullptr, 1});
      EXPECT_EQ(first_difference(logits_in_chunks(one, prompt, {N}), alone), -1) << "1 thread";
    }
  }
}

}  // namespace
}  // namespace ragform::runtime

// Sequences decoded together, as runtime::generate and `bench --parallel` decode them: N sequences
// take one token each per forward pass, so every matrix product sees N rows (the several-token
// GEMV up to ops::kGemvQ8MaxTokens / kGemvKMaxTokens, the GEMM beyond). Each sequence's decode
// logits must be the bits it gets when decoded alone, for every N across those thresholds and
// every weight type of the shared tinyq fixtures (rows of 256 and 768, so the Q4_K/Q6_K GEMV runs
// too).
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

const char* const kModels[] = {"tinyq-f16.gguf", "tinyq-bf16.gguf", "tinyq-q8_0.gguf",
                               "tinyq-q4_0.gguf", "tinyq-q4_k_m.gguf"};

using testing::random_tokens;

constexpr int kPrompt = 9, kSteps = 5;

// Decode logits of each sequence: prompts prefilled one by one, then kSteps passes in which
// every sequence of `together` takes its next token. together = 1 decodes each alone.
std::vector<std::vector<float>> decode_logits(Context& ctx,
                                              const std::vector<std::vector<int32_t>>& toks,
                                              int together) {
  const size_t n = toks.size();
  std::vector<std::vector<float>> out(n);
  for (size_t g = 0; g < n; g += size_t(together)) {
    const size_t end = std::min(n, g + size_t(together));
    std::vector<int> seqs;
    for (size_t i = g; i < end; ++i) {
      seqs.push_back(ctx.new_sequence());
      SeqInput in;
      in.seq = seqs.back();
      in.tokens.assign(toks[i].begin(), toks[i].begin() + kPrompt);
      in.logits = LogitsMode::None;
      ctx.eval({in});
    }
    for (int s = 0; s < kSteps; ++s) {
      std::vector<SeqInput> step;
      for (size_t i = g; i < end; ++i) {
        SeqInput in;
        in.seq = seqs[i - g];
        in.tokens = {toks[i][size_t(kPrompt + s)]};
        step.push_back(in);
      }
      const auto res = ctx.eval(step);
      for (size_t i = g; i < end; ++i)
        out[i].insert(out[i].end(), res[i - g].logits.begin(), res[i - g].logits.end());
    }
    for (int id : seqs) ctx.free_sequence(id);
  }
  return out;
}

TEST(DecodeTogetherFixture, EachSequenceGetsItsAloneBitsForAnyN) {
  for (const char* name : kModels) {
    REQUIRE_SHARED(path, std::string("fixtures/models/") + name);
    EngineOptions eo;
    eo.threads = 2;
    auto m = model::Model::load(path.string(), eo);
    const int V = m->hp().n_vocab;
    std::vector<std::vector<int32_t>> toks;
    for (int i = 0; i < 16; ++i)
      toks.push_back(random_tokens(kPrompt + kSteps, V, 300 + uint32_t(i), 1));
    Context ctx(*m, {64, KvType::F32, nullptr, 2});
    const auto alone = decode_logits(ctx, toks, 1);
    for (int n : {2, 3, 4, 5, 8, 16}) {
      const auto together = decode_logits(ctx, toks, n);
      for (size_t i = 0; i < toks.size(); ++i) {
        ASSERT_EQ(together[i].size(), alone[i].size());
        ASSERT_EQ(std::memcmp(together[i].data(), alone[i].data(), alone[i].size() * sizeof(float)),
                  0)
            << name << ": sequence " << i << " decoded with " << n << " together";
      }
    }
  }
}

}  // namespace
}  // namespace ragform::runtime

// Context over the shared tinyq-qwen2-f32 model (4 query heads, 2 kv heads, head_dim 64: the
// GQA attention kernel's vector path): the KV cache's tiled key layout and its growth must give
// the same results however the tokens arrive — one batch, chunks that cross 64-position tiles and
// the 256-position growth step, token-by-token decode, after truncation, next to another
// sequence — and an F16 cache stays close to the F32 one.
#include <gtest/gtest.h>

#include <cmath>

#include "context_feed.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

using testing::logits_in_chunks;
using testing::random_tokens;

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

TEST(ContextFixture, ChunkingDecodeTruncationAndBatchingAgree) {
  REQUIRE_SHARED(path, "fixtures/models/tinyq-qwen2-f32.gguf");
  auto m = model::Model::load(path.string());
  const int N = 300;
  const auto toks = random_tokens(N, m->hp().n_vocab, 5);
  Context ctx(*m, {400, KvType::F32, nullptr});
  const auto one = logits_in_chunks(ctx, toks, {N});
  // Chunks crossing tile (64) and growth (256) boundaries, then token-by-token decode.
  std::vector<int> chunks{63, 2, 130, 70};
  for (int i = 0; i < 35; ++i) chunks.push_back(1);
  const auto pieces = logits_in_chunks(ctx, toks, chunks);
  // Different batch shapes only regroup the same per-row float operations.
  EXPECT_LE(max_abs_diff(one, pieces), 1e-4);

  // Truncate to 200 and re-feed the rest: same logits as the first pass.
  const int seq = ctx.new_sequence();
  SeqInput in;
  in.seq = seq;
  in.tokens = toks;
  in.logits = LogitsMode::None;
  ctx.eval({in});
  ctx.truncate(seq, 200);
  in.tokens.assign(toks.begin() + 200, toks.end());
  in.logits = LogitsMode::All;
  // Another sequence in the same batch must not disturb this one.
  SeqInput other;
  other.seq = ctx.new_sequence();
  other.tokens = random_tokens(77, m->hp().n_vocab, 6);
  auto out = ctx.eval({in, other});
  const std::vector<float> tail(one.begin() + 200L * m->hp().n_vocab, one.end());
  EXPECT_LE(max_abs_diff(out[0].logits, tail), 1e-4);
}

TEST(ContextFixture, AttentionTapRowsAreSoftmaxRowsAcrossTiles) {
  REQUIRE_SHARED(path, "fixtures/models/tinyq-qwen2-f32.gguf");
  auto m = model::Model::load(path.string());
  Context ctx(*m, {256, KvType::F32, nullptr});
  SeqInput in;
  in.seq = ctx.new_sequence();
  in.tokens = random_tokens(130, m->hp().n_vocab, 7);
  in.logits = LogitsMode::None;
  in.attn_layers = {0, m->hp().n_layer - 1};
  in.attn_queries = {0, 63, 64, 129};
  auto out = ctx.eval({in});
  ASSERT_EQ(out[0].attention.size(), 8u);
  for (const auto& ar : out[0].attention) {
    ASSERT_EQ(ar.heads.size(), size_t(m->hp().n_head));
    for (const auto& h : ar.heads) {
      ASSERT_EQ(h.size(), size_t(ar.query_pos + 1));
      double s = 0.0;
      for (float p : h) {
        EXPECT_GE(p, 0.0f);
        s += p;
      }
      EXPECT_NEAR(s, 1.0, 1e-5) << "layer " << ar.layer << " query " << ar.query_pos;
    }
  }
  EXPECT_EQ(out[0].attention[0].heads[0][0], 1.0f);  // the first token attends only to itself

  // The last layer computes attention only from the first row anyone reads: a pass reading the
  // last logits and tapping rows 64 and 129 must give the same rows and logits as a full pass.
  const int last = m->hp().n_layer - 1;
  SeqInput full = in, part = in;
  full.seq = ctx.new_sequence();
  full.logits = LogitsMode::All;
  full.attn_layers = {last};
  full.attn_queries = {64, 129};
  part.seq = ctx.new_sequence();
  part.logits = LogitsMode::Last;
  part.attn_layers = {last};
  part.attn_queries = {129, 64};
  auto both = ctx.eval({full, part});
  const size_t V = size_t(m->hp().n_vocab);
  ASSERT_EQ(both[1].logits.size(), V);
  const std::vector<float> last_row(both[0].logits.end() - long(V), both[0].logits.end());
  EXPECT_EQ(both[1].logits, last_row);
  ASSERT_EQ(both[1].attention.size(), 2u);
  EXPECT_EQ(both[1].attention[0].query_pos, 129);
  EXPECT_EQ(both[1].attention[0].heads, both[0].attention[1].heads);
  EXPECT_EQ(both[1].attention[1].heads, both[0].attention[0].heads);
}

TEST(ContextFixture, F16CacheStaysCloseToF32) {
  REQUIRE_SHARED(path, "fixtures/models/tinyq-qwen2-f32.gguf");
  auto m = model::Model::load(path.string());
  const auto toks = random_tokens(150, m->hp().n_vocab, 8);
  Context c32(*m, {256, KvType::F32, nullptr}), c16(*m, {256, KvType::F16, nullptr});
  const auto a = logits_in_chunks(c32, toks, {100, 50});
  const auto b = logits_in_chunks(c16, toks, {100, 50});
  // F16 rounding of K, V, Q and P (2^-11 relative) on O(1) logits.
  const double d = max_abs_diff(a, b);
  EXPECT_LE(d, 2e-2);
  EXPECT_GT(d, 0.0);  // the cache really is F16
}

}  // namespace
}  // namespace ragform::runtime

// Prefix reuse is exact (issue 21): a prompt whose first tokens come from the prefix cache gives
// the same bits — logits of every computed row and the attention rows of every layer — as the same
// prompt prefilled from its first token in a context without a cache. On the trained F32
// stories260K, the Q8_0 tinyq fixture and the GQA Qwen2 Q8_0 fixture, with F32 and F16 KV caches,
// for prefixes that end inside a 64-position key tile and on its boundary. Also: generate() with
// the cache returns what it returns without, computing fewer tokens.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "engine/runtime/generate.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

const char* const kModels[] = {"stories260K.gguf", "tinyq-q8_0.gguf", "tinyq-qwen2-q8_0.gguf"};

std::vector<int32_t> random_tokens(int n, int n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(1, n_vocab - 1);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = d(rng);
  return t;
}

struct Taps {
  std::vector<float> logits;                  // rows of positions from..n-1
  std::vector<std::vector<float>> attention;  // last row, every layer and head
};

// Prefills `toks` in a fresh sequence, reading logits of positions >= from and the last row's
// attention in every layer. With reuse: starts from the cache (and checks it reused `from`).
Taps run(Context& ctx, const std::vector<int32_t>& toks, int from, bool reuse) {
  const int seq = ctx.new_sequence();
  int start = 0;
  if (reuse) {
    start = ctx.reuse_prefix(seq, toks);
    EXPECT_EQ(start, from);
  }
  SeqInput in;
  in.seq = seq;
  in.tokens.assign(toks.begin() + start, toks.end());
  in.logits = LogitsMode::All;
  for (int l = 0; l < ctx.model().hp().n_layer; ++l) in.attn_layers.push_back(l);
  auto out = ctx.eval({in});
  Taps t;
  const size_t V = size_t(ctx.model().hp().n_vocab);
  t.logits.assign(out[0].logits.begin() + long(size_t(from - start) * V), out[0].logits.end());
  for (auto& a : out[0].attention)
    for (auto& h : a.heads) t.attention.push_back(h);
  if (reuse) ctx.cache_prefix(seq);
  ctx.free_sequence(seq);
  return t;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(PrefixCacheFixture, ReusedRowsGiveTheSameBitsAsAFullPrefill) {
  for (const char* name : kModels) {
    for (KvType kv : {KvType::F32, KvType::F16}) {
      SCOPED_TRACE(std::string(name) + (kv == KvType::F16 ? " f16 kv" : " f32 kv"));
      REQUIRE_SHARED(path, std::string("fixtures/models/") + name);
      auto m = model::Model::load(path.string());
      const int V = m->hp().n_vocab;
      ContextParams plain{512, kv, nullptr};
      ContextParams cached = plain;
      cached.prefix_cache = std::make_shared<PrefixCache>(size_t(64) << 20);
      Context ref(*m, plain), ctx(*m, cached);
      const auto a = random_tokens(200, V, 1);
      run(ctx, a, 0, true);  // nothing cached yet: computes everything, then caches it
      for (int shared : {100, 128, 1}) {
        auto b = random_tokens(170, V, uint32_t(shared) + 7);
        std::copy(a.begin(), a.begin() + shared, b.begin());
        if (b[size_t(shared)] == a[size_t(shared)]) b[size_t(shared)] ^= 1;
        SCOPED_TRACE("shared prefix " + std::to_string(shared));
        Taps want = run(ref, b, shared, false);
        Taps got = run(ctx, b, shared, true);
        EXPECT_TRUE(same_bits(want.logits, got.logits));
        ASSERT_EQ(want.attention.size(), got.attention.size());
        for (size_t i = 0; i < want.attention.size(); ++i)
          ASSERT_TRUE(same_bits(want.attention[i], got.attention[i])) << "attention row " << i;
      }
      // The same prompt again: everything but its last token comes from the cache.
      Taps want = run(ref, a, 199, false);
      Taps got = run(ctx, a, 199, true);
      EXPECT_TRUE(same_bits(want.logits, got.logits));
      PrefillCounts c = ctx.prefill_counts();
      EXPECT_EQ(c.submitted, 200 + 3 * 170 + 200);
      EXPECT_EQ(c.computed, 200 + (70 + 42 + 169) + 1);
      EXPECT_LE(cached.prefix_cache->stats().bytes, cached.prefix_cache->max_bytes());
    }
  }
}

TEST(PrefixCacheFixture, GenerateWithTheCacheMatchesGenerateWithout) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  auto m = model::Model::load(path.string());
  auto tk = tok::Tokenizer::from_gguf(m->file());
  ContextParams plain{512, KvType::F32, nullptr};
  ContextParams cached = plain;
  cached.prefix_cache = std::make_shared<PrefixCache>(size_t(64) << 20);
  Context ref(*m, plain), ctx(*m, cached);
  // A gold-position sweep in miniature: one passage moved through a fixed list.
  const std::vector<std::string> passages{"Lily had a red ball.", "Tom liked to run fast.",
                                          "The sun was hot.", "A cat sat on the mat."};
  const std::string gold = "The dog was named Max.";
  std::vector<std::vector<int32_t>> prompts;
  for (size_t g = 0; g <= passages.size(); ++g) {
    std::string p = "Once upon a time there was a little girl.";
    for (size_t i = 0; i <= passages.size(); ++i) {
      if (i == g) p += " " + gold;
      if (i < passages.size()) p += " " + passages[i];
    }
    prompts.push_back(tk->encode(p + " The dog was named", true, false));
  }
  prompts.push_back(prompts[2]);  // identical prompts (two variants that render alike)
  GenerateOptions o;
  o.max_tokens = 12;
  o.ignore_eos = true;
  auto want = generate(ref, *tk, prompts, o);
  auto got = generate(ctx, *tk, prompts, o);
  ASSERT_EQ(want.size(), got.size());
  int64_t submitted = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].ids, got[i].ids) << "prompt " << i;
    EXPECT_EQ(want[i].prompt_tokens, got[i].prompt_tokens);
    submitted += want[i].prompt_tokens;
  }
  EXPECT_EQ(ref.prefill_counts().submitted, submitted);
  EXPECT_EQ(ref.prefill_counts().computed, submitted);
  EXPECT_EQ(ctx.prefill_counts().submitted, submitted);
  EXPECT_LT(ctx.prefill_counts().computed, submitted * 3 / 4);
  // A second call finds every prompt cached: one token each.
  got = generate(ctx, *tk, prompts, o);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(want[i].ids, got[i].ids);
  EXPECT_EQ(ctx.prefill_counts().submitted, 2 * submitted);
}

// eval_prompt reuses only rows whose outputs the input does not read: every row of a cached prompt
// but the last for last-token logits, none for all logits or hidden states, the rows before the
// first attention query for an attention tap; the outputs equal a context without a cache.
TEST(PrefixCacheFixture, EvalPromptReusesOnlyRowsNobodyReads) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  auto m = model::Model::load(path.string());
  ContextParams plain{512, KvType::F32, nullptr};
  ContextParams cached = plain;
  cached.prefix_cache = std::make_shared<PrefixCache>(size_t(64) << 20);
  Context ref(*m, plain), ctx(*m, cached);
  const auto toks = random_tokens(150, m->hp().n_vocab, 7);
  const auto eval_both = [&](SeqInput in) {
    ScopedSequence a(ref), b(ctx);
    in.seq = a.id();
    SeqOutput want = ref.eval_prompt(in);
    in.seq = b.id();
    const int64_t before = ctx.prefill_counts().computed;
    SeqOutput got = ctx.eval_prompt(in);
    EXPECT_EQ(want.logits, got.logits);
    EXPECT_EQ(want.logit_positions, got.logit_positions);
    EXPECT_EQ(want.hidden, got.hidden);
    EXPECT_EQ(want.attention.size(), got.attention.size());
    for (size_t i = 0; i < want.attention.size() && i < got.attention.size(); ++i) {
      EXPECT_EQ(want.attention[i].query_pos, got.attention[i].query_pos);
      EXPECT_EQ(want.attention[i].heads, got.attention[i].heads);
    }
    return ctx.prefill_counts().computed - before;
  };
  SeqInput in;
  in.tokens = toks;
  EXPECT_EQ(eval_both(in), 150);  // nothing cached yet
  EXPECT_EQ(eval_both(in), 1);    // last-token logits: all but the last row reused
  in.logits = LogitsMode::All;
  EXPECT_EQ(eval_both(in), 150);
  in.logits = LogitsMode::None;
  in.hidden_layer = 2;
  EXPECT_EQ(eval_both(in), 150);
  in.hidden_layer = -1;
  in.attn_layers = {0, m->hp().n_layer - 1};
  in.attn_queries = {120, 100, 149};
  EXPECT_EQ(eval_both(in), 50);  // rows 100.. computed
}

}  // namespace
}  // namespace ragform::runtime

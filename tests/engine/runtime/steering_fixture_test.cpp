// Attention steering through the whole forward pass (Context::set_steering, steering.h) on the
// fixture models: the engine against the plain scalar reference of reference_forward.h with the
// same rule, over 320 tokens (a 256-token prefill, then 64 decode steps), alone and batched with
// another sequence; the rule off and rescale:1 give the bits of a run without steering on every
// architecture; the prefix cache never hands steered rows to an unsteered prompt (or back).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "engine/runtime/context.h"
#include "reference_forward.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

std::vector<int32_t> tokens_for(int n_vocab, int bos, int n, uint32_t seed = 42) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t{bos};
  while (int(t.size()) < n) t.push_back(int32_t(rng() % uint32_t(std::min(n_vocab, 512))));
  return t;
}

int bos_of(const model::Model& m) {
  return int(m.file().get_int("tokenizer.ggml.bos_token_id", 1));
}

Steering steering(Steering::Rule rule, float value, int n_layer) {
  Steering s;
  s.rule = rule;
  s.value = value;
  s.spans = {{10, 60}, {100, 180}};
  s.layers = default_layers(n_layer);
  return s;
}

struct EngineRun {
  std::vector<std::vector<float>> hidden;  // [T][n_embd], final norm output
  std::vector<float> logits_last;
};

// 256 tokens of prefill then one token per step; with `other`, every eval also carries a second,
// unsteered sequence fed the same way (a batch of two).
EngineRun run_engine(const model::Model& m, const std::vector<int32_t>& ids, const Steering& st,
                     const std::vector<int32_t>* other = nullptr) {
  Context ctx(m, {1024, KvType::F32, nullptr});
  EngineRun e;
  SeqInput in, oin;
  in.seq = ctx.new_sequence();
  ctx.set_steering(in.seq, st);
  in.hidden_layer = m.hp().n_layer;
  in.logits = LogitsMode::None;
  if (other) {
    oin.seq = ctx.new_sequence();
    oin.logits = LogitsMode::Last;
  }
  const int E = m.hp().n_embd;
  for (size_t b = 0; b < ids.size();) {
    const size_t n = b == 0 ? 256 : 1;
    in.tokens.assign(ids.begin() + long(b), ids.begin() + long(b + n));
    if (b + n == ids.size()) in.logits = LogitsMode::Last;
    std::vector<SeqInput> batch{in};
    if (other) {
      // The other sequence's rows come first, so the steered rows sit at other offsets.
      oin.tokens.assign(other->begin() + long(b), other->begin() + long(b + n));
      batch.insert(batch.begin(), oin);
    }
    auto out = ctx.eval(batch);
    const SeqOutput& o = out[other ? 1 : 0];
    for (size_t r = 0; r < n; ++r)
      e.hidden.emplace_back(o.hidden.begin() + long(r * E), o.hidden.begin() + long((r + 1) * E));
    if (b + n == ids.size()) e.logits_last = o.logits;
    b += n;
  }
  return e;
}

double max_diff_hidden(const EngineRun& e, const testing::ReferenceOutput& r) {
  double d = 0;
  for (size_t t = 0; t < r.final_hidden.size(); ++t)
    for (size_t i = 0; i < r.final_hidden[t].size(); ++i)
      d = std::max(d, std::fabs(e.hidden[t][i] - r.final_hidden[t][i]));
  return d;
}

struct Case {
  const char* model;
  double tol_hidden, tol_logits;  // position_drift_fixture_test's bars
};

class SteeringDrift : public ::testing::TestWithParam<Case> {};

TEST_P(SteeringDrift, EngineFollowsSteeredReferenceAt320Tokens) {
  const Case c = GetParam();
  REQUIRE_SHARED(path, std::string("fixtures/models/") + c.model + ".gguf");
  auto m = model::Model::load(path.string());
  const auto ids = tokens_for(m->hp().n_vocab, bos_of(*m), 320);
  const auto other = tokens_for(m->hp().n_vocab, bos_of(*m), 320, 7);
  testing::ReferenceForward ref(*m);
  const auto plain = ref.run(ids);
  Steering each = steering(Steering::Reallocate, 0.0f, m->hp().n_layer);
  each.spans = {{10, 60}, {60, 100}, {100, 180}};  // per-span shares, two spans adjacent
  each.shares = {0.3f, 0.1f, 0.4f};
  Steering redistribute = each;  // Found in the Middle's eq. 5-6
  redistribute.rule = Steering::Redistribute;
  redistribute.shares = {0.7f, 0.05f, 0.25f};
  Steering pasta = steering(Steering::Rescale, 3.0f, m->hp().n_layer);
  pasta.prompt_end = 300;  // PASTA leaves the keys of positions 300.. (as if generated) unscaled
  for (const Steering& st :
       {pasta, steering(Steering::Reallocate, 0.6f, m->hp().n_layer), each, redistribute}) {
    SCOPED_TRACE(st.key());
    const EngineRun e = run_engine(*m, ids, st);
    ASSERT_EQ(e.hidden.size(), ids.size());
    ref.steer = &st;
    const auto r = ref.run(ids);
    ref.steer = nullptr;
    const double dh = max_diff_hidden(e, r);
    double dl = 0;
    for (size_t i = 0; i < r.logits_last.size(); ++i)
      dl = std::max(dl, std::fabs(e.logits_last[i] - r.logits_last[i]));
    const double moved = max_diff_hidden(e, plain);
    std::printf("[measured] %s %s: max|dhidden| %.3g, last max|dlogit| %.3g; vs unsteered %.3g\n",
                c.model, st.key().c_str(), dh, dl, moved);
    EXPECT_LE(dh, c.tol_hidden);
    EXPECT_LE(dl, c.tol_logits);
    EXPECT_GT(moved, 10 * c.tol_hidden);  // the steering is visible well above the tolerance
    // In a batch of two, the steered sequence's numbers are the same bits.
    const EngineRun batched = run_engine(*m, ids, st, &other);
    EXPECT_EQ(batched.hidden, e.hidden);
    EXPECT_EQ(batched.logits_last, e.logits_last);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SteeringDrift,
                         ::testing::Values(Case{"tiny-llama31", 1e-5, 5e-3},
                                           Case{"tiny-phi3", 1e-4, 1e-4},
                                           Case{"tiny-gemma3", 5e-3, 1e-2}),
                         [](const auto& param_info) {
                           std::string s = param_info.param.model;
                           for (auto& ch : s)
                             if (!std::isalnum((unsigned char)ch)) ch = '_';
                           return s;
                         });

// All logits of a 200-token prompt (prefill) and of 8 decode steps after it.
std::vector<float> all_logits(const model::Model& m, const std::vector<int32_t>& ids,
                              const Steering* st, KvType kv) {
  Context ctx(m, {512, kv, nullptr});
  SeqInput in;
  in.seq = ctx.new_sequence();
  if (st) ctx.set_steering(in.seq, *st);
  in.logits = LogitsMode::All;
  in.tokens.assign(ids.begin(), ids.end() - 8);
  std::vector<float> out = ctx.eval({in})[0].logits;
  for (size_t t = ids.size() - 8; t < ids.size(); ++t) {
    in.tokens = {ids[t]};
    auto o = ctx.eval({in})[0].logits;
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

TEST(SteeringOff, BitIdenticalOnEveryArchitecture) {
  for (const char* name : {"stories260K", "tiny-llama", "tiny-llama31", "tiny-phi3", "tiny-qwen2",
                           "tiny-gemma3", "tinyq-q4_k_m"}) {
    SCOPED_TRACE(name);
    REQUIRE_SHARED(path, std::string("fixtures/models/") + name + ".gguf");
    auto m = model::Model::load(path.string());
    const auto ids = tokens_for(m->hp().n_vocab, bos_of(*m), 208);
    for (KvType kv : {KvType::F32, KvType::F16}) {
      const auto base = all_logits(*m, ids, nullptr, kv);
      Steering off = steering(Steering::Off, 3.0f, m->hp().n_layer);
      Steering one = steering(Steering::Rescale, 1.0f, m->hp().n_layer);
      EXPECT_EQ(all_logits(*m, ids, &off, kv), base);
      EXPECT_EQ(all_logits(*m, ids, &one, kv), base);
      // And an active rule does change them (the comparison above can fail).
      Steering on = steering(Steering::Rescale, 1.5f, m->hp().n_layer);
      EXPECT_NE(all_logits(*m, ids, &on, kv), base);
    }
  }
}

TEST(SteeringPrefixCache, SteeredRowsAreNeverReusedUnsteered) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-llama31.gguf");
  auto m = model::Model::load(path.string());
  const auto ids = tokens_for(m->hp().n_vocab, bos_of(*m), 200);
  const Steering st = steering(Steering::Reallocate, 0.5f, m->hp().n_layer);
  auto fresh = [&](const Steering* s) {
    Context ctx(*m, {512, KvType::F32, nullptr});
    ScopedSequence seq(ctx);
    if (s) ctx.set_steering(seq.id(), *s);
    SeqInput in;
    in.seq = seq.id();
    in.tokens = ids;
    return ctx.eval({in})[0].logits;
  };
  const auto plain = fresh(nullptr), steered = fresh(&st);
  ASSERT_NE(plain, steered);

  ContextParams cp{512, KvType::F32, nullptr};
  cp.prefix_cache = std::make_shared<PrefixCache>(size_t(64) << 20);
  Context ctx(*m, cp);
  auto cached = [&](const Steering* s) {
    ScopedSequence seq(ctx);
    if (s) ctx.set_steering(seq.id(), *s);
    SeqInput in;
    in.seq = seq.id();
    in.tokens = ids;
    const int64_t before = ctx.prefill_counts().computed;
    auto logits = ctx.eval_prompt(in).logits;
    return std::pair{logits, ctx.prefill_counts().computed - before};
  };
  auto [l1, c1] = cached(&st);  // steered first: its rows go into the cache
  EXPECT_EQ(l1, steered);
  EXPECT_EQ(c1, int64_t(ids.size()));
  auto [l2, c2] = cached(nullptr);  // the same tokens unsteered: nothing reused
  EXPECT_EQ(l2, plain);
  EXPECT_EQ(c2, int64_t(ids.size()));
  auto [l3, c3] = cached(&st);  // steered again: the steered rows are reused, same bits
  EXPECT_EQ(l3, steered);
  EXPECT_EQ(c3, 1);
  auto [l4, c4] = cached(nullptr);
  EXPECT_EQ(l4, plain);
  EXPECT_EQ(c4, 1);
}

}  // namespace
}  // namespace ragform::runtime

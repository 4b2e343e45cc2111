// Steering inside the attention kernel (runtime/attention.h, steering.h): every SIMD tier this CPU
// runs against attention_reference's own statement of the rule, at several hundred keys, for
// prefill-sized and decode-sized query blocks, GQA and MHA, F32 and F16 caches, a sliding window,
// a head subset; taps report the steered weights; and a steered sequence's bits do not depend on
// the sequences batched with it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/ops/fp16.h"
#include "engine/runtime/attention.h"

namespace ragform::runtime {
namespace {

struct Case {
  AttnShape shape;
  int pos0 = 0, n_rows = 1;
  bool f16 = false;
  std::vector<float> q, k32, v32;
  std::vector<uint16_t> k16, v16;
  std::vector<int> tap_rows;
  const Steering* steer = nullptr;

  Case(AttnShape s, int p0, int n, bool half, uint32_t seed)
      : shape(s), pos0(p0), n_rows(n), f16(half) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const size_t n_keys = size_t(p0 + n);
    q.resize(size_t(n) * size_t(s.q_dim()));
    for (float& x : q) x = nd(rng);
    k32.assign(key_cache_elems(int(n_keys), s.kv_dim()), 0.0f);
    k16.assign(k32.size(), 0);
    std::vector<float> krow(size_t(s.kv_dim()));
    for (int j = 0; j < int(n_keys); ++j) {
      for (float& x : krow) x = nd(rng);
      store_key(k32.data(), j, krow.data(), s.n_head_kv, s.head_dim);
      store_key(k16.data(), j, krow.data(), s.n_head_kv, s.head_dim);
    }
    v32.resize(n_keys * size_t(s.kv_dim()));
    for (float& x : v32) x = nd(rng);
    for (float x : v32) v16.push_back(ops::fp32_to_fp16(x));
    for (int r = 0; r < n; r += 7) tap_rows.push_back(r);
  }
  KvView kv() const {
    return f16 ? KvView{nullptr, nullptr, k16.data(), v16.data()}
               : KvView{k32.data(), v32.data(), nullptr, nullptr};
  }
};

struct Result {
  std::vector<float> out;
  std::vector<std::vector<std::vector<float>>> taps;  // [tap][head][keys]
};

AttnSeq make_seq(const Case& c, Result& r) {
  r.out.assign(size_t(c.n_rows) * size_t(c.shape.q_dim()), -1.0f);
  r.taps.assign(c.tap_rows.size(), {});
  AttnSeq s;
  s.kv = c.kv();
  s.q = c.q.data();
  s.out = r.out.data();
  s.pos0 = c.pos0;
  s.n_rows = c.n_rows;
  s.steer = c.steer;
  for (size_t t = 0; t < c.tap_rows.size(); ++t) {
    r.taps[t].assign(size_t(c.shape.n_head),
                     std::vector<float>(size_t(c.pos0 + c.tap_rows[t] + 1), -1.0f));
    s.taps.push_back(AttnTap{c.tap_rows[t], r.taps[t].data()});
  }
  return s;
}

std::vector<SimdLevel> tiers() {
  std::vector<SimdLevel> t{SimdLevel::Scalar};
  if (cpu_simd_level() >= SimdLevel::Avx2) t.push_back(SimdLevel::Avx2);
  if (cpu_simd_level() >= SimdLevel::Avx512) t.push_back(SimdLevel::Avx512);
  return t;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0.0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

Result run_reference(const Case& c) {
  Result r;
  attention_reference(c.shape, make_seq(c, r));
  return r;
}

Result run_kernel(const Case& c, SimdLevel lv, ThreadPool& pool) {
  Result r;
  AttnScratch scratch;
  attention(c.shape, {make_seq(c, r)}, pool, scratch, lv);
  return r;
}

Steering make_steering(Steering::Rule rule, float value, std::vector<int> heads) {
  Steering s;
  s.rule = rule;
  s.value = value;
  s.spans = {{5, 40}, {120, 190}, {300, 330}};  // the last one ends inside the query block
  s.layers = {0};
  s.heads = std::move(heads);
  return s;
}

// Each tier against the reference, and the steering visible: the span's tapped mass moves.
void check(Case& c, const Steering& st, const std::string& what) {
  SCOPED_TRACE(what);
  c.steer = nullptr;
  const Result plain = run_reference(c);
  c.steer = &st;
  const Result ref = run_reference(c);
  ThreadPool pool(2);
  for (SimdLevel lv : tiers()) {
    SCOPED_TRACE(simd_name(lv));
    const Result got = run_kernel(c, lv, pool);
    // As attention_test: float summation order (F32), a probability rounded to the neighbouring
    // half (F16); the steered factors add one float rounding per weight.
    EXPECT_LE(max_diff(got.out, ref.out), c.f16 ? 5.0 / 2048 : 2e-5);
    for (size_t t = 0; t < ref.taps.size(); ++t)
      for (size_t h = 0; h < ref.taps[t].size(); ++h) {
        EXPECT_LE(max_diff(got.taps[t][h], ref.taps[t][h]), 2e-6);
        double sum = 0.0;
        for (float p : got.taps[t][h]) sum += p;
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
  }
  // The steered heads' rows after the first span moved; unsteered heads did not.
  double moved = 0.0, unsteered = 0.0;
  for (size_t t = 0; t < ref.taps.size(); ++t)
    for (size_t h = 0; h < ref.taps[t].size(); ++h) {
      const double d = max_diff(ref.taps[t][h], plain.taps[t][h]);
      double& m = st.steers_head(int(h)) ? moved : unsteered;
      m = std::max(m, d);
    }
  EXPECT_GT(moved, 1e-3);
  EXPECT_EQ(unsteered, 0.0);
}

TEST(SteeringAttention, KernelFollowsReferencePrefillAndDecode) {
  for (bool f16 : {false, true})
    for (auto rule : {Steering::Rescale, Steering::Reallocate}) {
      const float value = rule == Steering::Rescale ? 4.0f : 0.7f;
      const std::string tag = std::string(f16 ? "f16 " : "f32 ") +
                              (rule == Steering::Rescale ? "rescale" : "reallocate");
      // Prefill: 60 new rows after 290 cached positions; GQA 7:1 with head_dim 64.
      Case prefill({14, 2, 64, 0.125f}, 290, 60, f16, 7);
      check(prefill, make_steering(rule, value, {}), tag + " prefill GQA");
      // Decode: one row at position 400; MHA, head_dim 16, only heads 1 and 3 steered.
      Case decode({4, 4, 16, 0.25f}, 400, 1, f16, 11);
      check(decode, make_steering(rule, value, {1, 3}), tag + " decode MHA heads 1,3");
      // A sliding window of 128: the first spans lie outside it for the late rows.
      Case window({8, 2, 32, 0.18f}, 300, 40, f16, 13);
      window.shape.window = 128;
      check(window, make_steering(rule, value, {}), tag + " sliding window");
    }
}

// Per-span shares (reallocate:S1,S2,...): spans kept apart, one adjacent to another.
Steering per_span(std::vector<int> heads) {
  Steering s = make_steering(Steering::Reallocate, 0.0f, std::move(heads));
  s.spans = {{5, 40}, {40, 60}, {120, 190}, {300, 330}};
  s.shares = {0.3f, 0.1f, 0.25f, 0.2f};
  return s;
}

TEST(SteeringAttention, PerSpanSharesKernelFollowsReference) {
  for (bool f16 : {false, true}) {
    const std::string tag = f16 ? "f16 per-span" : "f32 per-span";
    Case prefill({14, 2, 64, 0.125f}, 290, 60, f16, 7);
    check(prefill, per_span({}), tag + " prefill GQA");
    Case decode({4, 4, 16, 0.25f}, 400, 1, f16, 11);
    check(decode, per_span({1, 3}), tag + " decode MHA heads 1,3");
    Case window({8, 2, 32, 0.18f}, 300, 40, f16, 13);
    window.shape.window = 128;
    check(window, per_span({}), tag + " sliding window");
  }
}

// Redistribute (Found in the Middle, eq. 5-6) and rescale with generated keys (PASTA leaves keys
// at or past the prompt's end unscaled): the kernel against the reference in prefill, decode and
// a sliding window.
TEST(SteeringAttention, RedistributeAndPastaDecodeKernelFollowsReference) {
  for (bool f16 : {false, true}) {
    Steering red = per_span({});
    red.rule = Steering::Redistribute;
    red.shares = {0.05f, 0.6f, 0.0f, 0.35f};
    Steering pasta = make_steering(Steering::Rescale, 3.0f, {});
    pasta.prompt_end = 320;  // keys 320.. are generated: inside the last span and after it
    for (const auto& [st, name] : {std::pair{&red, "redistribute"}, std::pair{&pasta, "pasta"}}) {
      const std::string tag = std::string(f16 ? "f16 " : "f32 ") + name;
      Case prefill({14, 2, 64, 0.125f}, 290, 60, f16, 7);
      check(prefill, *st, tag + " prefill GQA");
      Case decode({4, 4, 16, 0.25f}, 400, 1, f16, 11);
      check(decode, *st, tag + " decode MHA");
      Case window({8, 2, 32, 0.18f}, 300, 40, f16, 13);
      window.shape.window = 128;
      // Redistribute moves nothing in a row that sees one document: in the window, two must be.
      Steering in_window = *st;
      if (st == &red) in_window.spans = {{5, 40}, {215, 250}, {250, 280}, {300, 325}};
      check(window, in_window, tag + " sliding window");
    }
  }
}

// Redistribute keeps each row's total on the spans and touches no other key: the tapped row
// against the unsteered one (the rule itself, not only agreement with the reference).
TEST(SteeringAttention, RedistributeKeepsTheDocumentsTotal) {
  Steering st = per_span({});
  st.rule = Steering::Redistribute;
  st.shares = {1.0f, 2.0f, 3.0f, 4.0f};
  Case c({4, 2, 16, 0.25f}, 340, 1, false, 31);
  ThreadPool pool(2);
  for (SimdLevel lv : tiers()) {
    SCOPED_TRACE(simd_name(lv));
    c.steer = nullptr;
    const Result plain = run_kernel(c, lv, pool);
    c.steer = &st;
    const Result got = run_kernel(c, lv, pool);
    for (size_t h = 0; h < got.taps[0].size(); ++h) {
      const auto& w = got.taps[0][h];
      const auto& w0 = plain.taps[0][h];
      double total = 0.0, total0 = 0.0;
      std::vector<char> in(w.size(), 0);
      for (const TokenSpan& sp : st.spans)
        for (int j = sp.begin; j < sp.end; ++j) in[size_t(j)] = 1;
      for (size_t j = 0; j < w.size(); ++j) {
        if (in[j]) {
          total += w[j], total0 += w0[j];
        } else {
          EXPECT_EQ(w[j], w0[j]) << j;
        }
      }
      EXPECT_NEAR(total, total0, 1e-6);
      for (size_t i = 0; i < st.spans.size(); ++i) {
        double m = 0.0;
        for (int j = st.spans[i].begin; j < st.spans[i].end; ++j) m += w[size_t(j)];
        EXPECT_NEAR(m, total0 * st.shares[i] / 10.0, 1e-6) << i;
      }
    }
  }
}

// Each span's tapped mass is its share in a row after all of them (the rule, not only agreement
// with the reference).
TEST(SteeringAttention, PerSpanSharesReachTheirSpans) {
  const Steering st = per_span({});
  Case c({4, 2, 16, 0.25f}, 340, 1, false, 31);
  c.steer = &st;
  ThreadPool pool(2);
  for (SimdLevel lv : tiers()) {
    SCOPED_TRACE(simd_name(lv));
    const Result got = run_kernel(c, lv, pool);
    for (const auto& head : got.taps[0])
      for (size_t i = 0; i < st.spans.size(); ++i) {
        double m = 0.0;
        for (int j = st.spans[i].begin; j < st.spans[i].end; ++j) m += head[size_t(j)];
        EXPECT_NEAR(m, st.shares[i], 1e-5);
      }
  }
}

void batch_invariant(const Steering& st);

TEST(SteeringAttention, BitsIndependentOfTheBatch) {
  for (const Steering& st : {make_steering(Steering::Reallocate, 0.6f, {0, 5}), per_span({0, 5})})
    batch_invariant(st);
}

void batch_invariant(const Steering& st) {
  SCOPED_TRACE(st.key());
  const AttnShape shape{8, 2, 32, 0.18f};
  Case a(shape, 310, 30, false, 21), b(shape, 200, 64, false, 22), c(shape, 350, 1, false, 23);
  a.steer = &st;
  c.steer = &st;
  ThreadPool pool(2);
  for (SimdLevel lv : tiers()) {
    SCOPED_TRACE(simd_name(lv));
    Result alone_a = run_kernel(a, lv, pool), alone_c = run_kernel(c, lv, pool);
    Result ra, rb, rc;
    AttnScratch scratch;
    attention(shape, {make_seq(b, rb), make_seq(a, ra), make_seq(c, rc)}, pool, scratch, lv);
    EXPECT_EQ(ra.out, alone_a.out);
    EXPECT_EQ(ra.taps, alone_a.taps);
    EXPECT_EQ(rc.out, alone_c.out);
  }
}

}  // namespace
}  // namespace ragform::runtime

// The attention kernel (runtime/attention.h): every SIMD tier this CPU runs, against the scalar
// per-(row, head) reference, for GQA 7:1 (Qwen2.5-0.5B: 14 q heads, 2 kv heads, head_dim 64), 1:1,
// odd lengths, prefill and decode offsets, several sequences per call, F32 and F16 caches, plus a
// hand-computed case and the attention tap rows.
#include "engine/runtime/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "engine/ops/fp16.h"

namespace ragform::runtime {
namespace {

// One sequence's data: cache of pos0 + n_rows positions, n_rows new query rows.
struct Case {
  AttnShape shape;
  int pos0 = 0, n_rows = 1;
  bool f16 = false;
  std::vector<float> q, k32, v32;
  std::vector<uint16_t> k16, v16;
  std::vector<int> tap_rows;

  Case(AttnShape s, int p0, int n, bool half, float spread, uint32_t seed)
      : shape(s), pos0(p0), n_rows(n), f16(half) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, spread);
    const size_t n_keys = size_t(p0 + n);
    q.resize(size_t(n) * size_t(s.q_dim()));
    for (float& x : q) x = nd(rng);
    // K in the cache's tiled layout (stale lanes past the last key hold junk on purpose), V rows.
    k32.assign(key_cache_elems(int(n_keys), s.kv_dim()), 1e30f);
    k16.assign(k32.size(), 0x7bff);
    std::vector<float> krow(size_t(s.kv_dim()));
    for (int j = 0; j < int(n_keys); ++j) {
      for (float& x : krow) x = nd(rng);
      store_key(k32.data(), j, krow.data(), s.n_head_kv, s.head_dim);
      store_key(k16.data(), j, krow.data(), s.n_head_kv, s.head_dim);
    }
    v32.resize(n_keys * size_t(s.kv_dim()));
    for (float& x : v32) x = nd(rng);
    for (float x : v32) v16.push_back(ops::fp32_to_fp16(x));
  }
  KvView kv() const {
    return f16 ? KvView{nullptr, nullptr, k16.data(), v16.data()}
               : KvView{k32.data(), v32.data(), nullptr, nullptr};
  }
};

// Output and tap rows of one run.
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
  for (size_t t = 0; t < c.tap_rows.size(); ++t) {
    const int n_keys = c.shape.causal ? c.pos0 + c.tap_rows[t] + 1 : c.pos0 + c.n_rows;
    r.taps[t].assign(size_t(c.shape.n_head), std::vector<float>(size_t(n_keys), -1.0f));
    s.taps.push_back(AttnTap{c.tap_rows[t], r.taps[t].data()});
  }
  return s;
}

Result run_reference(const Case& c) {
  Result r;
  attention_reference(c.shape, make_seq(c, r));
  return r;
}

Result run_kernel(const Case& c, SimdLevel level, ThreadPool& pool) {
  Result r;
  AttnScratch scratch;
  attention(c.shape, {make_seq(c, r)}, pool, scratch, level);
  return r;
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

// Every tier vs the reference: outputs within float rounding of a 64..128-term sum, tap rows
// within a few ulps of a probability.
void check_all_tiers(const Case& c, const std::string& what, double f32_tol = 2e-5) {
  const Result ref = run_reference(c);
  ThreadPool pool(2);
  for (SimdLevel lv : tiers()) {
    const Result got = run_kernel(c, lv, pool);
    SCOPED_TRACE(what + " tier " + simd_name(lv));
    // F32: summation order only. F16: the probabilities are rounded to halves before P V, and a
    // last-ulp difference in p can round it to the neighbouring half (2^-11 relative), so one
    // output may move by up to 2^-11 * sum_j p_j |v_j| (|v| < 5 here).
    const double tol = lv == SimdLevel::Scalar ? 0.0 : c.f16 ? 5.0 / 2048 : f32_tol;
    EXPECT_LE(max_diff(got.out, ref.out), tol);
    ASSERT_EQ(got.taps.size(), ref.taps.size());
    for (size_t t = 0; t < ref.taps.size(); ++t)
      for (size_t h = 0; h < ref.taps[t].size(); ++h) {
        EXPECT_LE(max_diff(got.taps[t][h], ref.taps[t][h]), lv == SimdLevel::Scalar ? 0.0 : 2e-6);
        double sum = 0.0;
        for (float p : got.taps[t][h]) sum += p;
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
  }
}

TEST(Attention, HandComputedTwoKeys) {
  // One head, head_dim 16 (so every tier runs its vector path): q = e0, k0 = e0, k1 = 0, scale 1
  // -> scores [1, 0] -> weights [e/(e+1), 1/(e+1)]; out = w0 v0 + w1 v1.
  AttnShape s{1, 1, 16, 1.0f};
  std::vector<float> q(16, 0.0f), k(key_cache_elems(2, 16), 0.0f), v(32, 0.0f), out(16);
  q[0] = 1.0f;
  k[key_index(0, 0, 0, 1, 16)] = 1.0f;
  for (int d = 0; d < 16; ++d) v[size_t(d)] = float(d + 1), v[size_t(16 + d)] = float(-d);
  const double w0 = std::exp(1.0) / (std::exp(1.0) + 1.0), w1 = 1.0 / (std::exp(1.0) + 1.0);
  ThreadPool pool(1);
  for (SimdLevel lv : tiers()) {
    std::vector<std::vector<float>> heads(1, std::vector<float>(2));
    AttnSeq seq;
    seq.kv = KvView{k.data(), v.data(), nullptr, nullptr};
    seq.q = q.data();
    seq.out = out.data();
    seq.pos0 = 1;
    seq.n_rows = 1;
    seq.taps = {AttnTap{0, heads.data()}};
    AttnScratch scratch;
    attention(s, {seq}, pool, scratch, lv);
    SCOPED_TRACE(simd_name(lv));
    EXPECT_NEAR(heads[0][0], w0, 1e-6);
    EXPECT_NEAR(heads[0][1], w1, 1e-6);
    for (int d = 0; d < 16; ++d) EXPECT_NEAR(out[size_t(d)], w0 * (d + 1) + w1 * (-d), 1e-5);
  }
}

TEST(Attention, Gqa7to1PrefillF32) {
  Case c({14, 2, 64, 0.125f}, 0, 37, false, 1.0f, 1);
  c.tap_rows = {0, 5, 36};
  check_all_tiers(c, "7:1 prefill");
}

TEST(Attention, Gqa7to1PrefillF16) {
  Case c({14, 2, 64, 0.125f}, 0, 37, true, 1.0f, 2);
  c.tap_rows = {36, 1};
  check_all_tiers(c, "7:1 prefill f16");
}

TEST(Attention, Gqa7to1DecodeAfterLongCache) {
  for (bool f16 : {false, true}) {
    Case c({14, 2, 64, 0.125f}, 300, 1, f16, 1.0f, 3);
    c.tap_rows = {0};
    check_all_tiers(c, f16 ? "decode f16" : "decode f32");
  }
}

TEST(Attention, OneToOneOddLengthsAndContinuation) {
  // 1:1 heads, a continuation chunk (pos0 > 0) of odd length crossing key-tile boundaries.
  Case c({4, 4, 64, 0.125f}, 61, 70, false, 1.5f, 4);
  c.tap_rows = {0, 69};
  check_all_tiers(c, "1:1");
  Case h({4, 4, 64, 0.125f}, 61, 70, true, 1.5f, 5);
  check_all_tiers(h, "1:1 f16");
}

TEST(Attention, PeakedScoresAndUnusualHeadDims) {
  // Large logits (scale 1) make the softmax nearly one-hot and exercise exp's underflow path.
  Case big({2, 1, 64, 1.0f}, 10, 9, false, 3.0f, 6);
  big.tap_rows = {8};
  check_all_tiers(big, "peaked");
  // head_dim 80 (AVX-512: 64 + a 16-wide tail block), 8 (AVX2 only), 12 (scalar only).
  for (int hd : {80, 8, 12}) {
    Case c({6, 2, hd, 1.0f / std::sqrt(float(hd))}, 5, 19, hd == 8, 1.0f, uint32_t(7 + hd));
    c.tap_rows = {18};
    check_all_tiers(c, "head_dim " + std::to_string(hd));
  }
}

// Sliding window (gemma3's local layers): every tier against the reference, prefill rows across
// key tiles and a decode row far past the window; tapped weights are exactly 0 before the window
// and the window's weights sum to 1.
TEST(Attention, SlidingWindow) {
  for (bool f16 : {false, true}) {
    AttnShape sh{4, 2, 64, 0.125f};
    sh.window = 16;
    Case c(sh, 50, 40, f16, 1.5f, 21);
    c.tap_rows = {0, 13, 39};
    check_all_tiers(c, f16 ? "window f16" : "window f32");
    Case d(sh, 300, 1, f16, 1.5f, 22);
    d.tap_rows = {0};
    check_all_tiers(d, f16 ? "window decode f16" : "window decode f32");
    ThreadPool pool(1);
    for (SimdLevel lv : tiers()) {
      const Result r = run_kernel(c, lv, pool);
      for (size_t t = 0; t < c.tap_rows.size(); ++t) {
        const int pos = c.pos0 + c.tap_rows[t];
        for (const auto& head : r.taps[t]) {
          double in_window = 0;
          for (int j = 0; j <= pos; ++j) {
            if (pos - j >= sh.window) {
              EXPECT_EQ(head[size_t(j)], 0.0f) << simd_name(lv) << " key " << j;
            } else {
              in_window += head[size_t(j)];
            }
          }
          EXPECT_NEAR(in_window, 1.0, 1e-5);
        }
      }
    }
  }
}

// A local layer reads only its window: with every key and value before the tile that holds the
// first row's first visible key set to NaN (0 x NaN would poison any sum that touched them), each
// tier still equals the reference computed on the clean cache, and the tapped weights there are
// exact zeros. Prefill rows over several work items, then a decode row.
TEST(Attention, SlidingWindowReadsOnlyTheWindowsTiles) {
  for (bool f16 : {false, true}) {
    AttnShape sh{4, 2, 64, 0.125f};
    sh.window = 100;
    for (int n_rows : {70, 1}) {
      Case c(sh, 1000, n_rows, f16, 1.5f, 23);
      c.tap_rows = {0, n_rows - 1};
      const Result ref = run_reference(c);
      const int untouched = (c.pos0 - sh.window + 1) / kKeyTile * kKeyTile;  // 896
      for (int j = 0; j < untouched; ++j)
        for (int h = 0; h < sh.n_head_kv; ++h)
          for (int d = 0; d < sh.head_dim; ++d) {
            const size_t ki = key_index(j, h, d, sh.n_head_kv, sh.head_dim);
            c.k32[ki] = std::nanf("");
            c.k16[ki] = 0x7e00;  // a half NaN
            const size_t vi = size_t(j) * size_t(sh.kv_dim()) + size_t(h * sh.head_dim + d);
            c.v32[vi] = std::nanf("");
            c.v16[vi] = 0x7e00;
          }
      ThreadPool pool(2);
      for (SimdLevel lv : tiers()) {
        SCOPED_TRACE(std::string(f16 ? "f16 " : "f32 ") + simd_name(lv) + " rows " +
                     std::to_string(n_rows));
        const Result got = run_kernel(c, lv, pool);
        const double tol = lv == SimdLevel::Scalar ? 0.0 : f16 ? 5.0 / 2048 : 2e-5;
        EXPECT_LE(max_diff(got.out, ref.out), tol);
        for (float x : got.out) ASSERT_FALSE(std::isnan(x));
        for (size_t t = 0; t < c.tap_rows.size(); ++t)
          for (size_t h = 0; h < got.taps[t].size(); ++h) {
            for (int j = 0; j < untouched; ++j) ASSERT_EQ(got.taps[t][h][size_t(j)], 0.0f);
            EXPECT_LE(max_diff(got.taps[t][h], ref.taps[t][h]),
                      lv == SimdLevel::Scalar ? 0.0 : 2e-6);
          }
      }
    }
  }
}

// Long contexts (issue 45): Gemma 3 270M's shape (4 query heads on 1 KV head, head_dim 256), a
// global layer and a local one (window 512), query rows ending at positions 300, 2,000 and 9,000.
// On the SIMD tiers these rows take the online-softmax kernel (F32 cache) and must stay within
// the two-pass reference's tolerance; tapped rows stay exact softmax rows. Rows cross several
// work items and key tiles; a peaked case (scores of spread ~10) makes the running maximum move
// between tiles, so the rescaling of sums and outputs is exercised.
TEST(Attention, LongContextsStayWithinTheReferencesTolerance) {
  for (const int window : {0, 512})
    for (const int end : {300, 2000, 9000})
      for (const float spread : {1.0f, 2.5f}) {
        AttnShape sh{4, 1, 256, 1.0f / 16.0f};
        sh.window = window;
        const int n_rows = 40;
        Case c(sh, end - n_rows, n_rows, false, spread, uint32_t(end + window));
        c.tap_rows = {0, 17, n_rows - 1};
        // Spread 2.5 (scores of standard deviation ~6, |v| up to ~12): a last-ulp difference of
        // a score from the order of Q K^T's sum moves a weight by that much relative, times |v|;
        // the two-pass kernel measured up to 2.0e-5 here too (1.2-2.0e-5 over these cases; the
        // online one 1.1-2.0e-5). Spread 1: both under 7e-7.
        check_all_tiers(c,
                        "window " + std::to_string(window) + " end " + std::to_string(end) +
                            " spread " + std::to_string(spread),
                        spread > 1.0f ? 4e-5 : 2e-6);
      }
}

// The same rows give the same bits whichever way the call is cut: 700 query rows in one call, in
// three passes (as Context runs long prompts), beside another sequence, with 1 or 2 threads,
// tapped or not (the taps themselves equal too). Rows at positions 700-1,399 (across 1,024, where
// the online kernel takes over from the two-pass one, inside work items) and 2,000-2,699 (spans
// of 1,024 keys from absolute multiples, the first cut at a pass's start); global and local
// (window 300) layers, F32 and F16 caches, the SIMD tiers (the scalar tier is the two-pass
// kernel alone: SeveralSequencesInOneCallMatchSeparateRuns, ThreadCountDoesNotChangeResults).
TEST(Attention, LongPromptBitsDoNotDependOnHowTheCallIsCut) {
  for (const int pos0 : {700, 2000})
    for (const bool f16 : {false, true})
      for (const int window : {0, 300}) {
        AttnShape sh{4, 1, 256, 1.0f / 16.0f};
        sh.window = window;
        Case whole(sh, pos0, 700, f16, 1.5f, uint32_t(77 + pos0));
        Case other(sh, 5, 333, f16, 1.0f, 78);
        ThreadPool one(1), two(2);
        for (SimdLevel lv : tiers()) {
          if (lv == SimdLevel::Scalar) continue;
          SCOPED_TRACE(std::string(f16 ? "f16 " : "f32 ") + simd_name(lv) + " window " +
                       std::to_string(window) + " pos0 " + std::to_string(pos0));
          const Result a = run_kernel(whole, lv, two);
          // Three passes over the same cache: rows [0, 301), [301, 577), [577, 700).
          std::vector<float> passes(a.out.size(), -1.0f);
          for (const auto& [r0, r1] : {std::pair{0, 301}, {301, 577}, {577, 700}}) {
            AttnSeq s;
            s.kv = whole.kv();
            s.q = whole.q.data() + size_t(r0) * size_t(sh.q_dim());
            s.out = passes.data() + size_t(r0) * size_t(sh.q_dim());
            s.pos0 = pos0 + r0;
            s.n_rows = r1 - r0;
            AttnScratch scratch;
            attention(sh, {s}, one, scratch, lv);
          }
          EXPECT_EQ(a.out, passes);
          // Beside another sequence, tapped at three rows.
          Case tapped = whole;
          tapped.tap_rows = {0, 500, 699};
          Result ra, rb;
          AttnScratch scratch;
          attention(sh, {make_seq(other, rb), make_seq(tapped, ra)}, two, scratch, lv);
          EXPECT_EQ(a.out, ra.out);
          EXPECT_EQ(run_kernel(other, lv, one).out, rb.out);
          EXPECT_EQ(ra.taps, run_kernel(tapped, lv, one).taps);
        }
      }
}

// Bidirectional attention (causal = false, the BERT encoder's): every tier against the
// reference, and the reference against a plain double-precision softmax over all keys written
// here, so a query row sees the keys after it.
TEST(Attention, BidirectionalMatchesPlainSoftmaxOverAllKeys) {
  AttnShape sh{4, 4, 32, 1.0f / std::sqrt(32.0f)};
  sh.causal = false;
  Case c(sh, 0, 70, false, 1.0f, 7);  // 70 keys: two key tiles
  c.tap_rows = {0, 69};
  check_all_tiers(c, "bidirectional");
  const Result ref = run_reference(c);
  const int hd = sh.head_dim, qd = sh.q_dim();
  for (int r : {0, 33, 69})
    for (int h = 0; h < sh.n_head; ++h) {
      std::vector<double> w(70);
      double mx = -1e300, sum = 0.0;
      for (int j = 0; j < 70; ++j) {
        double dot = 0.0;
        for (int d = 0; d < hd; ++d)
          dot += double(c.q[size_t(r * qd + h * hd + d)]) *
                 c.k32[key_index(j, h, d, sh.n_head_kv, hd)];
        w[size_t(j)] = dot * sh.scale;
        mx = std::max(mx, w[size_t(j)]);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int d = 0; d < hd; ++d) {
        double o = 0.0;
        for (int j = 0; j < 70; ++j) o += w[size_t(j)] / sum * c.v32[size_t(j * qd + h * hd + d)];
        EXPECT_NEAR(ref.out[size_t(r * qd + h * hd + d)], o, 2e-5) << "row " << r << " head " << h;
      }
      if (r == 0) {
        EXPECT_NEAR(ref.taps[0][size_t(h)][69], w[69] / sum, 1e-6);
      }
    }
}

TEST(Attention, BidirectionalWithWindowThrows) {
  std::vector<float> q(16), out(16), k(key_cache_elems(1, 16)), v(16);
  AttnSeq seq;
  seq.kv = KvView{k.data(), v.data(), nullptr, nullptr};
  seq.q = q.data();
  seq.out = out.data();
  seq.n_rows = 1;
  AttnShape sh{1, 1, 16, 1.0f};
  sh.causal = false;
  sh.window = 4;
  ThreadPool pool(1);
  AttnScratch scratch;
  EXPECT_THROW(attention(sh, {seq}, pool, scratch), Error);
}

TEST(Attention, SeveralSequencesInOneCallMatchSeparateRuns) {
  ThreadPool pool(2);
  std::vector<Case> cs;
  cs.emplace_back(AttnShape{14, 2, 64, 0.125f}, 0, 23, false, 1.0f, 11);
  cs.emplace_back(AttnShape{14, 2, 64, 0.125f}, 40, 1, false, 1.0f, 12);
  cs.emplace_back(AttnShape{14, 2, 64, 0.125f}, 7, 65, false, 1.0f, 13);
  for (auto& c : cs) c.tap_rows = {c.n_rows - 1};
  for (SimdLevel lv : tiers()) {
    std::vector<Result> rs(cs.size());
    std::vector<AttnSeq> seqs;
    for (size_t i = 0; i < cs.size(); ++i) seqs.push_back(make_seq(cs[i], rs[i]));
    AttnScratch scratch;
    attention(cs[0].shape, seqs, pool, scratch, lv);
    for (size_t i = 0; i < cs.size(); ++i) {
      const Result one = run_kernel(cs[i], lv, pool);
      EXPECT_EQ(rs[i].out, one.out) << "sequence " << i << " tier " << simd_name(lv);
      EXPECT_EQ(rs[i].taps, one.taps);
    }
  }
}

TEST(Attention, ThreadCountDoesNotChangeResults) {
  Case c({14, 2, 64, 0.125f}, 3, 50, false, 1.0f, 21);
  c.tap_rows = {10, 49};
  ThreadPool one(1), two(2);
  const SimdLevel lv = cpu_simd_level();
  const Result a = run_kernel(c, lv, one), b = run_kernel(c, lv, two);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.taps, b.taps);
}

// A decode row of a model with one KV head is one work item; with more threads than items it is
// cut into parts of its query heads, which must give the bits of one thread (taps included), F32
// and F16, local window or not, on every tier.
TEST(Attention, ADecodeRowCutIntoHeadPartsKeepsItsBits) {
  for (const bool f16 : {false, true})
    for (const int window : {0, 48}) {
      AttnShape shape{8, 1, 64, 0.125f};
      shape.window = window;
      Case c(shape, 700, 1, f16, 1.0f, 33);
      c.tap_rows = {0};
      ThreadPool one(1), three(3), eight(8);
      for (SimdLevel lv : tiers()) {
        SCOPED_TRACE(std::string(simd_name(lv)) + (f16 ? " f16" : " f32") + " window " +
                     std::to_string(window));
        const Result a = run_kernel(c, lv, one);
        for (ThreadPool* p : {&three, &eight}) {
          const Result b = run_kernel(c, lv, *p);
          EXPECT_EQ(a.out, b.out);
          EXPECT_EQ(a.taps, b.taps);
        }
      }
    }
}

TEST(Attention, BadShapeThrows) {
  std::vector<float> q(64), out(64), k(64), v(64);
  AttnSeq seq;
  seq.kv = KvView{k.data(), v.data(), nullptr, nullptr};
  seq.q = q.data();
  seq.out = out.data();
  seq.n_rows = 1;
  ThreadPool pool(1);
  AttnScratch scratch;
  EXPECT_THROW(attention(AttnShape{3, 2, 16, 1.0f}, {seq}, pool, scratch), Error);
  EXPECT_THROW(attention(AttnShape{2, 0, 16, 1.0f}, {seq}, pool, scratch), Error);
}

TEST(Attention, FlopCountIsCausal) {
  // 2 heads of dim 8, rows at positions 4 and 5: keys 5 + 6, 4 flops per key and dim.
  AttnSeq s;
  s.pos0 = 4;
  s.n_rows = 2;
  EXPECT_DOUBLE_EQ(attention_flops(AttnShape{2, 1, 8, 1.0f}, {s}), 2.0 * 4.0 * 8.0 * 11.0);
  AttnShape bidir{2, 1, 8, 1.0f};
  bidir.causal = false;  // both rows see all 6 keys
  EXPECT_DOUBLE_EQ(attention_flops(bidir, {s}), 2.0 * 4.0 * 8.0 * 12.0);
  AttnShape local{2, 1, 8, 1.0f};
  local.window = 5;  // rows at 4 and 5 see 5 keys each
  EXPECT_DOUBLE_EQ(attention_flops(local, {s}), 2.0 * 4.0 * 8.0 * 10.0);
}

TEST(Attention, TiledKeyLayout) {
  // Position 70 of kv head 1, dim 3, with 2 kv heads of dim 8: tile 1, lane 6.
  EXPECT_EQ(key_index(70, 1, 3, 2, 8), ((1u * 2u + 1u) * 8u + 3u) * 64u + 6u);
  EXPECT_EQ(key_cache_elems(65, 16), 128u * 16u);
  std::vector<float> keys(key_cache_elems(3, 4), 0.0f), row{1, 2, 3, 4};
  std::vector<uint16_t> keys16(keys.size(), 0);
  store_key(keys.data(), 2, row.data(), 2, 2);
  store_key(keys16.data(), 2, row.data(), 2, 2);
  EXPECT_EQ(keys[key_index(2, 1, 0, 2, 2)], 3.0f);
  EXPECT_EQ(keys[2 + 64], 2.0f);  // head 0, dim 1
  EXPECT_EQ(ops::fp16_to_fp32(keys16[key_index(2, 1, 1, 2, 2)]), 4.0f);
}

TEST(Attention, UsableLevelFallsBackForHeadDims) {
  EXPECT_EQ(usable_simd_level(SimdLevel::Avx512, 64), SimdLevel::Avx512);
  EXPECT_EQ(usable_simd_level(SimdLevel::Avx512, 8), SimdLevel::Avx2);
  EXPECT_EQ(usable_simd_level(SimdLevel::Avx512, 12), SimdLevel::Scalar);
  EXPECT_EQ(usable_simd_level(SimdLevel::Avx2, 80), SimdLevel::Avx2);
}

}  // namespace
}  // namespace ragform::runtime

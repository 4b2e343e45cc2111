#include "engine/runtime/attention.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "base/error.h"
#include "engine/model/blocks.h"
#include "engine/ops/fp16.h"
#include "engine/ops/simd_target.h"

namespace ragform::runtime {

namespace {

// --- scalar variant: the reference's arithmetic in the reference's order, tiled like the others.
namespace scalar {
void qk(const float* q, int nq, int hd, const KvView& kv, int kv_dim, int kvh, int n_keys,
        float scale, float* S, int ldS) {
  const int n_kv = kv_dim / hd;
  for (int i = 0; i < nq; ++i) {
    const float* qi = q + size_t(i) * size_t(hd);
    float* s = S + size_t(i) * size_t(ldS);
    for (int j = 0; j < n_keys; ++j) {
      float dot = 0.0f;
      const size_t ko = key_index(j, kvh, 0, n_kv, hd);
      if (kv.f16())
        for (int d = 0; d < hd; ++d)
          dot += qi[d] * ops::fp16_to_fp32(kv.k16[ko + size_t(d) * kKeyTile]);
      else
        for (int d = 0; d < hd; ++d) dot += qi[d] * kv.k32[ko + size_t(d) * kKeyTile];
      s[j] = dot * scale;
    }
  }
}
void softmax(float* s, int n, int width) {
  model::softmax(s, n);
  std::fill(s + n, s + width, 0.0f);
}
void round_f16_row(float* p, int width) {
  for (int j = 0; j < width; ++j) p[j] = ops::round_fp16(p[j]);
}
void pv(const float* P, int ldS, const int* n_keys, int nq, int hd, const KvView& kv, int kv_dim,
        int kvh, float* const* out, bool accumulate) {
  const size_t off = size_t(kvh) * size_t(hd);
  for (int i = 0; i < nq; ++i) {
    const float* p = P + size_t(i) * size_t(ldS);
    float* o = out[i];
    if (!accumulate) std::fill(o, o + hd, 0.0f);
    for (int j = 0; j < n_keys[i]; ++j) {
      const size_t vo = size_t(j) * size_t(kv_dim) + off;
      if (kv.f16())
        for (int d = 0; d < hd; ++d) o[d] += p[j] * ops::fp16_to_fp32(kv.v16[vo + size_t(d)]);
      else
        for (int d = 0; d < hd; ++d) o[d] += p[j] * kv.v32[vo + size_t(d)];
    }
  }
}
}  // namespace scalar

#include "engine/runtime/simd_traits.inc"

RAGFORM_TARGET_BEGIN("avx2,fma,f16c")
namespace avx2 {
#include "engine/runtime/attention_simd.inc"
}  // namespace avx2
RAGFORM_TARGET_END

RAGFORM_TARGET_BEGIN("avx512f,avx2,fma,f16c")
RAGFORM_AVX512_WARNINGS_OFF  // see simd_target.h
namespace avx512 {
#include "engine/runtime/attention_simd.inc"
}  // namespace avx512
RAGFORM_AVX512_WARNINGS_ON
RAGFORM_TARGET_END

struct Kernels {
  void (*qk)(const float*, int, int, const KvView&, int, int, int, float, float*, int);
  void (*softmax)(float*, int, int);
  void (*round_f16_row)(float*, int);
  void (*pv)(const float*, int, const int*, int, int, const KvView&, int, int, float* const*, bool);
  // The online softmax's row step and output rescaling (attention_simd.inc), or null: the scalar
  // tier is the reference's two-pass order, bit for bit.
  float (*online_row)(float*, int, int, int, float&, double&);
  void (*scale_row)(float*, int, float);
};

Kernels kernels_for(SimdLevel s) {
  switch (s) {
    case SimdLevel::Avx512:
      return {avx512::qk, avx512::softmax,    avx512::round_f16_row,
              avx512::pv, avx512::online_row, avx512::scale_row};
    case SimdLevel::Avx2:
      return {avx2::qk, avx2::softmax,    avx2::round_f16_row,
              avx2::pv, avx2::online_row, avx2::scale_row};
    case SimdLevel::Scalar:
      break;
  }
  return {scalar::qk, scalar::softmax, scalar::round_f16_row, scalar::pv, nullptr, nullptr};
}

// Whether a sequence's rows take the online-softmax kernel: on a SIMD tier, with an F32 cache
// (an F16 cache keeps ggml's non-flash numerics: probabilities rounded to halves after the
// softmax, which needs the whole row), unsteered (the steering rule rewrites whole softmax rows).
// Decided per sequence, never per item, so a row's bits do not depend on how rows are cut.
bool takes_online(const Kernels& K, const AttnSeq& seq) {
  return K.online_row != nullptr && !seq.kv.f16() && seq.steer == nullptr;
}

// The online kernel's span of keys (a multiple of kKeyTile) and query vectors per work item: its
// score block is kOnlineVectors x kOnlineKeys floats (256 KB, held in L2), and each K/V tile read
// from memory serves kOnlineVectors vectors (at 16k keys a global layer's K and V are 32 MB).
constexpr int kOnlineKeys = 1024;
constexpr int kOnlineVectors = 128;

// Query rows per work item: enough query vectors (rows x group heads) to reuse each K/V tile. The
// two-pass kernel keeps a whole score row per query vector, so its items stay at 32 vectors (and
// so do an online sequence's rows up to kOnlineKeys keys, which take it: run_item).
int rows_per_tile(int group, bool online) {
  return std::max(1, (online ? kOnlineVectors : 32) / group);
}

// Keys that query row r of seq attends to (before any sliding-window mask).
int keys_seen(const AttnShape& a, const AttnSeq& seq, int r) {
  return a.causal ? seq.pos0 + r + 1 : seq.pos0 + seq.n_rows;
}

int round_up(int n, int m) { return (n + m - 1) / m * m; }

void check_shape(const AttnShape& a) {
  if (a.n_head <= 0 || a.n_head_kv <= 0 || a.head_dim <= 0 || a.n_head % a.n_head_kv != 0)
    throw Error("attention", "bad shape: " + std::to_string(a.n_head) + " query heads, " +
                                 std::to_string(a.n_head_kv) + " kv heads, head_dim " +
                                 std::to_string(a.head_dim));
  if (a.window > 0 && !a.causal)
    throw Error("attention", "a sliding window needs causal attention");
}

// Sliding window: the scores of keys before n_keys[i] - window become -inf (softmax weight 0;
// every variant's exp maps -inf to 0).
void mask_outside_window(float* S, int ldS, const int* n_keys, int nq, int window) {
  for (int i = 0; i < nq; ++i) {
    const int hidden = std::max(0, n_keys[i] - window);
    std::fill(S + size_t(i) * size_t(ldS), S + size_t(i) * size_t(ldS) + hidden, -INFINITY);
  }
}

// For each tapped (row, head of the group) of this item, in tap order: whether its scores hold NaN
// or +inf. The SIMD softmax clamps its input and would turn such a row into uniform weights, a
// plausible-looking answer; the tap gets NaN instead, which Context::eval reports. Only tapped
// rows are scanned.
std::vector<char> tapped_rows_not_finite(const AttnSeq& seq, int row0, int rows, int G,
                                         const float* S, int ldS, const std::vector<int>& n_keys) {
  std::vector<char> bad;
  for (const AttnTap& tap : seq.taps) {
    if (tap.row < row0 || tap.row >= row0 + rows) continue;
    for (int g = 0; g < G; ++g) {
      const int i = (tap.row - row0) * G + g;
      const float* s = S + size_t(i) * size_t(ldS);
      bool b = false;
      for (int j = 0; j < n_keys[size_t(i)]; ++j) b |= std::isnan(s[j]) || s[j] == INFINITY;
      bad.push_back(b);
    }
  }
  return bad;
}

// The query heads of one work item: heads g0 .. g0 + ng - 1 of kv head kvh's group of G.
struct ItemHeads {
  int G, g0, ng;
  int head(int kvh, int g) const { return kvh * G + g0 + g; }
};

// The steering rule on the item's softmax rows of steered heads (query vector i = r * ng + g is
// the query at position pos0 + row0 + r, head hs.head(kvh, g); score column c is key k0 + c).
void steer_item(const AttnSeq& seq, int kvh, int row0, int rows, const ItemHeads& hs, int k0,
                float* S, int ldS, const std::vector<int>& n_keys) {
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < hs.ng; ++g) {
      if (!seq.steer->steers_head(hs.head(kvh, g))) continue;
      const size_t i = size_t(r * hs.ng + g);
      steer_row(*seq.steer, seq.pos0 + row0 + r, S + i * size_t(ldS), k0 + n_keys[i], k0);
    }
}

// The first key a work item reads: with a sliding window, the tile holding the first key its first
// row sees (query position p sees keys p - window + 1 .. p; later rows see later keys); 0 without
// one. Starting at a tile boundary keeps every key in the same SIMD lane and accumulation order as
// a row that starts at key 0 with the hidden keys at -inf (exp(-inf) = 0 adds exact zeros, and
// the steering rule's sums and factors skip exact zeros: steer_row), so the result is
// bit-identical to masking the whole row, at O(window) instead of O(position).
int first_key_read(const AttnShape& a, const AttnSeq& seq, int row0) {
  if (a.window <= 0) return 0;
  const int first_seen = seq.pos0 + row0 - a.window + 1;
  return first_seen <= 0 ? 0 : first_seen / kKeyTile * kKeyTile;
}

// The cache view from key k0 on (a multiple of kKeyTile, at or after seq.base): the tiled K and
// the V rows both advance by (k0 - base) * kv_dim elements.
KvView view_from(const AttnSeq& seq, int k0, int kv_dim) {
  const size_t off = size_t(k0 - seq.base) * size_t(kv_dim);
  KvView v = seq.kv;
  if (v.f16()) {
    v.k16 += off;
    v.v16 += off;
  } else {
    v.k32 += off;
    v.v32 += off;
  }
  return v;
}

// Whether the sequence's cache view holds every key its rows read (a caller's bug otherwise).
void check_base(const AttnShape& a, const AttnSeq& seq) {
  if (seq.base == 0 || seq.n_rows == 0) return;
  if (seq.base % kKeyTile != 0 || seq.base > first_key_read(a, seq, 0))
    throw Error("attention", "the cache holds keys from position " + std::to_string(seq.base) +
                                 " but the query at position " + std::to_string(seq.pos0) +
                                 " reads keys from " + std::to_string(first_key_read(a, seq, 0)));
}

// The query vectors of query rows row0 .. row0+rows of `seq`, heads hs of kv head kvh's group, in
// the thread's scratch: t.q (rounded to F16 for an F16 cache, as ggml converts Q for the F16 K
// dot products), t.n_keys (keys each vector sees from k0 on), t.out (where its output goes).
// Query vector i = r * ng + g (row-major, so n_keys[i] is non-decreasing), head hs.head(kvh, g).
// Keys k0 .. are read (first_key_read); score column c is key k0 + c.
struct ItemKeys {
  int k0;      // first key read
  KvView kv;   // the cache view from k0
  int n_keys;  // keys the item's last vector sees from k0 on
  int nq;      // query vectors
};
ItemKeys prepare_item(const AttnShape& a, const AttnSeq& seq, int kvh, int row0, int rows,
                      const ItemHeads& hs, AttnScratch::Thread& t) {
  const int G = hs.ng, hd = a.head_dim, qd = a.q_dim();
  const int nq = rows * G;
  const int k0 = first_key_read(a, seq, row0);
  const int n_keys = (a.causal ? seq.pos0 + row0 + rows : seq.pos0 + seq.n_rows) - k0;
  // Grown only; steady-state decode and prefill allocate nothing here.
  if (t.q.size() < size_t(nq) * size_t(hd)) t.q.resize(size_t(nq) * size_t(hd));
  if (t.n_keys.size() < size_t(nq)) t.n_keys.resize(size_t(nq));
  if (t.out.size() < size_t(nq)) t.out.resize(size_t(nq));
  for (int r = 0; r < rows; ++r)
    for (int g = 0; g < G; ++g) {
      const size_t i = size_t(r * G + g);
      const int h = hs.head(kvh, g);
      const float* src = seq.q + size_t(row0 + r) * size_t(qd) + size_t(h) * size_t(hd);
      float* dst = t.q.data() + i * size_t(hd);
      if (seq.kv.f16())
        for (int d = 0; d < hd; ++d) dst[d] = ops::round_fp16(src[d]);
      else
        std::copy(src, src + hd, dst);
      t.n_keys[i] = a.causal ? seq.pos0 + row0 + r + 1 - k0 : n_keys;
      t.out[i] = seq.out + size_t(row0 + r) * size_t(qd) + size_t(h) * size_t(hd);
    }
  return {k0, view_from(seq, k0, a.kv_dim()), n_keys, nq};
}

// The two-pass kernel on a prepared item: scores, window mask, softmax, steering, taps, and (with
// write_out) P V into the outputs.
void two_pass(const AttnShape& a, const AttnSeq& seq, int kvh, int row0, int rows,
              const ItemHeads& hs, const Kernels& K, AttnScratch::Thread& t, const ItemKeys& it,
              bool write_out) {
  const int G = hs.ng, nq = it.nq, k0 = it.k0;
  const int ldS = round_up(it.n_keys, kKeyTile);
  if (t.scores.size() < size_t(nq) * size_t(ldS)) t.scores.resize(size_t(nq) * size_t(ldS));
  float* S = t.scores.data();
  K.qk(t.q.data(), nq, a.head_dim, it.kv, a.kv_dim(), kvh, it.n_keys, a.scale, S, ldS);
  if (a.window > 0) mask_outside_window(S, ldS, t.n_keys.data(), nq, a.window);
  const std::vector<char> bad_tap = tapped_rows_not_finite(seq, row0, rows, G, S, ldS, t.n_keys);
  for (int i = 0; i < nq; ++i) K.softmax(S + size_t(i) * size_t(ldS), t.n_keys[size_t(i)], ldS);
  if (seq.steer) steer_item(seq, kvh, row0, rows, hs, k0, S, ldS, t.n_keys);
  size_t k = 0;
  for (const AttnTap& tap : seq.taps) {
    if (tap.row < row0 || tap.row >= row0 + rows) continue;
    for (int g = 0; g < G; ++g, ++k) {
      const int i = (tap.row - row0) * G + g;
      const float* s = S + size_t(i) * size_t(ldS);
      auto& head = tap.heads[hs.head(kvh, g)];
      if (bad_tap[k]) {
        std::fill(head.begin(), head.begin() + k0 + t.n_keys[size_t(i)], std::nanf(""));
      } else {
        std::fill(head.begin(), head.begin() + k0, 0.0f);  // keys before the window: weight 0
        std::copy(s, s + t.n_keys[size_t(i)], head.begin() + k0);
      }
    }
  }
  if (!write_out) return;
  if (seq.kv.f16())  // ggml converts the probabilities to F16 for the F16 V product
    for (int i = 0; i < nq; ++i) K.round_f16_row(S + size_t(i) * size_t(ldS), ldS);
  K.pv(S, ldS, t.n_keys.data(), nq, a.head_dim, it.kv, a.kv_dim(), kvh, t.out.data(), false);
}

// The online softmax on a prepared item (Milakov & Gimelshein 2018, "Online normalizer
// calculation for softmax"; Dao et al. 2022, "FlashAttention", Algorithm 1, with spans of keys
// instead of single keys). Keys go in spans of kOnlineKeys at absolute multiples of it; per query
// vector i, m_i is the running maximum of its scores, l_i the running sum of exp(s - m_i), and
// out[i] its unnormalised output; a span updates them as
//   m' = max(m, max_j s_j),  a = exp(m - m'),  l' = a l + sum_j exp(s_j - m'),
//   o' = a o + sum_j exp(s_j - m') v_j,
// and the row's output is o / l. Within a span the two-pass kernel's pieces do the work (Q K^T,
// P V with V blocks held in L1), so the score block is at most vectors x kOnlineKeys however long
// the context: at 16k keys the two-pass item's 32 score rows were 2 MB, past L2, and P V read
// them once per 64 dimensions.
// Bits: a vector's arithmetic is its own, its spans are fixed by absolute key positions, lanes by
// position within a 64-key tile, and a span in which it sees no key leaves its state unchanged.
// So where an item starts reading (the window's first tile, or key 0), which vectors share it and
// how many passes a prompt takes change no bit.
void online_item(const AttnShape& a, const AttnSeq& seq, int kvh, const Kernels& K,
                 AttnScratch::Thread& t, const ItemKeys& it) {
  const int nq = it.nq, hd = a.head_dim, ld = kOnlineKeys;
  if (t.scores.size() < size_t(nq) * size_t(ld)) t.scores.resize(size_t(nq) * size_t(ld));
  if (t.m.size() < size_t(nq)) t.m.resize(size_t(nq));
  if (t.l.size() < size_t(nq)) t.l.resize(size_t(nq));
  if (t.span_keys.size() < size_t(nq)) t.span_keys.resize(size_t(nq));
  float* S = t.scores.data();
  for (int i = 0; i < nq; ++i) {
    std::fill(t.out[size_t(i)], t.out[size_t(i)] + hd, 0.0f);
    t.m[size_t(i)] = -INFINITY;
    t.l[size_t(i)] = 0.0;
  }
  // Key c of the view is absolute key k0 + c; spans start where that is a multiple of ld.
  for (int j0 = -(it.k0 % ld); j0 < it.n_keys; j0 += ld) {
    const int b = std::max(j0, 0), e = std::min(j0 + ld, it.n_keys);
    // Vectors before `first` see no key of this span (n_keys is non-decreasing).
    int first = 0;
    while (first < nq && t.n_keys[size_t(first)] <= b) ++first;
    if (first == nq) continue;
    const int n = nq - first;
    KvView kv = it.kv;  // the view from key b (a multiple of kKeyTile)
    kv.k32 += size_t(b) * size_t(a.kv_dim());
    kv.v32 += size_t(b) * size_t(a.kv_dim());
    K.qk(t.q.data() + size_t(first) * size_t(hd), n, hd, kv, a.kv_dim(), kvh, e - b, a.scale, S,
         ld);
    for (int v = 0; v < n; ++v) {
      const size_t i = size_t(first + v);
      const int hi = std::min(t.n_keys[i], e) - b;  // visible: [lo, hi) of this span
      const int lo = a.window > 0 ? std::clamp(t.n_keys[i] - a.window - b, 0, hi) : 0;
      const float f = K.online_row(S + size_t(v) * size_t(ld), lo, hi, round_up(e - b, kKeyTile),
                                   t.m[i], t.l[i]);
      if (f != 1.0f) K.scale_row(t.out[i], hd, f);
      t.span_keys[size_t(v)] = hi;
    }
    K.pv(S, ld, t.span_keys.data(), n, hd, kv, a.kv_dim(), kvh, t.out.data() + first, true);
  }
  for (int i = 0; i < nq; ++i) K.scale_row(t.out[size_t(i)], hd, float(1.0 / t.l[size_t(i)]));
}

// One work item: query rows row0 .. row0+rows of `seq`, kv head kvh, the heads hs of its group.
// Every query vector's arithmetic is its own (the kernels block query vectors in registers, never
// mix them), so how rows and heads are cut into items changes no bit.
void run_item(const AttnShape& a, const AttnSeq& seq, int kvh, int row0, int rows,
              const ItemHeads& hs, const Kernels& K, AttnScratch::Thread& t) {
  // Rows that see at most kOnlineKeys keys (one span) keep the two-pass kernel even where the
  // online one runs: their score rows fit in cache, and their bits stay those of every
  // measurement before issue 45. Decided by the row's own position, so still independent of how
  // rows are cut.
  const bool online = takes_online(K, seq);
  const int split = !online    ? rows
                    : a.causal ? std::clamp(kOnlineKeys - seq.pos0 - row0, 0, rows)
                               : (seq.pos0 + seq.n_rows <= kOnlineKeys ? rows : 0);
  if (split > 0)
    two_pass(a, seq, kvh, row0, split, hs, K, t, prepare_item(a, seq, kvh, row0, split, hs, t),
             true);
  if (split == rows) return;
  row0 += split;
  rows -= split;
  online_item(a, seq, kvh, K, t, prepare_item(a, seq, kvh, row0, rows, hs, t));
  // A tapped row's softmax weights are the two-pass kernel's exact rows (pass one alone, on that
  // row: its bits do not depend on the rows beside it); its output stays the online kernel's, so
  // tapping a row changes no output.
  for (const AttnTap& tap : seq.taps) {
    if (tap.row < row0 || tap.row >= row0 + rows) continue;
    bool earlier = false;  // two_pass fills every tap of its row: each tapped row once
    for (const AttnTap* u = seq.taps.data(); u != &tap; ++u) earlier |= u->row == tap.row;
    if (!earlier)
      two_pass(a, seq, kvh, tap.row, 1, hs, K, t, prepare_item(a, seq, kvh, tap.row, 1, hs, t),
               false);
  }
}

}  // namespace

void store_key(float* keys, int pos, const float* k, int n_head_kv, int head_dim) {
  for (int h = 0; h < n_head_kv; ++h)
    for (int d = 0; d < head_dim; ++d)
      keys[key_index(pos, h, d, n_head_kv, head_dim)] = k[h * head_dim + d];
}

void store_key(uint16_t* keys, int pos, const float* k, int n_head_kv, int head_dim) {
  for (int h = 0; h < n_head_kv; ++h)
    for (int d = 0; d < head_dim; ++d)
      keys[key_index(pos, h, d, n_head_kv, head_dim)] = ops::fp32_to_fp16(k[h * head_dim + d]);
}

SimdLevel cpu_simd_level() {
  static const SimdLevel level = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma"))
      return SimdLevel::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return SimdLevel::Avx2;
    return SimdLevel::Scalar;
  }();
  return level;
}

SimdLevel simd_level_for(ops::CpuTier tier) {
  return SimdLevel(std::min(int(tier), int(cpu_simd_level())));
}

const char* simd_name(SimdLevel s) {
  switch (s) {
    case SimdLevel::Avx512:
      return "avx512";
    case SimdLevel::Avx2:
      return "avx2";
    case SimdLevel::Scalar:
      break;
  }
  return "scalar";
}

SimdLevel usable_simd_level(SimdLevel want, int head_dim) {
  if (want == SimdLevel::Avx512 && head_dim % 16 != 0) want = SimdLevel::Avx2;
  if (want == SimdLevel::Avx2 && head_dim % 8 != 0) want = SimdLevel::Scalar;
  return want;
}

void attention(const AttnShape& a, const std::vector<AttnSeq>& seqs, ThreadPool& pool,
               AttnScratch& scratch, SimdLevel level) {
  check_shape(a);
  for (const AttnSeq& s : seqs) check_base(a, s);
  if (level > cpu_simd_level())
    throw Error("attention", std::string("this CPU does not support ") + simd_name(level));
  const Kernels K = kernels_for(usable_simd_level(level, a.head_dim));
  const int G = a.n_head / a.n_head_kv;
  // Work items, most expensive first (cost ~ query vectors x keys), handed out dynamically so the
  // causal triangle's uneven tiles still keep every thread busy.
  auto& items = scratch.items;
  items.clear();
  for (size_t si = 0; si < seqs.size(); ++si) {
    const AttnSeq& s = seqs[si];
    const bool online = takes_online(K, s);
    for (int r0 = 0, rows = 0; r0 < s.n_rows; r0 += rows) {
      rows = std::min(rows_per_tile(G, online && keys_seen(a, s, r0) > kOnlineKeys), s.n_rows - r0);
      for (int kvh = 0; kvh < a.n_head_kv; ++kvh)
        items.push_back(
            {int(si), kvh, r0, rows, 0, G,
             double(rows) * (keys_seen(a, s, r0 + rows - 1) - first_key_read(a, s, r0))});
    }
  }
  if (items.empty()) return;
  // Fewer items than threads (a decode step of a model with one KV head: one item per layer): each
  // is cut into parts of its group's query heads, which read the same keys on every core. The
  // bits are the same however items are cut (run_item).
  if (G > 1 && items.size() < size_t(pool.size())) {
    const int parts = std::min(G, int((size_t(pool.size()) + items.size() - 1) / items.size()));
    const int per = (G + parts - 1) / parts;
    std::vector<AttnScratch::Item>& cut = scratch.cut;
    cut.clear();
    for (const AttnScratch::Item& it : items)
      for (int g0 = 0; g0 < G; g0 += per) {
        AttnScratch::Item c = it;
        c.g0 = g0;
        c.ng = std::min(per, G - g0);
        c.cost = it.cost * c.ng / G;
        cut.push_back(c);
      }
    items.swap(cut);
  }
  std::sort(items.begin(), items.end(),
            [](const AttnScratch::Item& x, const AttnScratch::Item& y) { return x.cost > y.cost; });
  // Short decode steps (a few thousand multiply-adds) are cheaper than waking the workers.
  double macs = 0.0;
  for (const auto& it : items) macs += it.cost;
  macs *= 2.0 * G * a.head_dim;  // (cost counts rows x keys x the heads' share of the group)
  const int nt = macs < 65536.0 ? 1 : std::min(pool.size(), int(items.size()));
  if (scratch.threads.size() < size_t(pool.size())) scratch.threads.resize(size_t(pool.size()));
  std::atomic<size_t> next{0};
  auto work = [&](int tid) {
    for (size_t k = next.fetch_add(1); k < items.size(); k = next.fetch_add(1)) {
      const AttnScratch::Item& it = items[k];
      run_item(a, seqs[size_t(it.seq)], it.kvh, it.row0, it.rows, ItemHeads{G, it.g0, it.ng}, K,
               scratch.threads[size_t(tid)]);
    }
  };
  if (nt <= 1) {
    work(0);
    return;
  }
  pool.parallel_for(
      size_t(nt), [&](size_t, size_t, int tid) { work(tid); }, 1);
}

namespace {
// The steering rule on one reference row, from its definition: membership of key j tested against
// every span that ends at or before the query, masses and factors in double.
// Per-span shares: span i (ending at or before the query) with mass m_i > 0 gets S_i, the keys in
// no applicable span get what is left.
void reallocate_reference_row(const Steering& st, int pos, std::vector<float>& p) {
  auto span_of = [&](int j) {
    for (size_t i = 0; i < st.spans.size(); ++i)
      if (st.spans[i].end <= pos && j >= st.spans[i].begin && j < st.spans[i].end) return int(i);
    return -1;
  };
  std::vector<double> mass(st.spans.size(), 0.0);
  double rest = 0.0;
  for (size_t j = 0; j < p.size(); ++j) {
    const int i = span_of(int(j));
    (i < 0 ? rest : mass[size_t(i)]) += p[j];
  }
  double given = 0.0;
  bool any = false;
  for (size_t i = 0; i < mass.size(); ++i)
    if (mass[i] > 0.0) given += st.shares[i], any = true;
  if (rest <= 0.0 || !any) return;
  for (size_t j = 0; j < p.size(); ++j) {
    const int i = span_of(int(j));
    const double f = i < 0                   ? std::max(0.0, 1.0 - given) / rest
                     : mass[size_t(i)] > 0.0 ? st.shares[size_t(i)] / mass[size_t(i)]
                                             : 1.0;
    p[j] = float(p[j] * f);
  }
}

// Found in the Middle's eq. 5-6: the applicable spans' total C kept, span i's part w_i / W of it.
void redistribute_reference_row(const Steering& st, int pos, std::vector<float>& p) {
  std::vector<double> mass(st.spans.size(), 0.0);
  for (size_t i = 0; i < st.spans.size(); ++i)
    if (st.spans[i].end <= pos)
      for (int j = st.spans[i].begin; j < st.spans[i].end && j < int(p.size()); ++j)
        mass[i] += p[size_t(j)];
  double total = 0.0, weights = 0.0;
  for (size_t i = 0; i < mass.size(); ++i) {
    total += mass[i];
    if (mass[i] > 0.0) weights += st.shares[i];
  }
  if (total <= 0.0 || weights <= 0.0) return;
  for (size_t i = 0; i < mass.size(); ++i)
    if (mass[i] > 0.0)
      for (int j = st.spans[i].begin; j < st.spans[i].end && j < int(p.size()); ++j)
        p[size_t(j)] = float(p[size_t(j)] * float(st.shares[i] / weights * total / mass[i]));
}

void steer_reference_row(const Steering& st, int pos, std::vector<float>& p) {
  if (st.rule == Steering::Redistribute) return redistribute_reference_row(st, pos, p);
  if (!st.shares.empty()) return reallocate_reference_row(st, pos, p);
  // Rescale is PASTA's: every span key the row sees, and every key at or past the prompt's end,
  // against the prompt's other keys; reallocate takes the spans that ended at or before the row.
  const bool pasta = st.rule == Steering::Rescale;
  auto inside = [&](int j) {
    if (pasta && j >= st.prompt_end) return true;
    for (const TokenSpan& sp : st.spans)
      if ((pasta || sp.end <= pos) && j >= sp.begin && j < sp.end) return true;
    return false;
  };
  double in = 0.0, rest = 0.0;
  for (size_t j = 0; j < p.size(); ++j) (inside(int(j)) ? in : rest) += p[j];
  if (in <= 0.0 || rest <= 0.0) return;
  const double v = st.value;
  double fin = 1.0, fout = 1.0;
  if (pasta) {
    if (rest + v * in <= 0.0) return;
    fin = v / (rest + v * in);
    fout = 1.0 / (rest + v * in);
  } else {
    fin = v / in;
    fout = (1.0 - v) / rest;
  }
  for (size_t j = 0; j < p.size(); ++j) p[j] = float(p[j] * (inside(int(j)) ? fin : fout));
}
}  // namespace

void attention_reference(const AttnShape& a, const AttnSeq& seq) {
  check_shape(a);
  check_base(a, seq);
  const int G = a.n_head / a.n_head_kv, hd = a.head_dim, qd = a.q_dim(), kvd = a.kv_dim();
  const bool f16 = seq.kv.f16();
  std::vector<float> sc, qh(static_cast<size_t>(hd));
  for (int r = 0; r < seq.n_rows; ++r) {
    const int n_keys = keys_seen(a, seq, r);
    sc.assign(size_t(n_keys), 0.0f);
    for (int h = 0; h < a.n_head; ++h) {
      const int kvh = h / G;
      const float* qr = seq.q + size_t(r) * size_t(qd) + size_t(h) * size_t(hd);
      for (int d = 0; d < hd; ++d) qh[size_t(d)] = f16 ? ops::round_fp16(qr[d]) : qr[d];
      for (int j = seq.base; j < n_keys; ++j) {  // keys before base: outside the window
        float dot = 0.0f;
        for (int d = 0; d < hd; ++d) {
          const size_t ki = key_index(j - seq.base, kvh, d, a.n_head_kv, hd);
          dot += qh[size_t(d)] * (f16 ? ops::fp16_to_fp32(seq.kv.k16[ki]) : seq.kv.k32[ki]);
        }
        sc[size_t(j)] = dot * a.scale;
      }
      if (a.window > 0)
        for (int j = 0; j < n_keys - a.window; ++j) sc[size_t(j)] = -INFINITY;
      model::softmax(sc.data(), n_keys);
      if (seq.steer && seq.steer->steers_head(h)) steer_reference_row(*seq.steer, seq.pos0 + r, sc);
      for (const AttnTap& tap : seq.taps)
        if (tap.row == r) std::copy(sc.begin(), sc.end(), tap.heads[h].begin());
      float* o = seq.out + size_t(r) * size_t(qd) + size_t(h) * size_t(hd);
      std::fill(o, o + hd, 0.0f);
      for (int j = seq.base; j < n_keys; ++j) {
        const size_t vo = size_t(j - seq.base) * size_t(kvd) + size_t(kvh) * size_t(hd);
        const float p = f16 ? ops::round_fp16(sc[size_t(j)]) : sc[size_t(j)];
        for (int d = 0; d < hd; ++d)
          o[d] += p * (f16 ? ops::fp16_to_fp32(seq.kv.v16[vo + size_t(d)])
                           : seq.kv.v32[vo + size_t(d)]);
      }
    }
  }
}

double attention_flops(const AttnShape& a, const std::vector<AttnSeq>& seqs) {
  double f = 0.0;
  for (const AttnSeq& s : seqs)
    for (int r = 0; r < s.n_rows; ++r) {
      const int seen = keys_seen(a, s, r);  // a local layer's row uses only its window
      f += 4.0 * a.head_dim * double(a.window > 0 ? std::min(seen, a.window) : seen);
    }
  return f * a.n_head;
}

}  // namespace ragform::runtime

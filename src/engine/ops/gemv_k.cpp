// Decode GEMV (one token, or the decode step of a few sequences) for Q4_K and Q6_K weights with
// AVX512-VNNI (gemm.h).
//
// Per 256-block the exact integers of ggml's
// vec_dot_q4_K_q8_K / q6_K_q8_K are formed with vpmaddubsw (unsigned weight quants x signed
// Q8_K activations, pairs <= 2*63*128 < 2^15, so no saturation) and vpdpwssd against the
// sub-block scales repeated over the int16 pairs of their sub-block:
//   Q4_K: isum = sum_j sc_j (q . a)_j over 8 sub-blocks of 32, summs = sum_j m_j (bs_2j + bs_2j+1);
//   Q6_K: isum = sum_k sc_k (u . a)_k - 32 sum_k sc_k bs_k over 16 sub-blocks of 16 (u = q + 32).
// Q4_K rows go four at a time (a tile, sharing the activation loads): the four rows' block
// integers are reduced into the four lanes of one vector. Q6_K rows go one at a time, each block's
// integer reduced to a scalar. The reference's float combination (vec_dot.cpp dot_q4_k /
// dot_q6_k) is then done with the same operations (separate mul/sub/add, no FMA; see rounded())
// in block order, so results are bit-identical to vec_dot.
//
// Q4_K packs element 64g+l in the low nibble and 64g+32+l in the high nibble of byte 32g+l.
// A 64-byte load therefore holds sub-blocks {0, 2} (low nibbles) and {1, 3} (high nibbles) of a
// 128-element half; the activations are permuted once per call into that order.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops/gemm.h"
#include "engine/ops/quant_blocks.h"
#include "engine/ops/scratch.h"

#define RAGFORM_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace ragform::ops {

namespace {

constexpr int kTile = 4;  // rows per tile: one float lane each in the combination

// Activations of one call, shared by all rows.
struct Act {
  const int8_t* qs;     // Q4_K: [nb][256] in nibble order (see top); Q6_K reads q8 directly
  const BlockQ8_K* q8;  // d and bsums
  const int16_t* bs32;  // Q4_K: [nb][8] sums of the 32-element sub-blocks
};

// Element order of the Q4_K activations: the four 64-byte vectors of a block hold sub-blocks
// {0,2}, {1,3}, {4,6}, {5,7} (32 elements each), matching the nibbles of two 64-byte loads.
void permute_q4_k(const BlockQ8_K* q8, int64_t nb, int8_t* qs, int16_t* bs32) {
  constexpr int kOrder[8] = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t i = 0; i < nb; ++i) {
    for (int v = 0; v < 8; ++v) std::memcpy(qs + 256 * i + 32 * v, q8[i].qs + 32 * kOrder[v], 32);
    for (int j = 0; j < 8; ++j)
      bs32[8 * i + j] = int16_t(q8[i].bsums[2 * j] + q8[i].bsums[2 * j + 1]);  // |.| <= 4096
  }
}

// Sum of the 16 int32 lanes of each of four vectors, lane r of the result = row r.
RAGFORM_VNNI inline __m256i halve(__m512i v) {
  return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}
RAGFORM_VNNI inline __m128i reduce4(__m256i t0, __m256i t1, __m256i t2, __m256i t3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(t0, t1), _mm256_hadd_epi32(t2, t3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// The 8 scales (words 0-7) and 8 mins (words 8-15) of a Q4_K block, as ggml's AVX2 kernel
// unpacks them (same bits as get_scale_min_k4).
RAGFORM_VNNI inline __m256i q4_k_scales(const uint8_t* s) {
  constexpr uint32_t k1 = 0x3f3f3f3f, k2 = 0x0f0f0f0f, k3 = 0x03030303;
  uint32_t u[4];
  std::memcpy(u, s, 12);
  u[3] = ((u[2] >> 4) & k2) | (((u[1] >> 6) & k3) << 4);
  const uint32_t mins_lo = u[1] & k1;
  u[1] = (u[2] & k2) | (((u[0] >> 6) & k3) << 4);
  u[2] = mins_lo;
  u[0] &= k1;
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(u)));
}

// Word index vectors for vpermw: vector v of a Q4_K block covers sub-blocks kOrder[v] (words
// 0-15) and kOrder[v] + 2 (words 16-31); vector v of a Q6_K block sub-blocks 4v..4v+3 (8 words
// each).
struct WordIndex {
  alignas(64) int16_t w[32];
};
constexpr WordIndex q4_index(int lo, int hi) {
  WordIndex x{};
  for (int k = 0; k < 32; ++k) x.w[k] = int16_t(k < 16 ? lo : hi);
  return x;
}
constexpr WordIndex q6_index(int first) {
  WordIndex x{};
  for (int k = 0; k < 32; ++k) x.w[k] = int16_t(first + k / 8);
  return x;
}
constexpr WordIndex kQ4Index[4] = {q4_index(0, 2), q4_index(1, 3), q4_index(4, 6), q4_index(5, 7)};
constexpr WordIndex kQ6Index[4] = {q6_index(0), q6_index(4), q6_index(8), q6_index(12)};

RAGFORM_VNNI inline __m512i load_index(const WordIndex& x) { return _mm512_load_si512(x.w); }

// A product rounded to float before it is added: the empty asm hides its origin, so the compiler
// cannot contract mul+add into an FMA (GCC contracts vector intrinsics even in ISO mode), which
// would change the bits relative to vec_dot.
RAGFORM_VNNI inline __m128 rounded(__m128 v) {
  asm("" : "+v"(v));
  return v;
}

// Software prefetch of bytes [next + i * share, + share) into L1. Four Q4_K rows read side by side
// are four interleaved streams, which the hardware prefetcher follows poorly: the next tile (the
// 4 * row_bytes that follow) is prefetched as one linear stream, 4 blocks' bytes per block step.
// Prefetches never fault, so running past the end of the matrix is harmless.
RAGFORM_VNNI inline void prefetch_next(const uint8_t* next, int64_t i, size_t share) {
  const uint8_t* p = next + size_t(i) * share;
  for (size_t off = 0; off < share; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

// One Q4_K block of one row: isum in 16 lanes (sum them for the integer), summs in 4 lanes.
struct Q4Idx {
  __m512i i0, i1, i2, i3;
};
RAGFORM_VNNI inline __m512i q4_k_block(const BlockQ4_K& x, const int8_t* a, __m128i bs32,
                                       const Q4Idx& ix, __m128i& summs) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m256i s16 = q4_k_scales(x.scales);
  const __m512i s = _mm512_castsi256_si512(s16);
  summs = _mm_madd_epi16(_mm256_extracti128_si256(s16, 1), bs32);
  const __m512i q0 = _mm512_loadu_si512(x.qs), q1 = _mm512_loadu_si512(x.qs + 64);
  const __m512i p0 = _mm512_maddubs_epi16(_mm512_and_si512(q0, low4), _mm512_load_si512(a));
  const __m512i p1 = _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(q0, 4), low4),
                                          _mm512_load_si512(a + 64));
  const __m512i p2 = _mm512_maddubs_epi16(_mm512_and_si512(q1, low4), _mm512_load_si512(a + 128));
  const __m512i p3 = _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(q1, 4), low4),
                                          _mm512_load_si512(a + 192));
  __m512i acc = _mm512_madd_epi16(p0, _mm512_permutexvar_epi16(ix.i0, s));
  acc = _mm512_dpwssd_epi32(acc, p1, _mm512_permutexvar_epi16(ix.i1, s));
  acc = _mm512_dpwssd_epi32(acc, p2, _mm512_permutexvar_epi16(ix.i2, s));
  return _mm512_dpwssd_epi32(acc, p3, _mm512_permutexvar_epi16(ix.i3, s));
}

// Four Q4_K rows (x[r] = row r's blocks), y[r] for r < n_valid.
RAGFORM_VNNI void q4_k_tile(const BlockQ4_K* const* x, const uint8_t* next, const Act& act,
                            int64_t nb, float* y, int n_valid) {
  const Q4Idx ix{load_index(kQ4Index[0]), load_index(kQ4Index[1]), load_index(kQ4Index[2]),
                 load_index(kQ4Index[3])};
  // [d0, dmin0, d1, dmin1, ...] -> [d0..d3, dmin0..dmin3]
  const __m256i split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  __m128 sumf = _mm_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    prefetch_next(next, i, kTile * sizeof(BlockQ4_K));
    const int8_t* a = act.qs + 256 * i;
    const __m128i bs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(act.bs32 + 8 * i));
    __m128i m0, m1, m2, m3;
    const __m512i v0 = q4_k_block(x[0][i], a, bs, ix, m0);
    const __m512i v1 = q4_k_block(x[1][i], a, bs, ix, m1);
    const __m512i v2 = q4_k_block(x[2][i], a, bs, ix, m2);
    const __m512i v3 = q4_k_block(x[3][i], a, bs, ix, m3);
    const __m128i isum = reduce4(halve(v0), halve(v1), halve(v2), halve(v3));
    const __m128i summs = _mm_hadd_epi32(_mm_hadd_epi32(m0, m1), _mm_hadd_epi32(m2, m3));
    uint32_t h[kTile];
    for (int r = 0; r < kTile; ++r) std::memcpy(&h[r], &x[r][i], 4);  // d, dmin
    const __m256 dd = _mm256_permutevar8x32_ps(
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h))), split);
    const __m128 ad = _mm_set1_ps(act.q8[i].d);
    // Reference: sumf += d * y.d * float(isum) - dmin * y.d * float(summs).
    const __m128 t1 = _mm_mul_ps(_mm_mul_ps(_mm256_castps256_ps128(dd), ad), _mm_cvtepi32_ps(isum));
    const __m128 t2 =
        _mm_mul_ps(_mm_mul_ps(_mm256_extractf128_ps(dd, 1), ad), _mm_cvtepi32_ps(summs));
    sumf = _mm_add_ps(sumf, _mm_sub_ps(rounded(t1), rounded(t2)));
  }
  float out[kTile];
  _mm_storeu_ps(out, sumf);
  for (int r = 0; r < n_valid; ++r) y[r] = out[r];
}

// One Q6_K block of one row: 8 lanes summing to isum.
struct Q6Idx {
  __m512i i0, i1, i2, i3;
};
RAGFORM_VNNI inline __m256i q6_k_block(const BlockQ6_K& x, const int8_t* a, __m256i bsums,
                                       const Q6Idx& ix) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), hi2 = _mm512_set1_epi8(0x30);
  const __mmask32 upper = 0xFFFF0000u;  // words of the upper 256 bits
  const __m256i s16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.scales)));
  const __m512i s = _mm512_castsi256_si512(s16);
  const __m512i* sidx[4] = {&ix.i0, &ix.i1, &ix.i2, &ix.i3};
  __m512i acc = _mm512_setzero_si512();
  for (int g = 0; g < 2; ++g) {
    const __m512i l = _mm512_loadu_si512(x.ql + 64 * g);
    const __m512i h =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qh + 32 * g)));
    // Bits 4-5 of every byte: qh bits 0-1 (elements 0-31 of the half) and 2-3 (32-63) ...
    const __m512i ha =
        _mm512_and_si512(_mm512_mask_slli_epi16(_mm512_slli_epi16(h, 4), upper, h, 2), hi2);
    // ... and bits 4-5 (elements 64-95) and 6-7 (96-127).
    const __m512i hb = _mm512_and_si512(_mm512_mask_srli_epi16(h, upper, h, 2), hi2);
    const __m512i ua = _mm512_ternarylogic_epi32(l, low4, ha, 0xEA);  // (l & low4) | ha
    const __m512i ub = _mm512_ternarylogic_epi32(_mm512_srli_epi16(l, 4), low4, hb, 0xEA);
    const __m512i pa = _mm512_maddubs_epi16(ua, _mm512_loadu_si512(a + 128 * g));
    const __m512i pb = _mm512_maddubs_epi16(ub, _mm512_loadu_si512(a + 128 * g + 64));
    acc = _mm512_dpwssd_epi32(acc, pa, _mm512_permutexvar_epi16(*sidx[2 * g], s));
    acc = _mm512_dpwssd_epi32(acc, pb, _mm512_permutexvar_epi16(*sidx[2 * g + 1], s));
  }
  // u = q + 32: subtract 32 * sum_k sc_k bs_k.
  const __m256i corr = _mm256_madd_epi16(s16, bsums);
  return _mm256_sub_epi32(halve(acc), _mm256_slli_epi32(corr, 5));
}

RAGFORM_VNNI inline __m256i q6_k_block_at(const BlockQ6_K* row, const Act& act, int64_t b,
                                          const Q6Idx& ix) {
  const BlockQ8_K& q = act.q8[b];
  return q6_k_block(row[b], q.qs, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q.bsums)),
                    ix);
}

// The scalar form of rounded() above.
RAGFORM_VNNI inline float rounded(float v) {
  asm("" : "+v"(v));
  return v;
}

// One Q6_K row, one block per step, its integer reduced to a scalar and combined as vec_dot does.
// (Q6_K rows are not tiled like Q4_K, nor four blocks per step: both measured slower from DRAM
// than this plain sequential walk.)
RAGFORM_VNNI float q6_k_row(const BlockQ6_K* row, const Act& act, int64_t nb) {
  const Q6Idx ix{load_index(kQ6Index[0]), load_index(kQ6Index[1]), load_index(kQ6Index[2]),
                 load_index(kQ6Index[3])};
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const __m256i v = q6_k_block_at(row, act, i, ix);
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    t = _mm_add_epi32(t, _mm_unpackhi_epi64(t, t));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 1));
    // Reference: sumf += d * y.d * float(isum).
    sumf += rounded(_cvtsh_ss(row[i].d) * act.q8[i].d * float(_mm_cvtsi128_si32(t)));
  }
  return sumf;
}

// Q4_K rows [rb, re) in tiles of four, each tile against every token while its rows are in L1
// (token t's outputs at y + t * n_out); a last partial tile repeats its last row in the spare
// lanes.
void q4_k_rows(const WeightView& w, const Act* acts, int64_t n_tokens, int64_t rb, int64_t re,
               float* y) {
  const int64_t nb = w.n_in / QK_K;
  const size_t stride = w.row_bytes();
  for (int64_t r = rb; r < re; r += kTile) {
    const int n_valid = int(std::min<int64_t>(kTile, re - r));
    const BlockQ4_K* x[kTile];
    for (int k = 0; k < kTile; ++k)
      x[k] = reinterpret_cast<const BlockQ4_K*>(w.data +
                                                size_t(r + std::min(k, n_valid - 1)) * stride);
    for (int64_t t = 0; t < n_tokens; ++t)
      q4_k_tile(x, w.data + size_t(r + kTile) * stride, acts[t], nb,
                y + size_t(t) * size_t(w.n_out) + size_t(r), n_valid);
  }
}

void q6_k_rows(const WeightView& w, const Act* acts, int64_t n_tokens, int64_t rb, int64_t re,
               float* y) {
  const int64_t nb = w.n_in / QK_K;
  const size_t stride = w.row_bytes();  // a type_info lookup: once, not per row
  for (int64_t r = rb; r < re; ++r) {
    const auto* row = reinterpret_cast<const BlockQ6_K*>(w.data + size_t(r) * stride);
    for (int64_t t = 0; t < n_tokens; ++t)
      y[size_t(t) * size_t(w.n_out) + size_t(r)] = q6_k_row(row, acts[t], nb);
  }
}

// One token's activations and the buffers behind its Act.
struct TokenAct {
  std::vector<BlockQ8_K> q8;
  std::vector<uint8_t> qs_buf, bs_buf;
  Act act{};
};

void prepare_token(const WeightView& w, const float* x, TokenAct& t) {
  const int64_t nb = w.n_in / QK_K;
  if (t.q8.size() < size_t(nb)) t.q8.resize(size_t(nb));
  quantize_row_q8_K(x, t.q8.data(), w.n_in);
  t.act = Act{nullptr, t.q8.data(), nullptr};
  if (w.type != TensorType::Q4_K) return;
  int8_t* qs = aligned_scratch<int8_t>(t.qs_buf, size_t(nb) * QK_K);
  int16_t* bs = aligned_scratch<int16_t>(t.bs_buf, size_t(nb) * 8);
  permute_q4_k(t.q8.data(), nb, qs, bs);
  t.act.qs = qs;
  t.act.bs32 = bs;
}

}  // namespace

bool gemv_k_supported(TensorType t, CpuTier tier) {
  if (t != TensorType::Q4_K && t != TensorType::Q6_K) return false;
  return tier == CpuTier::Avx512 && cpu_features().avx512vnni;
}

void gemv_k(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (!gemv_k_supported(w.type, best_cpu_tier()))
    throw Error("gemv_k", std::string("type ") + gguf::type_name(w.type) +
                              " is not Q4_K/Q6_K or this CPU lacks AVX512-VNNI");
  check_row_length(w.type, w.n_in, "gemv_k");
  if (w.n_out <= 0 || n_tokens <= 0) return;
  // Scratch reused across calls on this thread (no allocation once warm).
  thread_local std::vector<TokenAct> tokens;
  thread_local std::vector<Act> acts;
  if (tokens.size() < size_t(n_tokens)) tokens.resize(size_t(n_tokens));
  acts.resize(size_t(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) {
    prepare_token(w, x + size_t(t) * size_t(w.n_in), tokens[size_t(t)]);
    acts[size_t(t)] = tokens[size_t(t)].act;
  }
  const Act* a = acts.data();  // workers must see this thread's buffers, not theirs
  // Rows split in multiples of 16 (whole tiles; edges of 16 rows are whole cache lines apart).
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) {
        if (w.type == TensorType::Q4_K)
          q4_k_rows(w, a, n_tokens, int64_t(rb), int64_t(re), y);
        else
          q6_k_rows(w, a, n_tokens, int64_t(rb), int64_t(re), y);
      },
      16);
}

void gemv_k(const WeightView& w, const float* x, float* y, ThreadPool& pool) {
  gemv_k(w, x, 1, y, pool);
}

}  // namespace ragform::ops

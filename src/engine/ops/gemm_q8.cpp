// AVX512-VNNI int8 kernels for weights whose activations are Q8_0 blocks (Q8_0, Q5_0, Q4_0):
// a register-tiled GEMM for prefill and a GEMV for decode (gemm.h).
//
// GEMM data layout. vpdpbusd multiplies 4 unsigned bytes by 4 signed bytes per 32-bit lane and
// adds the 4 products into the lane. Lanes index tokens: activations of 16 tokens are packed so
// that one 64-byte vector holds 4 consecutive quants of each token, and the matching 4 weight
// quants of one row are broadcast to all lanes. The unsigned x signed rule is met by storing
// activations as u8 = q + 128 (q in -127..127) and starting each block's accumulator at
// -128 * sum(weight quants of the block): sum (q+128) w - 128 sum w = sum q w, exact in int32.
// Per block and token panel: 8 vectors of quants, then 16 float scales d_x:
//   panel[p].block[b] = { u8 quants [group 0..7][token 0..15][4], float d_x[token 0..15] }.
// A micro-tile is 4 weight rows x 32 tokens (8 int32 and 8 float accumulators); weight rows of a
// tile are read once per token block, the token block's panels (~kActBytes) stay in L2.
// GCC 12 reports its own _mm512_undefined_ps() inside _mm512_cvtepi32_ps as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/panel_gemm.h"
#include "engine/ops/quant_blocks.h"
#include "engine/ops/scratch.h"

#define RAGFORM_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace ragform::ops {

namespace {

constexpr int kPanel = 16;                                            // tokens per panel
constexpr int kGroups = QK8_0 / 4;                                    // 4-byte groups per block
constexpr size_t kQuantBytes = size_t(kGroups) * kPanel * 4;          // 512
constexpr size_t kBlockBytes = kQuantBytes + kPanel * sizeof(float);  // 576
constexpr int kRows = 4;                                              // weight rows per micro-tile
constexpr int kPanelsPerTile = 2;  // token panels per micro-tile (32 tokens)
// Activation bytes per token block: the panels one row tile is multiplied against, sized to
// stay in a 1 MB L2 next to the weight rows.
constexpr size_t kActBytes = 512 * 1024;

// Writes token `lane` of a panel from its Q8_0 blocks (nullptr = padding: q = 0, d = 0).
void pack_lane(const BlockQ8_0* q, int64_t nb, uint8_t* panel, int lane) {
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = panel + size_t(b) * kBlockBytes;
    for (int g = 0; g < kGroups; ++g)
      for (int j = 0; j < 4; ++j)
        blk[g * kPanel * 4 + lane * 4 + j] =
            q ? uint8_t(int(q[b].qs[4 * g + j]) + 128) : uint8_t(128);
    const float d = q ? fp16_to_fp32(q[b].d) : 0.0f;
    std::memcpy(blk + kQuantBytes + size_t(lane) * sizeof(float), &d, sizeof(float));
  }
}

// Q4_0 / Q5_0 blocks -> Q8_0 blocks, 32 quants per block in a few AVX-512 BW/VL operations: the
// nibbles side by side (element j low, j+16 high), Q5_0's 32 fifth bits as a byte mask.
RAGFORM_VNNI void unpack_q4_0(const BlockQ4_0* x, int64_t nb, BlockQ8_0* out) {
  const __m128i low4 = _mm_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs));
    const __m256i q =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low4), _mm_and_si128(qs, low4));
    out[b].d = x[b].d;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs),
                        _mm256_sub_epi8(q, _mm256_set1_epi8(8)));
  }
}

RAGFORM_VNNI void unpack_q5_0(const BlockQ5_0* x, int64_t nb, BlockQ8_0* out) {
  const __m128i low4 = _mm_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs));
    __m256i q =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low4), _mm_and_si128(qs, low4));
    uint32_t qh;
    std::memcpy(&qh, x[b].qh, 4);
    q = _mm256_mask_blend_epi8(__mmask32(qh), q, _mm256_or_si256(q, _mm256_set1_epi8(0x10)));
    out[b].d = x[b].d;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs),
                        _mm256_sub_epi8(q, _mm256_set1_epi8(16)));
  }
}

// Weight row r of w as Q8_0 blocks: the row itself for Q8_0, else unpacked into `tmp`. The
// unpacked quants are the integers the reference dot uses (Q4_0: nibble - 8; Q5_0: nibble |
// bit << 4, minus 16), with the same f16 scale, so every block's integer dot is unchanged.
const BlockQ8_0* row_as_q8_0(const WeightView& w, int64_t r, BlockQ8_0* tmp) {
  const uint8_t* row = w.data + size_t(r) * w.row_bytes();
  const int64_t nb = w.n_in / QK8_0;
  switch (w.type) {
    case TensorType::Q8_0:
      return reinterpret_cast<const BlockQ8_0*>(row);
    case TensorType::Q4_0:
      unpack_q4_0(reinterpret_cast<const BlockQ4_0*>(row), nb, tmp);
      return tmp;
    case TensorType::Q5_0:
      unpack_q5_0(reinterpret_cast<const BlockQ5_0*>(row), nb, tmp);
      return tmp;
    default:
      break;
  }
  throw Error("gemm_q8", std::string("type ") + gguf::type_name(w.type) + " is not Q8_0-like");
}

// Multiply and add with explicit round-to-nearest: builtins GCC never contracts into an FMA (C++
// defaults to -ffp-contract=fast, and the reference vec_dot has no FMA), so the GEMM keeps the
// reference's rounding.
RAGFORM_VNNI inline __m512 mul_rn(__m512 a, __m512 b) {
  return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
RAGFORM_VNNI inline __m512 add_rn(__m512 a, __m512 b) {
  return _mm512_add_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// One micro-tile: R rows x TT panels over all nb blocks. corr[b*R + r] = -128 * sum of row r's
// quants in block b, wd[b*R + r] its scale. out[r][t] for t < 16*TT.
template <int R, int TT>
RAGFORM_VNNI void micro_tile(const BlockQ8_0* const* wr, const int32_t* corr, const float* wd,
                             const uint8_t* p0, size_t pstride, int64_t nb,
                             float (*out)[kPanel * kPanelsPerTile]) {
  __m512 sum[R][TT];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int t = 0; t < TT; ++t) sum[r][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = p0 + size_t(b) * kBlockBytes;
    __m512i acc[R][TT];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512i c = _mm512_set1_epi32(corr[b * R + r]);
#pragma GCC unroll 2
      for (int t = 0; t < TT; ++t) acc[r][t] = c;
    }
#pragma GCC unroll 8
    for (int g = 0; g < kGroups; ++g) {
      __m512i a[TT];
#pragma GCC unroll 2
      for (int t = 0; t < TT; ++t)
        a[t] = _mm512_load_si512(pb + size_t(t) * pstride + size_t(g) * kPanel * 4);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        int32_t q4;
        std::memcpy(&q4, wr[r][b].qs + 4 * g, 4);
        const __m512i wb = _mm512_set1_epi32(q4);
#pragma GCC unroll 2
        for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], a[t], wb);
      }
    }
    __m512 dx[TT];
#pragma GCC unroll 2
    for (int t = 0; t < TT; ++t)
      dx[t] =
          _mm512_load_ps(reinterpret_cast<const float*>(pb + size_t(t) * pstride + kQuantBytes));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 dw = _mm512_set1_ps(wd[b * R + r]);
#pragma GCC unroll 2
      for (int t = 0; t < TT; ++t)  // sumf += (d_w * d_x) * float(isum), as vec_dot
        sum[r][t] = add_rn(sum[r][t], mul_rn(mul_rn(dw, dx[t]), _mm512_cvtepi32_ps(acc[r][t])));
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int t = 0; t < TT; ++t) _mm512_storeu_ps(out[r] + t * kPanel, sum[r][t]);
}

using MicroTileFn = void (*)(const BlockQ8_0* const*, const int32_t*, const float*, const uint8_t*,
                             size_t, int64_t, float (*)[kPanel * kPanelsPerTile]);

template <int R>
MicroTileFn pick_tile(int tt) {
  return tt == 2 ? &micro_tile<R, 2> : &micro_tile<R, 1>;
}

MicroTileFn tile_function(int rows, int tt) {
  switch (rows) {
    case 1:
      return pick_tile<1>(tt);
    case 2:
      return pick_tile<2>(tt);
    case 3:
      return pick_tile<3>(tt);
    default:
      return pick_tile<4>(tt);
  }
}

// -128 * sum of the quants of one block: the quants xor 0x80 are q + 128 as bytes, summed by
// vpsadbw against zero into four 64-bit lanes.
RAGFORM_VNNI int32_t block_correction(const BlockQ8_0& blk) {
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs));
  const __m256i s =
      _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8(char(0x80))), _mm256_setzero_si256());
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  const int32_t biased = int32_t(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1));
  return -128 * (biased - 128 * QK8_0);
}

// Rows [rb, re) of the GEMM against all panels. The per-block corrections and scales of every
// row tile are computed once, in the first token block, from the rows the tile is about to read
// (a separate pass over the weights before the token blocks read every weight twice from memory,
// which costs a decode step of a few sequences, with one token block, about a third of its
// time); Q4_0/Q5_0 rows are unpacked per token block (cheap, and keeps the scratch at one tile).
void gemm_rows(const WeightView& w, const uint8_t* panels, int64_t n_panels, int64_t n_tokens,
               size_t pstride, int64_t rb, int64_t re, float* y) {
  const int64_t nb = w.n_in / QK8_0;
  const int64_t n_tiles = (re - rb + kRows - 1) / kRows;
  const size_t tile_entries = size_t(kRows * nb);
  thread_local std::vector<BlockQ8_0> conv;
  thread_local std::vector<int32_t> corr;
  thread_local std::vector<float> wd;
  if (conv.size() < tile_entries) conv.resize(tile_entries);
  if (corr.size() < tile_entries * size_t(n_tiles)) corr.resize(tile_entries * size_t(n_tiles));
  if (wd.size() < tile_entries * size_t(n_tiles)) wd.resize(tile_entries * size_t(n_tiles));

  // Tile ti's entries: [b * rows + r] from ti * tile_entries.
  auto tile_constants = [&](const BlockQ8_0* const* wr, int rows, size_t base) {
    for (int r = 0; r < rows; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        corr[base + size_t(b * rows + r)] = block_correction(wr[r][b]);
        wd[base + size_t(b * rows + r)] = fp16_to_fp32(wr[r][b].d);
      }
  };

  const int64_t per_block =
      std::max<int64_t>(kPanelsPerTile, int64_t(kActBytes / pstride) / kPanelsPerTile * 2);
  float out[kRows][kPanel * kPanelsPerTile];
  for (int64_t p0 = 0; p0 < n_panels; p0 += per_block) {
    const int64_t p1 = std::min(n_panels, p0 + per_block);
    for (int64_t r0 = rb; r0 < re; r0 += kRows) {
      const int rows = int(std::min<int64_t>(kRows, re - r0));
      const size_t base = size_t((r0 - rb) / kRows) * tile_entries;
      const BlockQ8_0* wr[kRows];
      for (int r = 0; r < rows; ++r)
        wr[r] = row_as_q8_0(w, r0 + r, conv.data() + size_t(r) * size_t(nb));
      if (p0 == 0) tile_constants(wr, rows, base);
      for (int64_t p = p0; p < p1; p += kPanelsPerTile) {
        const int tt = int(std::min<int64_t>(kPanelsPerTile, p1 - p));
        tile_function(rows, tt)(wr, corr.data() + base, wd.data() + base,
                                panels + size_t(p) * pstride, pstride, nb, out);
        const int64_t t_end = std::min<int64_t>(n_tokens, (p + tt) * kPanel);
        for (int64_t t = p * kPanel; t < t_end; ++t) {
          float* yt = y + size_t(t) * size_t(w.n_out) + size_t(r0);
          for (int r = 0; r < rows; ++r) yt[r] = out[r][t - p * kPanel];
        }
      }
    }
  }
}

// One block's 32 weight quants as vpdpbusd operands, for the GEMV: returns 8 int32 lanes whose
// sum is the block's exact integer dot with the activation quants `a`.
//   Q8_0: sign trick, |w| (u8) times sign(w) * a (s8);
//   Q4_0 / Q5_0: the unsigned stored quants u (w = u - 8 or u - 16) times a, with the offset's
//   term -8 (-16) * sum(a) placed in lane 0 of the starting accumulator.
template <TensorType T>
RAGFORM_VNNI inline __m256i block_dot(const uint8_t* blk, const __m256i a, int32_t asum) {
  if constexpr (T == TensorType::Q8_0) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), _mm256_sign_epi8(a, w));
  } else {
    constexpr int kQs = T == TensorType::Q4_0 ? 2 : 6;  // offset of qs in the block
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQs));
    __m256i u =
        _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(qs, 4), low4), _mm_and_si128(qs, low4));
    int32_t offset = 8;
    if constexpr (T == TensorType::Q5_0) {
      uint32_t qh;
      std::memcpy(&qh, blk + 2, 4);
      u = _mm256_mask_blend_epi8(__mmask32(qh), u, _mm256_or_si256(u, _mm256_set1_epi8(0x10)));
      offset = 16;
    }
    return _mm256_dpbusd_epi32(_mm256_zextsi128_si256(_mm_cvtsi32_si128(-offset * asum)), u, a);
  }
}

// The exact integer sums of four blocks, each given as 8 int32 lanes (block_dot), as 4 lanes.
RAGFORM_VNNI inline __m128i block_sums4(__m256i s0, __m256i s1, __m256i s2, __m256i s3) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

RAGFORM_VNNI inline int32_t block_sum(__m256i s) {
  const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  const __m128i q = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(q, _mm_shuffle_epi32(q, 0xb1)));
}

// vec_dot's float operations for four consecutive blocks: sumf += (d_w * d_x) * float(isum), in
// block order, no FMA (the products four lanes at a time, the same roundings as one by one). This
// is what makes the GEMV return the GEMM's bits, so decode and prefill agree exactly.
RAGFORM_VNNI inline float add_blocks4(float sumf, __m128 dw, __m128 dx, __m128i isum) {
  alignas(16) float t[4];
  _mm_store_ps(t, _mm_mul_ps(_mm_mul_ps(dw, dx), _mm_cvtepi32_ps(isum)));
  return sumf + t[0] + t[1] + t[2] + t[3];
}

// The f16 scales of four blocks `bsize` bytes apart (each block starts with its scale), as floats.
RAGFORM_VNNI inline __m128 block_scales4(const uint8_t* b0, size_t bsize) {
  uint16_t d[4];
  for (int j = 0; j < 4; ++j) std::memcpy(&d[j], b0 + size_t(j) * bsize, 2);
  uint64_t d4;
  std::memcpy(&d4, d, 8);
  return _mm_cvtph_ps(_mm_cvtsi64_si128(int64_t(d4)));
}

// The activations of a GEMV in the layout the paired Q4_0/Q5_0 kernel reads: the quants of
// all blocks back to back (n_in bytes), and per pair of blocks the offset term of both blocks as
// the starting int32 accumulator (lane 0: block 2i, lane 8: block 2i+1; see pair_dot).
struct PairedActivations {
  std::vector<int8_t> q;
  std::vector<int32_t> offset;  // 16 int32 per pair
};

// Two consecutive Q4_0/Q5_0 blocks as the weight operand of one 512-bit vpdpbusd (pair_dot then
// multiplies it with a token's activations): the unsigned stored quants of block 2i in bytes 0..31
// and of 2i+1 in bytes 32..63 (element order within each block as stored: low nibbles are elements
// 0..15, high nibbles 16..31), so lanes 0..7 sum block 2i and lanes 8..15 block 2i+1, each
// including its -8 (-16) * sum(a) offset.
template <TensorType T>
RAGFORM_VNNI inline __m512i pair_unpack(const uint8_t* b0, const uint8_t* b1) {
  constexpr int kQs = T == TensorType::Q4_0 ? 2 : 6;  // offset of qs in the block
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i qs = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + kQs))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + kQs)), 1);
  const __m256i lo = _mm256_and_si256(qs, low4);                        // [lo0 | lo1]
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qs, 4), low4);  // [hi0 | hi1]
  // [lo0 hi0 lo1 hi1]: 128-bit lanes 0, 2 of lo/hi interleaved.
  __m512i u = _mm512_permutex2var_epi64(_mm512_castsi256_si512(lo),
                                        _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11),
                                        _mm512_castsi256_si512(hi));
  if constexpr (T == TensorType::Q5_0) {
    uint32_t h0, h1;
    std::memcpy(&h0, b0 + 2, 4);
    std::memcpy(&h1, b1 + 2, 4);
    const __mmask64 fifth = __mmask64(h0) | (__mmask64(h1) << 32);
    u = _mm512_mask_add_epi8(u, fifth, u, _mm512_set1_epi8(0x10));
  }
  return u;
}

// The pair's unsigned quants (pair_unpack) against one token's activations and offsets.
RAGFORM_VNNI inline __m512i pair_dot(__m512i u, const int8_t* a, const int32_t* offset) {
  return _mm512_dpbusd_epi32(_mm512_loadu_si512(offset), u, _mm512_loadu_si512(a));
}

// One token's activations in the forms the GEMV reads: Q8_0 blocks (quantize_row_q8_0, the
// reference's conversion), their scales as floats, their quant sums, and for Q4_0/Q5_0 the
// paired layout.
struct GemvActivations {
  std::vector<BlockQ8_0> act;
  std::vector<float> dx;
  std::vector<int32_t> asum;
  PairedActivations pa;
};

void prepare_gemv(const WeightView& w, const float* x, GemvActivations& g) {
  const int64_t nb = w.n_in / QK8_0;
  g.act.resize(size_t(nb));
  g.dx.resize(size_t(nb));
  g.asum.resize(size_t(nb));
  quantize_row_q8_0(x, g.act.data(), w.n_in);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ8_0& q = g.act[size_t(b)];
    g.dx[size_t(b)] = fp16_to_fp32(q.d);
    int s = 0;
    for (int j = 0; j < QK8_0; ++j) s += q.qs[j];
    g.asum[size_t(b)] = s;
  }
  if (w.type == TensorType::Q8_0) return;
  g.pa.q.resize(size_t(w.n_in));
  g.pa.offset.assign(size_t(nb / 2) * 16, 0);
  const int32_t k = w.type == TensorType::Q5_0 ? -16 : -8;
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(g.pa.q.data() + b * QK8_0, g.act[size_t(b)].qs, QK8_0);
    if (b < nb / 2 * 2) g.pa.offset[size_t(b / 2 * 16 + b % 2 * 8)] = k * g.asum[size_t(b)];
  }
}

// One row of the GEMV against NT tokens: per block the exact integer dot, four blocks' sums
// gathered into one vector, then vec_dot's float operations in block order, for each token (so
// bit-identical to the vec_dot path and the GEMM, whatever the other tokens). The weight side of
// each step (Q8_0: |w|; Q4_0/Q5_0: the unpacked pair) is formed once for all NT tokens, and their
// independent float chains interleave. A last group of fewer than four blocks goes one block at
// a time.
template <TensorType T, int NT>
RAGFORM_VNNI inline void row_dots(const uint8_t* row, int64_t nb, const GemvActivations* g,
                                  float* out) {
  const size_t bsize = size_t(gguf::type_info(T).type_size);
  float sumf[NT];
  for (int t = 0; t < NT; ++t) sumf[t] = 0.0f;
  int64_t b = 0;
  for (; b + 3 < nb; b += 4) {
    const uint8_t* b0 = row + size_t(b) * bsize;
    const __m128 dw = block_scales4(b0, bsize);
    if constexpr (T == TensorType::Q8_0) {
      __m256i w[4], wabs[4];
      for (int j = 0; j < 4; ++j) {
        w[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + size_t(j) * bsize + 2));
        wabs[j] = _mm256_abs_epi8(w[j]);
      }
      for (int t = 0; t < NT; ++t) {
        __m256i s[4];
        for (int j = 0; j < 4; ++j) {
          const __m256i a =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g[t].act[size_t(b + j)].qs));
          s[j] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wabs[j], _mm256_sign_epi8(a, w[j]));
        }
        sumf[t] = add_blocks4(sumf[t], dw, _mm_loadu_ps(g[t].dx.data() + b),
                              block_sums4(s[0], s[1], s[2], s[3]));
      }
    } else {
      const __m512i u0 = pair_unpack<T>(b0, b0 + bsize);
      const __m512i u1 = pair_unpack<T>(b0 + 2 * bsize, b0 + 3 * bsize);
      for (int t = 0; t < NT; ++t) {
        const PairedActivations& pa = g[t].pa;
        const __m512i s0 = pair_dot(u0, pa.q.data() + b * QK8_0, pa.offset.data() + 8 * b);
        const __m512i s1 =
            pair_dot(u1, pa.q.data() + (b + 2) * QK8_0, pa.offset.data() + 8 * (b + 2));
        sumf[t] =
            add_blocks4(sumf[t], dw, _mm_loadu_ps(g[t].dx.data() + b),
                        block_sums4(_mm512_castsi512_si256(s0), _mm512_extracti64x4_epi64(s0, 1),
                                    _mm512_castsi512_si256(s1), _mm512_extracti64x4_epi64(s1, 1)));
      }
    }
  }
  for (; b < nb; ++b) {
    const uint8_t* b0 = row + size_t(b) * bsize;
    uint16_t d0;
    std::memcpy(&d0, b0, 2);
    for (int t = 0; t < NT; ++t) {
      const __m256i a0 =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g[t].act[size_t(b)].qs));
      sumf[t] += _cvtsh_ss(d0) * g[t].dx[size_t(b)] *
                 float(block_sum(block_dot<T>(b0, a0, g[t].asum[size_t(b)])));
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = sumf[t];
}

// GEMV body for rows [rb, re) and n_tokens tokens: each row is read from memory once and, while
// it sits in L1, dotted with every token, four at a time (row_dots).
template <TensorType T>
RAGFORM_VNNI void gemv_rows(const WeightView& w, const GemvActivations* g, int64_t n_tokens,
                            int64_t rb, int64_t re, float* y) {
  const int64_t nb = w.n_in / QK8_0;
  for (int64_t r = rb; r < re; ++r) {
    const uint8_t* row = w.data + size_t(r) * w.row_bytes();
    for (int64_t t = 0; t < n_tokens; t += 4) {
      float s[4];
      const int nt = int(std::min<int64_t>(4, n_tokens - t));
      switch (nt) {
        case 1:
          row_dots<T, 1>(row, nb, g + t, s);
          break;
        case 2:
          row_dots<T, 2>(row, nb, g + t, s);
          break;
        case 3:
          row_dots<T, 3>(row, nb, g + t, s);
          break;
        default:
          row_dots<T, 4>(row, nb, g + t, s);
          break;
      }
      for (int k = 0; k < nt; ++k) y[size_t(t + k) * size_t(w.n_out) + size_t(r)] = s[k];
    }
  }
}

void check_q8_shape(const WeightView& w, const char* where) {
  if (!gemm_q8_supported(w.type, CpuTier::Avx512))
    throw Error(where, std::string("type ") + gguf::type_name(w.type) + " is not Q8_0-like");
  if (!gemm_q8_supported(w.type, best_cpu_tier())) throw Error(where, "this CPU lacks AVX512-VNNI");
  check_row_length(w.type, w.n_in, where);
}

}  // namespace

bool gemm_q8_supported(TensorType t, CpuTier tier) {
  if (t != TensorType::Q8_0 && t != TensorType::Q5_0 && t != TensorType::Q4_0) return false;
  return tier == CpuTier::Avx512 && cpu_features().avx512vnni;
}

void gemm_q8(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  check_q8_shape(w, "gemm_q8");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  // Quantise (quantize_row_q8_0, the reference's conversion) and pack, one panel per task.
  run_panel_gemm<BlockQ8_0>(
      w, x, n_tokens, w.n_in / QK8_0, kPanel, kBlockBytes, kRows, pool,
      [](const float* xr, BlockQ8_0* q, int64_t n) { quantize_row_q8_0(xr, q, n); },
      [](const BlockQ8_0* q, int64_t nb, uint8_t* panel, int lane) {
        pack_lane(q, nb, panel, lane);
      },
      [&](const uint8_t* panels, int64_t n_panels, size_t pstride, int64_t rb, int64_t re) {
        gemm_rows(w, panels, n_panels, n_tokens, pstride, rb, re, y);
      });
}

void gemv_q8(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  check_q8_shape(w, "gemv_q8");
  if (w.n_out <= 0 || n_tokens <= 0) return;
  thread_local std::vector<GemvActivations> acts;
  if (acts.size() < size_t(n_tokens)) acts.resize(size_t(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t)
    prepare_gemv(w, x + size_t(t) * size_t(w.n_in), acts[size_t(t)]);
  const GemvActivations* g = acts.data();  // workers must see this thread's buffers, not theirs
  auto rows = w.type == TensorType::Q8_0   ? &gemv_rows<TensorType::Q8_0>
              : w.type == TensorType::Q5_0 ? &gemv_rows<TensorType::Q5_0>
                                           : &gemv_rows<TensorType::Q4_0>;
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) { rows(w, g, n_tokens, int64_t(rb), int64_t(re), y); }, 16);
}

void gemv_q8(const WeightView& w, const float* x, float* y, ThreadPool& pool) {
  gemv_q8(w, x, 1, y, pool);
}

}  // namespace ragform::ops

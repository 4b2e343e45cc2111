// AVX512-VNNI GEMM for the K-quant weights Q4_K, Q5_K and Q6_K against Q8_K activations
// (gemm.h). Same token-lane scheme as gemm_q8.cpp: 16 tokens per 64-byte vector, 4 weight quants
// broadcast. Here the weights are the unsigned operand of vpdpbusd (their quants are stored
// unsigned: Q4_K 0..15, Q5_K 0..31, Q6_K 0..63 with the -32 moved into the bsums term) and the
// activations stay signed, so no offset is needed.
//
// Every type is brought to one form per 256-block and 16-element sub-block k (ggml-quants.c
// vec_dot_q*_K_q8_K, with bs_k the Q8_K bsums):
//   isum  = sum_k sc_k * (q . a)_k + sum_k e_k * bs_k      (Q6_K: e_k = -32 sc_k, else 0)
//   summs = sum_k m_k * bs_k                                (Q4_K/Q5_K mins, else 0)
//   sumf += (d_w * d_a) * float(isum) - (dmin_w * d_a) * float(summs)   (Q6_K: first term only)
// which is the reference's integer arithmetic exactly and its float operations in its order, so
// results are bit-identical to vec_dot. The bs terms use vpdpwssd on pairs of int16.
//
// Activation panel per 256-block: quants [group 0..63][token 0..15][4] s8 (4096 bytes), bsum
// pairs [pair 0..7][token 0..15][2] s16 (512 bytes), float d_a[token 0..15] (64 bytes).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
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

constexpr int kPanel = 16;
constexpr int kGroups = QK_K / 4;                             // 64
constexpr size_t kQuantBytes = size_t(kGroups) * kPanel * 4;  // 4096
constexpr size_t kPairBytes = 8 * kPanel * 4;                 // 512
constexpr size_t kBlockBytes = kQuantBytes + kPairBytes + kPanel * sizeof(float);
constexpr int kRows = 4;
constexpr int kPanelsPerTile = 2;
constexpr size_t kActBytes = 512 * 1024;

// One weight block in the common form (see the header comment).
struct KBlock {
  uint8_t q[QK_K];   // unsigned quants, element order
  int32_t sc[16];    // sub-block scales
  int32_t epair[8];  // (e_2i, e_2i+1) as two int16 in one int32
  int32_t mpair[8];  // (m_2i, m_2i+1)
  float d, dmin;
};

int32_t pair16(int a, int b) {
  return int32_t(uint32_t(uint16_t(int16_t(a))) | (uint32_t(uint16_t(int16_t(b))) << 16));
}

void unpack_row(TensorType t, const uint8_t* row, int64_t nb, KBlock* out) {
  for (int64_t i = 0; i < nb; ++i) {
    KBlock& k = out[i];
    if (t == TensorType::Q4_K || t == TensorType::Q5_K) {
      const uint8_t* scales;
      const uint8_t* qs;
      const uint8_t* qh = nullptr;
      if (t == TensorType::Q4_K) {
        const auto& x = reinterpret_cast<const BlockQ4_K*>(row)[i];
        k.d = fp16_to_fp32(x.d), k.dmin = fp16_to_fp32(x.dmin);
        scales = x.scales, qs = x.qs;
      } else {
        const auto& x = reinterpret_cast<const BlockQ5_K*>(row)[i];
        k.d = fp16_to_fp32(x.d), k.dmin = fp16_to_fp32(x.dmin);
        scales = x.scales, qs = x.qs, qh = x.qh;
      }
      for (int g = 0; g < 4; ++g)
        for (int l = 0; l < 32; ++l) {
          const uint8_t b = qs[32 * g + l];
          const int h0 = qh ? ((qh[l] >> (2 * g)) & 1) << 4 : 0;
          const int h1 = qh ? ((qh[l] >> (2 * g + 1)) & 1) << 4 : 0;
          k.q[64 * g + l] = uint8_t((b & 0xF) | h0);
          k.q[64 * g + 32 + l] = uint8_t((b >> 4) | h1);
        }
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, scales, sc, m);
        k.sc[2 * j] = k.sc[2 * j + 1] = sc;
        k.mpair[j] = pair16(m, m);
        k.epair[j] = 0;
      }
    } else {  // Q6_K
      const auto& x = reinterpret_cast<const BlockQ6_K*>(row)[i];
      k.d = fp16_to_fp32(x.d), k.dmin = 0.0f;
      for (int g = 0; g < 2; ++g) {
        const uint8_t* ql = x.ql + 64 * g;
        const uint8_t* qh = x.qh + 32 * g;
        for (int l = 0; l < 32; ++l) {
          k.q[128 * g + l] = uint8_t((ql[l] & 0xF) | ((qh[l] & 3) << 4));
          k.q[128 * g + 32 + l] = uint8_t((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
          k.q[128 * g + 64 + l] = uint8_t((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
          k.q[128 * g + 96 + l] = uint8_t((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
        }
      }
      for (int s = 0; s < 16; ++s) k.sc[s] = x.scales[s];
      for (int p = 0; p < 8; ++p) {
        k.epair[p] = pair16(-32 * x.scales[2 * p], -32 * x.scales[2 * p + 1]);
        k.mpair[p] = 0;
      }
    }
  }
}

void pack_lane(const BlockQ8_K* q, int64_t nb, uint8_t* panel, int lane) {
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* blk = panel + size_t(b) * kBlockBytes;
    for (int g = 0; g < kGroups; ++g)
      for (int j = 0; j < 4; ++j)
        blk[g * kPanel * 4 + lane * 4 + j] = q ? uint8_t(q[b].qs[4 * g + j]) : uint8_t(0);
    for (int p = 0; p < 8; ++p) {
      const int16_t s[2] = {q ? q[b].bsums[2 * p] : int16_t(0),
                            q ? q[b].bsums[2 * p + 1] : int16_t(0)};
      std::memcpy(blk + kQuantBytes + size_t(p) * kPanel * 4 + size_t(lane) * 4, s, 4);
    }
    const float d = q ? q[b].d : 0.0f;
    std::memcpy(blk + kQuantBytes + kPairBytes + size_t(lane) * sizeof(float), &d, sizeof(float));
  }
}

RAGFORM_VNNI inline __m512 mul_rn(__m512 a, __m512 b) {
  return _mm512_mul_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
RAGFORM_VNNI inline __m512 add_rn(__m512 a, __m512 b) {
  return _mm512_add_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
RAGFORM_VNNI inline __m512 sub_rn(__m512 a, __m512 b) {
  return _mm512_sub_round_ps(a, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

// R rows x TT panels over nb blocks; kMin: the type has the summs (minimum) term.
template <int R, int TT, bool kMin>
RAGFORM_VNNI void micro_tile(const KBlock* const* wr, const uint8_t* p0, size_t pstride, int64_t nb,
                             float (*out)[kPanel * kPanelsPerTile]) {
  __m512 sum[R][TT];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int t = 0; t < TT; ++t) sum[r][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* pb = p0 + size_t(b) * kBlockBytes;
    __m512i isum[R][TT];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int t = 0; t < TT; ++t) isum[r][t] = _mm512_setzero_si512();
    for (int k = 0; k < 16; ++k) {
      __m512i acc[R][TT];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int g = 4 * k; g < 4 * k + 4; ++g) {
        __m512i a[TT];
#pragma GCC unroll 2
        for (int t = 0; t < TT; ++t)
          a[t] = _mm512_load_si512(pb + size_t(t) * pstride + size_t(g) * kPanel * 4);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          int32_t q4;
          std::memcpy(&q4, wr[r][b].q + 4 * g, 4);
          const __m512i wq = _mm512_set1_epi32(q4);
#pragma GCC unroll 2
          for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_dpbusd_epi32(acc[r][t], wq, a[t]);
        }
      }
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m512i sc = _mm512_set1_epi32(wr[r][b].sc[k]);
#pragma GCC unroll 2
        for (int t = 0; t < TT; ++t)
          isum[r][t] = _mm512_add_epi32(isum[r][t], _mm512_mullo_epi32(acc[r][t], sc));
      }
    }
    // The bsums terms: e into isum (Q6_K), m into summs.
    __m512i summs[R][TT];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int t = 0; t < TT; ++t) summs[r][t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
      __m512i bs[TT];
#pragma GCC unroll 2
      for (int t = 0; t < TT; ++t)
        bs[t] = _mm512_load_si512(pb + size_t(t) * pstride + kQuantBytes + size_t(p) * kPanel * 4);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
#pragma GCC unroll 2
        for (int t = 0; t < TT; ++t) {
          if constexpr (kMin) {
            summs[r][t] =
                _mm512_dpwssd_epi32(summs[r][t], bs[t], _mm512_set1_epi32(wr[r][b].mpair[p]));
          } else {
            isum[r][t] =
                _mm512_dpwssd_epi32(isum[r][t], bs[t], _mm512_set1_epi32(wr[r][b].epair[p]));
          }
        }
      }
    }
    __m512 da[TT];
#pragma GCC unroll 2
    for (int t = 0; t < TT; ++t)
      da[t] = _mm512_load_ps(
          reinterpret_cast<const float*>(pb + size_t(t) * pstride + kQuantBytes + kPairBytes));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 dw = _mm512_set1_ps(wr[r][b].d);
      const __m512 dm = _mm512_set1_ps(wr[r][b].dmin);
#pragma GCC unroll 2
      for (int t = 0; t < TT; ++t) {
        __m512 term = mul_rn(mul_rn(dw, da[t]), _mm512_cvtepi32_ps(isum[r][t]));
        if constexpr (kMin)
          term = sub_rn(term, mul_rn(mul_rn(dm, da[t]), _mm512_cvtepi32_ps(summs[r][t])));
        sum[r][t] = add_rn(sum[r][t], term);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int t = 0; t < TT; ++t) _mm512_storeu_ps(out[r] + t * kPanel, sum[r][t]);
}

using TileFn = void (*)(const KBlock* const*, const uint8_t*, size_t, int64_t,
                        float (*)[kPanel * kPanelsPerTile]);

template <int R, bool kMin>
TileFn pick(int tt) {
  return tt == 2 ? &micro_tile<R, 2, kMin> : &micro_tile<R, 1, kMin>;
}

template <bool kMin>
TileFn pick_rows(int rows, int tt) {
  switch (rows) {
    case 1:
      return pick<1, kMin>(tt);
    case 2:
      return pick<2, kMin>(tt);
    case 3:
      return pick<3, kMin>(tt);
    default:
      return pick<4, kMin>(tt);
  }
}

void gemm_rows(const WeightView& w, const uint8_t* panels, int64_t n_panels, int64_t n_tokens,
               size_t pstride, int64_t rb, int64_t re, float* y) {
  const int64_t nb = w.n_in / QK_K;
  const bool has_min = w.type != TensorType::Q6_K;
  thread_local std::vector<KBlock> conv;
  if (conv.size() < size_t(kRows * nb)) conv.resize(size_t(kRows * nb));
  const int64_t per_block =
      std::max<int64_t>(kPanelsPerTile, int64_t(kActBytes / pstride) / kPanelsPerTile * 2);
  float out[kRows][kPanel * kPanelsPerTile];
  for (int64_t p0 = 0; p0 < n_panels; p0 += per_block) {
    const int64_t p1 = std::min(n_panels, p0 + per_block);
    for (int64_t r0 = rb; r0 < re; r0 += kRows) {
      const int rows = int(std::min<int64_t>(kRows, re - r0));
      const KBlock* wr[kRows];
      for (int r = 0; r < rows; ++r) {
        KBlock* dst = conv.data() + size_t(r) * size_t(nb);
        unpack_row(w.type, w.data + size_t(r0 + r) * w.row_bytes(), nb, dst);
        wr[r] = dst;
      }
      for (int64_t p = p0; p < p1; p += kPanelsPerTile) {
        const int tt = int(std::min<int64_t>(kPanelsPerTile, p1 - p));
        const TileFn fn = has_min ? pick_rows<true>(rows, tt) : pick_rows<false>(rows, tt);
        fn(wr, panels + size_t(p) * pstride, pstride, nb, out);
        const int64_t t_end = std::min<int64_t>(n_tokens, (p + tt) * kPanel);
        for (int64_t t = p * kPanel; t < t_end; ++t) {
          float* yt = y + size_t(t) * size_t(w.n_out) + size_t(r0);
          for (int r = 0; r < rows; ++r) yt[r] = out[r][t - p * kPanel];
        }
      }
    }
  }
}

}  // namespace

bool gemm_k_supported(TensorType t, CpuTier tier) {
  if (t != TensorType::Q4_K && t != TensorType::Q5_K && t != TensorType::Q6_K) return false;
  return tier == CpuTier::Avx512 && cpu_features().avx512vnni;
}

void gemm_k(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (!gemm_k_supported(w.type, CpuTier::Avx512))
    throw Error("gemm_k",
                std::string("type ") + gguf::type_name(w.type) + " is not Q4_K/Q5_K/Q6_K");
  if (!gemm_k_supported(w.type, best_cpu_tier()))
    throw Error("gemm_k", "this CPU lacks AVX512-VNNI");
  check_row_length(w.type, w.n_in, "gemm_k");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  run_panel_gemm<BlockQ8_K>(
      w, x, n_tokens, w.n_in / QK_K, kPanel, kBlockBytes, kRows, pool,
      [](const float* xr, BlockQ8_K* q, int64_t n) { quantize_row_q8_K(xr, q, n); },
      [](const BlockQ8_K* q, int64_t nb, uint8_t* panel, int lane) {
        pack_lane(q, nb, panel, lane);
      },
      [&](const uint8_t* panels, int64_t n_panels, size_t pstride, int64_t rb, int64_t re) {
        gemm_rows(w, panels, n_panels, n_tokens, pstride, rb, re, y);
      });
}

}  // namespace ragform::ops

// F16 prefill on the int16 dot-product units (gemm.h): weights and activations as 14-bit signed
// integers, multiplied with AVX512-VNNI vpdpwssd (32 exact int16 products per instruction, twice
// the fp32 FMA's), sums scaled back to fp32 per block of 32.
//
// Why: an F16 product of two halves needs fp32 FMA to be exact, and on this project's VM that
// caps F16 prefill at the fp32 peak (docs/performance.md). BF16 units would round both operands to
// 8-bit significands (measured: 2-4x the fixture tolerance). Integers with 13 bits of magnitude
// keep more precision than that and run at the int16 rate:
//   weights:      q_w = round(w * 8191 / max|row|), one scale d_w = max|row| / 8191 per row;
//   activations:  q_x = round(x * 8191 / max|block|), one scale d_x per token and block of 32;
//   y[t][r] = d_w[r] * sum_b fma(float(sum_{k in b} q_w q_x), d_x[t][b], .)  (b in order).
// |q| <= 8191 makes a block's 32 products fit int32: 32 * 8191^2 = 2146959392 < 2^31. The
// rounding error is about half a step of 1/8191 of the row (block) maximum, the same order as the
// F16 rounding of activations that ggml does; measured against llama.cpp, the F16 fixtures'
// logits stay within 0.0021 of the reference (tolerance 0.005; the fp32 path: 0.0014).
//
// The scalar reference (gemm_f16_int16_reference) performs the same integer sums and the same
// float operations in the same order, so the AVX-512 kernel is bit-identical to it (tested).
// Layout and loops follow gemm_f16.cpp: activations in panels of 16 tokens ([step][token] int16
// pairs, a step being k pair (2s, 2s+1)), 4-row x 48-token micro-tiles, weights quantised once per
// (row tile, k chunk, token block) into an L1 tile, token blocks of up to 528 tokens.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/gemm_tile.h"
#include "engine/ops/scratch.h"

#define RAGFORM_AVX512_VNNI \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace ragform::ops {

namespace {

using namespace tile;  // kPanel, TileOut, load_tile, store_tile (gemm_tile.h)

constexpr int kBlock = 32;                  // k per activation scale
constexpr int kStepsPerBlock = kBlock / 2;  // vpdpwssd takes k in pairs
constexpr float kQMax = 8191.0f;
constexpr int kRows = 4;
constexpr int kPanelsPerTile = 3;
constexpr int64_t kKcBlocks = 16;        // k chunk: 512 k (1 KB per weight row, 16 KB per panel)
constexpr int64_t kPanelsPerBlock = 33;  // token block: 528 tokens, 528 KB per k chunk (L2)

// The scale of `m` = max |values| (NaN when a value was not finite, so the outputs show it) and
// its inverse, the factor that maps m to kQMax.
struct Scale {
  float d, inv;
};
Scale scale_of(float m) {
  if (!(m <= std::numeric_limits<float>::max()))
    return {std::numeric_limits<float>::quiet_NaN(), 0.0f};
  if (m == 0.0f) return {0.0f, 0.0f};
  return {m / kQMax, kQMax / m};
}

// round-to-nearest-even of v * inv, clamped to +-kQMax (what vcvtps2dq + min/max compute).
// A NaN product (an infinite value times inv = 0) gives 0.
int16_t quantize(float v, float inv) {
  const float q = std::nearbyint(v * inv);
  if (q != q) return 0;
  return int16_t(std::min(kQMax, std::max(-kQMax, q)));
}

// max |w| of n F16 weights, from the bits (finite halves order like their magnitudes; an
// infinity or NaN gives a non-finite result).
float f16_abs_max(const uint16_t* w, int64_t n) {
  uint16_t m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max<uint16_t>(m, w[i] & 0x7fff);
  return m >= 0x7c00 ? std::numeric_limits<float>::infinity() : fp16_to_fp32(m);
}

RAGFORM_AVX512_VNNI float f16_abs_max_avx512(const uint16_t* w, int64_t n) {
  __m512i m = _mm512_setzero_si512();
  const __m512i mask = _mm512_set1_epi16(0x7fff);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    m = _mm512_max_epu16(m, _mm512_and_si512(_mm512_loadu_si512(w + i), mask));
  alignas(64) uint16_t lanes[32];
  _mm512_store_si512(lanes, m);
  uint16_t r = 0;
  for (uint16_t v : lanes) r = std::max(r, v);
  for (; i < n; ++i) r = std::max<uint16_t>(r, w[i] & 0x7fff);
  return r >= 0x7c00 ? std::numeric_limits<float>::infinity() : fp16_to_fp32(r);
}

// Activations of one token: q[k] and one scale per block of 32 (n % 32 == 0).
void quantize_token(const float* x, int64_t n, int16_t* q, float* d) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* v = x + b * kBlock;
    float m = 0.0f;
    bool finite = true;
    for (int i = 0; i < kBlock; ++i) {
      finite &= std::isfinite(v[i]);
      m = std::max(m, std::fabs(v[i]));
    }
    const Scale s = scale_of(finite ? m : std::numeric_limits<float>::infinity());
    d[b] = s.d;
    for (int i = 0; i < kBlock; ++i) q[b * kBlock + i] = quantize(v[i], s.inv);
  }
}

RAGFORM_AVX512_VNNI void quantize_token_avx512(const float* x, int64_t n, int16_t* q, float* d) {
  const __m512 lim = _mm512_set1_ps(kQMax), nlim = _mm512_set1_ps(-kQMax);
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kBlock), v1 = _mm512_loadu_ps(x + b * kBlock + 16);
    const __m512 a = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1));
    // Non-finite values: x - x is NaN for them, 0 otherwise (unordered: either side NaN).
    const __mmask16 bad =
        _mm512_cmp_ps_mask(_mm512_sub_ps(v0, v0), _mm512_sub_ps(v1, v1), _CMP_UNORD_Q);
    const float m = _mm512_reduce_max_ps(a);
    const Scale s = scale_of(bad ? std::numeric_limits<float>::infinity() : m);
    d[b] = s.d;
    const __m512 inv = _mm512_set1_ps(s.inv);
    for (int h = 0; h < 2; ++h) {
      // Clamped as floats; a NaN (inf x 0, in a block whose scale is NaN anyway) stays NaN and
      // converts to 0x80000000, whose low half is 0, as quantize() gives.
      __m512 p = _mm512_roundscale_ps(_mm512_mul_ps(h ? v1 : v0, inv), _MM_FROUND_TO_NEAREST_INT);
      p = _mm512_min_ps(lim, _mm512_max_ps(nlim, p));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock + 16 * h),
                          _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(p)));
    }
  }
}

// Weights k in [k0, k1) of one F16 row, quantised with the row's inverse scale.
void quantize_weights(const uint16_t* w, int64_t k0, int64_t k1, float inv, int16_t* q) {
  for (int64_t k = k0; k < k1; ++k) q[k - k0] = quantize(fp16_to_fp32(w[k]), inv);
}

RAGFORM_AVX512_VNNI void quantize_weights_avx512(const uint16_t* w, int64_t k0, int64_t k1,
                                                 float inv, int16_t* q) {
  const __m512 vinv = _mm512_set1_ps(inv);
  const __m512 lim = _mm512_set1_ps(kQMax), nlim = _mm512_set1_ps(-kQMax);
  int64_t k = k0;
  for (; k + 16 <= k1; k += 16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k));
    __m512 p =
        _mm512_roundscale_ps(_mm512_mul_ps(_mm512_cvtph_ps(h), vinv), _MM_FROUND_TO_NEAREST_INT);
    p = _mm512_min_ps(lim, _mm512_max_ps(nlim, p));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + (k - k0)),
                        _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(p)));
  }
  for (; k < k1; ++k) q[k - k0] = quantize(fp16_to_fp32(w[k]), inv);
}

// R rows x TT panels over n_blocks blocks of k: per block, 16 steps of vpdpwssd into int32
// accumulators, then acc = fma(float(isum), d_x, acc).
template <int R, int TT>
RAGFORM_AVX512_VNNI void micro_tile(const uint32_t* wt, int64_t wt_stride, const uint8_t* a0,
                                    size_t pstride, const float* s0, size_t sstride,
                                    int64_t n_blocks, TileOut o) {
  __m512 acc[R][TT];
  load_tile<R, TT>(acc, o);
  for (int64_t b = 0; b < n_blocks; ++b) {
    __m512i is[R][TT];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int t = 0; t < TT; ++t) is[r][t] = _mm512_setzero_si512();
    const uint8_t* ab = a0 + size_t(b) * kStepsPerBlock * 64;
    const uint32_t* wb = wt + b * kStepsPerBlock;
#pragma GCC unroll 2
    for (int s = 0; s < kStepsPerBlock; ++s) {
      __m512i a[TT];
#pragma GCC unroll 3
      for (int t = 0; t < TT; ++t) a[t] = _mm512_load_si512(ab + size_t(t) * pstride + s * 64);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const __m512i w = _mm512_set1_epi32(int32_t(wb[r * wt_stride + s]));
#pragma GCC unroll 3
        for (int t = 0; t < TT; ++t) is[r][t] = _mm512_dpwssd_epi32(is[r][t], a[t], w);
      }
    }
#pragma GCC unroll 3
    for (int t = 0; t < TT; ++t) {
      const __m512 dx = _mm512_load_ps(s0 + size_t(t) * sstride + size_t(b) * kPanel);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[r][t]), dx, acc[r][t]);
    }
  }
  store_tile<R, TT>(acc, o);
}

using TileFn = void (*)(const uint32_t*, int64_t, const uint8_t*, size_t, const float*, size_t,
                        int64_t, TileOut);

template <int R>
TileFn pick(int tt) {
  return tt == 3 ? &micro_tile<R, 3> : tt == 2 ? &micro_tile<R, 2> : &micro_tile<R, 1>;
}

TileFn tile_function(int rows, int tt) {
  return rows == 4 ? pick<4>(tt) : rows == 3 ? pick<3>(tt) : rows == 2 ? pick<2>(tt) : pick<1>(tt);
}

// Rows [rb, re) against all panels; `scale` holds the rows' inverse scales and scales.
void gemm_rows(const WeightView& w, const uint8_t* panels, const float* pscales, int64_t n_panels,
               int64_t n_tokens, size_t pstride, size_t sstride, int64_t rb, int64_t re,
               const Scale* scale, float* y) {
  constexpr int64_t kc_steps = kKcBlocks * kStepsPerBlock;
  thread_local std::vector<uint8_t> wt_buf, c_buf;
  auto* wt = aligned_scratch<uint32_t>(wt_buf, kRows * kc_steps);
  const int64_t n_blocks = w.n_in / kBlock;
  const size_t ldc = size_t(kPanelsPerBlock) * kPanel;
  const bool one_chunk = n_blocks <= kKcBlocks;
  float* c = one_chunk ? nullptr : aligned_scratch<float>(c_buf, size_t(re - rb) * ldc);
  const auto* wdata = reinterpret_cast<const uint16_t*>(w.data);
  float d_rows[kRows];
  for (int64_t p0 = 0; p0 < n_panels; p0 += kPanelsPerBlock) {
    const int64_t p1 = std::min(n_panels, p0 + kPanelsPerBlock);
    for (int64_t b0 = 0; b0 < n_blocks; b0 += kKcBlocks) {
      const int64_t bc = std::min(kKcBlocks, n_blocks - b0);
      for (int64_t r0 = rb; r0 < re; r0 += kRows) {
        const int rows = int(std::min<int64_t>(kRows, re - r0));
        for (int r = 0; r < rows; ++r) {
          const uint16_t* row = wdata + size_t(r0 + r) * size_t(w.n_in);
          quantize_weights_avx512(row, b0 * kBlock, (b0 + bc) * kBlock, scale[r0 - rb + r].inv,
                                  reinterpret_cast<int16_t*>(wt + r * kc_steps));
          d_rows[r] = scale[r0 - rb + r].d;
        }
        // The next tile's rows, which the hardware prefetcher does not follow (gemm_f16.cpp).
        for (int64_t r = r0 + kRows; r < std::min(re, r0 + 2 * kRows); ++r) {
          const auto* p = reinterpret_cast<const char*>(wdata + size_t(r) * size_t(w.n_in) +
                                                        size_t(b0 * kBlock));
          for (int64_t off = 0; off < bc * kBlock * 2; off += 64)
            _mm_prefetch(p + off, _MM_HINT_T0);
        }
        for (int64_t p = p0; p < p1; p += kPanelsPerTile) {
          const int tt = int(std::min<int64_t>(kPanelsPerTile, p1 - p));
          const int64_t t0 = p * kPanel;
          TileOut o{c ? c + size_t(r0 - rb) * ldc + size_t(p - p0) * kPanel : nullptr,
                    ldc,
                    b0 == 0,
                    b0 + bc >= n_blocks,
                    y + size_t(t0) * size_t(w.n_out) + size_t(r0),
                    w.n_out,
                    int(std::min<int64_t>(n_tokens - t0, int64_t(tt) * kPanel)),
                    d_rows};
          tile_function(rows, tt)(
              wt, kc_steps, panels + size_t(p) * pstride + size_t(b0) * kStepsPerBlock * 64,
              pstride, pscales + size_t(p) * sstride + size_t(b0) * kPanel, sstride, bc, o);
        }
      }
    }
  }
}

}  // namespace

bool gemm_f16_int16_supported(const WeightView& w, int64_t n_tokens, CpuTier tier) {
  return w.type == TensorType::F16 && w.n_in % kBlock == 0 && n_tokens >= kF16Int16MinTokens &&
         tier == CpuTier::Avx512 && cpu_features().avx512vnni && w.policy.f16 == F16Gemm::int16;
}

void gemm_f16_int16(const WeightView& w, const float* x, int64_t n_tokens, float* y,
                    ThreadPool& pool) {
  if (w.type != TensorType::F16 || w.n_in % kBlock != 0)
    throw Error("gemm_f16_int16",
                std::string("needs F16 weights with rows a multiple of 32, got ") +
                    gguf::type_name(w.type) + " rows of " + std::to_string(w.n_in));
  if (best_cpu_tier() != CpuTier::Avx512 || !cpu_features().avx512vnni)
    throw Error("gemm_f16_int16", "this CPU lacks AVX-512 VNNI");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  const int64_t n_blocks = w.n_in / kBlock;
  const int64_t n_panels = (n_tokens + kPanel - 1) / kPanel;
  const size_t pstride = size_t(w.n_in / 2) * 64;    // bytes of one panel's int16 pairs
  const size_t sstride = size_t(n_blocks) * kPanel;  // floats of one panel's scales
  thread_local std::vector<uint8_t> panel_buf, scale_buf;
  uint8_t* panels = aligned_scratch(panel_buf, pstride * size_t(n_panels));
  float* pscales = aligned_scratch<float>(scale_buf, sstride * size_t(n_panels));
  pool.parallel_for(size_t(n_panels), [&](size_t pb, size_t pe, int) {
    thread_local std::vector<int16_t> q;
    thread_local std::vector<float> d;
    q.resize(size_t(w.n_in));
    d.resize(size_t(n_blocks));
    for (size_t p = pb; p < pe; ++p)
      for (int lane = 0; lane < kPanel; ++lane) {
        const int64_t t = int64_t(p) * kPanel + lane;
        if (t < n_tokens) {
          quantize_token_avx512(x + size_t(t) * size_t(w.n_in), w.n_in, q.data(), d.data());
        } else {
          std::fill(q.begin(), q.end(), int16_t(0));
          std::fill(d.begin(), d.end(), 0.0f);
        }
        auto* pairs = reinterpret_cast<uint32_t*>(panels + p * pstride) + lane;
        const auto* src = reinterpret_cast<const uint32_t*>(q.data());
        for (int64_t s = 0; s < w.n_in / 2; ++s) pairs[size_t(s) * kPanel] = src[s];
        float* sc = pscales + p * sstride + size_t(lane);
        for (int64_t b = 0; b < n_blocks; ++b) sc[size_t(b) * kPanel] = d[size_t(b)];
      }
  });
  const auto* wdata = reinterpret_cast<const uint16_t*>(w.data);
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) {
        thread_local std::vector<Scale> scales;
        scales.resize(re - rb);
        for (size_t r = rb; r < re; ++r)
          scales[r - rb] = scale_of(f16_abs_max_avx512(wdata + r * size_t(w.n_in), w.n_in));
        gemm_rows(w, panels, pscales, n_panels, n_tokens, pstride, sstride, int64_t(rb),
                  int64_t(re), scales.data(), y);
      },
      kRows);
}

void gemm_f16_int16_reference(const WeightView& w, const float* x, int64_t n_tokens, float* y) {
  if (w.type != TensorType::F16 || w.n_in % kBlock != 0)
    throw Error("gemm_f16_int16_reference", "needs F16 weights with rows a multiple of 32");
  const int64_t K = w.n_in, n_blocks = K / kBlock;
  std::vector<int16_t> qx(size_t(n_tokens * K)), qw(static_cast<size_t>(K));
  std::vector<float> dx(size_t(n_tokens * n_blocks));
  for (int64_t t = 0; t < n_tokens; ++t)
    quantize_token(x + t * K, K, qx.data() + t * K, dx.data() + t * n_blocks);
  const auto* wdata = reinterpret_cast<const uint16_t*>(w.data);
  for (int64_t r = 0; r < w.n_out; ++r) {
    const uint16_t* row = wdata + size_t(r) * size_t(K);
    const Scale s = scale_of(f16_abs_max(row, K));
    quantize_weights(row, 0, K, s.inv, qw.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      float acc = 0.0f;
      for (int64_t b = 0; b < n_blocks; ++b) {
        int32_t isum = 0;
        for (int i = 0; i < kBlock; ++i)
          isum += int32_t(qw[size_t(b * kBlock + i)]) * int32_t(qx[size_t(t * K + b * kBlock + i)]);
        acc = std::fma(float(isum), dx[size_t(t * n_blocks + b)], acc);
      }
      y[size_t(t) * size_t(w.n_out) + size_t(r)] = acc * s.d;
    }
  }
}

}  // namespace ragform::ops

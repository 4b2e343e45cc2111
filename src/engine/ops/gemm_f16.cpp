// AVX-512 GEMM for F16 and BF16 weights (gemm.h): fp32 FMA with the half -> float conversion
// amortised over the token block.
//
// Activations are rounded exactly as convert_activations does (F16: round to half; BF16: round to
// bf16; ggml's vec_dot operand) and stored transposed in panels of 16 tokens, [k][token] floats,
// so one vector holds one k for 16 tokens. A micro-tile is 8 weight rows x 48 tokens: 24 fp32
// accumulators, per k three activation loads, eight weight broadcasts and 24 FMAs (the loads
// from L2 stay under one per FMA cycle). The weight rows are converted to fp32 once per (row
// tile, k chunk, token block) into an 8 x kKc buffer (L1), while the next tile's rows are
// prefetched. Loops: token blocks (up to 528 tokens, one block for a 512-token prompt, so weights
// are converted once) > k chunks of kKc > row tiles > panel triples; partial sums over k chunks
// live in a per-thread C buffer and the last chunk scatters into y.
//
// Accuracy: every product is exact in fp32 (an 11-bit by 11-bit significand product, or 8 by 8
// for BF16) and accumulated with FMA in fp32 along k in order, per output; the reference sums in
// 16 interleaved lanes without FMA. Both are fp32 sums of the same exact products, so they agree
// to a few ulps of sum |w a| (tested), far inside the engine's fixture tolerances.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/gemm_tile.h"
#include "engine/ops/scratch.h"

#define RAGFORM_AVX512_BF16 \
  __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16")))

namespace ragform::ops {

namespace {

using namespace tile;  // kPanel, TileOut, load_tile, store_tile (gemm_tile.h)

constexpr int kRows = 8;
constexpr int kPanelsPerTile = 3;
constexpr int64_t kKc = 256;             // k chunk, in steps (see micro_tile)
constexpr int64_t kPanelsPerBlock = 33;  // token block: 528 tokens, 528 KB per k chunk (L2)

// Converts n weights of row `src` (F16 or BF16) to fp32.
RAGFORM_AVX512 void convert_row(TensorType t, const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  if (t == TensorType::F16) {
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(
          dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
    for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
  } else {
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(
          dst + i,
          _mm512_castsi512_ps(_mm512_slli_epi32(
              _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))),
              16)));
    for (; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);
  }
}

void prefetch_row(const uint16_t* src, int64_t n) {
  const auto* p = reinterpret_cast<const char*>(src);
  for (int64_t b = 0; b < n * 2; b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
}

// The activation rounding of convert_activations, 16 at a time: F16 through vcvtps2ph with
// round-to-nearest-even (what fp16.h's fp32_to_fp16 reproduces, NaN and overflow included);
// BF16 as fp32_to_bf16 (round to nearest even, NaN kept quiet).
RAGFORM_AVX512 void round_row(TensorType t, const float* x, int64_t n, float* out) {
  int64_t i = 0;
  if (t == TensorType::F16) {
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(x + i),
                                                                _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; ++i) out[i] = round_fp16(x[i]);
  } else {
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
    const __m512i high = _mm512_set1_epi32(int32_t(0xffff0000u));
    for (; i + 16 <= n; i += 16) {
      const __m512 v = _mm512_loadu_ps(x + i);
      const __m512i u = _mm512_castps_si512(v);
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
      __m512i r = _mm512_and_si512(_mm512_add_epi32(u, _mm512_add_epi32(bias, lsb)), high);
      // NaN: keep the top bits and force quiet (bit 6 of the bf16 = bit 22 of the float).
      const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      r = _mm512_mask_mov_epi32(
          r, nan, _mm512_and_si512(_mm512_or_si512(u, _mm512_set1_epi32(1 << 22)), high));
      _mm512_storeu_ps(out + i, _mm512_castsi512_ps(r));
    }
    for (; i < n; ++i) out[i] = round_bf16(x[i]);
  }
}

// Both schemes walk k in "steps" of 64 panel bytes and 4 weight-tile bytes:
//   fp32: a step is one k; the panel holds 16 fp32 activations, the tile one fp32 weight;
//   bf16 dot (BF16 weights on AVX512-BF16 CPUs): a step is a pair of k; the panel holds 16
//     (x[2s], x[2s+1]) bf16 pairs, the tile the weight pair (w[2s], w[2s+1]); vdpbf16ps adds
//     both exact products per lane, twice the arithmetic of an fp32 FMA per instruction.
// sum over steps s < n_steps of tile[r][s] . panel[t][s], added to C or written to y.
template <int R, int TT>
RAGFORM_AVX512 void micro_tile(const uint32_t* wt, const uint8_t* a0, size_t pstride,
                               int64_t n_steps, const TileOut& o) {
  __m512 acc[R][TT];
  load_tile<R, TT>(acc, o);
  for (int64_t k = 0; k < n_steps; ++k) {
    __m512 a[TT];
#pragma GCC unroll 3
    for (int t = 0; t < TT; ++t) a[t] = _mm512_load_ps(a0 + size_t(t) * pstride + size_t(k) * 64);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 wb = _mm512_castsi512_ps(_mm512_set1_epi32(int32_t(wt[r * kKc + k])));
#pragma GCC unroll 3
      for (int t = 0; t < TT; ++t) acc[r][t] = _mm512_fmadd_ps(wb, a[t], acc[r][t]);
    }
  }
  store_tile<R, TT>(acc, o);
}

template <int R, int TT>
RAGFORM_AVX512_BF16 void micro_tile_dot(const uint32_t* wt, const uint8_t* a0, size_t pstride,
                                        int64_t n_steps, const TileOut& o) {
  __m512 acc[R][TT];
  load_tile<R, TT>(acc, o);
  for (int64_t k = 0; k < n_steps; ++k) {
    __m512i a[TT];
#pragma GCC unroll 3
    for (int t = 0; t < TT; ++t)
      a[t] = _mm512_load_si512(a0 + size_t(t) * pstride + size_t(k) * 64);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i wb = _mm512_set1_epi32(int32_t(wt[r * kKc + k]));
#pragma GCC unroll 3
      for (int t = 0; t < TT; ++t)
        acc[r][t] = _mm512_dpbf16_ps(acc[r][t], (__m512bh)a[t], (__m512bh)wb);
    }
  }
  store_tile<R, TT>(acc, o);
}

using TileFn = void (*)(const uint32_t*, const uint8_t*, size_t, int64_t, const TileOut&);

template <bool Dot, int R>
TileFn pick(int tt) {
  if constexpr (Dot)
    return tt == 3   ? &micro_tile_dot<R, 3>
           : tt == 2 ? &micro_tile_dot<R, 2>
                     : &micro_tile_dot<R, 1>;
  else
    return tt == 3 ? &micro_tile<R, 3> : tt == 2 ? &micro_tile<R, 2> : &micro_tile<R, 1>;
}

template <bool Dot, int... R>
TileFn pick_rows(int rows, int tt, std::integer_sequence<int, R...>) {
  TileFn f = nullptr;
  ((rows == R + 1 ? (f = pick<Dot, R + 1>(tt), 0) : 0), ...);
  return f;
}

TileFn tile_function(bool dot, int rows, int tt) {
  return dot ? pick_rows<true>(rows, tt, std::make_integer_sequence<int, kRows>{})
             : pick_rows<false>(rows, tt, std::make_integer_sequence<int, kRows>{});
}

// The weight tile entries of one row for steps [s0, s0 + n): fp32 weights, or raw bf16 pairs
// with a zero past the row's end (n_in odd).
void weight_steps(bool dot, const WeightView& w, int64_t row, int64_t s0, int64_t n,
                  uint32_t* dst) {
  const auto* src = reinterpret_cast<const uint16_t*>(w.data) + size_t(row) * size_t(w.n_in);
  if (!dot) return convert_row(w.type, src + s0, n, reinterpret_cast<float*>(dst));
  const int64_t k0 = 2 * s0, k1 = std::min(w.n_in, 2 * (s0 + n));
  std::memcpy(dst, src + k0, size_t(k1 - k0) * 2);
  if ((k1 - k0) % 2) reinterpret_cast<uint16_t*>(dst)[k1 - k0] = 0;
}

// Rows [rb, re) against all panels (pstride bytes per panel, n_steps steps per row).
void gemm_rows(const WeightView& w, bool dot, const uint8_t* panels, int64_t n_panels,
               int64_t n_tokens, size_t pstride, int64_t n_steps, int64_t rb, int64_t re,
               float* y) {
  thread_local std::vector<uint8_t> wt_buf, c_buf;
  auto* wt = aligned_scratch<uint32_t>(wt_buf, kRows * kKc);
  const size_t ldc = size_t(kPanelsPerBlock) * kPanel;
  const bool one_chunk = n_steps <= kKc;
  float* c = one_chunk ? nullptr : aligned_scratch<float>(c_buf, size_t(re - rb) * ldc);
  const int64_t k_per_step = dot ? 2 : 1;
  const auto* wdata = reinterpret_cast<const uint16_t*>(w.data);
  for (int64_t p0 = 0; p0 < n_panels; p0 += kPanelsPerBlock) {
    const int64_t p1 = std::min(n_panels, p0 + kPanelsPerBlock);
    for (int64_t s0 = 0; s0 < n_steps; s0 += kKc) {
      const int64_t sc = std::min(kKc, n_steps - s0);
      for (int64_t r0 = rb; r0 < re; r0 += kRows) {
        const int rows = int(std::min<int64_t>(kRows, re - r0));
        for (int r = 0; r < rows; ++r) weight_steps(dot, w, r0 + r, s0, sc, wt + r * kKc);
        // The next tile's weights are 8 short runs in rows n_in apart, which the hardware
        // prefetcher does not follow: without this the tile set-up waits on DRAM (a sixth of
        // the kernel's time); the tile below is thousands of cycles of FMAs to hide it.
        for (int64_t r = r0 + kRows; r < std::min(re, r0 + 2 * kRows); ++r)
          prefetch_row(wdata + size_t(r) * size_t(w.n_in) + size_t(s0 * k_per_step),
                       std::min(sc * k_per_step, w.n_in - s0 * k_per_step));
        for (int64_t p = p0; p < p1; p += kPanelsPerTile) {
          const int tt = int(std::min<int64_t>(kPanelsPerTile, p1 - p));
          const int64_t t0 = p * kPanel;
          const TileOut o{c ? c + size_t(r0 - rb) * ldc + size_t(p - p0) * kPanel : nullptr,
                          ldc,
                          s0 == 0,
                          s0 + sc >= n_steps,
                          y + size_t(t0) * size_t(w.n_out) + size_t(r0),
                          w.n_out,
                          int(std::min<int64_t>(n_tokens - t0, int64_t(tt) * kPanel))};
          tile_function(dot, rows, tt)(wt, panels + size_t(p) * pstride + size_t(s0) * 64, pstride,
                                       sc, o);
        }
      }
    }
  }
}

// Rows [rb, re) of a one-token product: four 16-lane FMA accumulators per row.
RAGFORM_AVX512 void gemv_rows(TensorType t, const uint16_t* w, int64_t n_in, const float* a,
                              int64_t rb, int64_t re, float* y) {
  const bool f16 = t == TensorType::F16;
  for (int64_t r = rb; r < re; ++r) {
    const uint16_t* row = w + size_t(r) * size_t(n_in);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 64 <= n_in; i += 64)
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i + 16 * u));
        // F16: keep the load a separate instruction. With it folded into vcvtph2ps, decode
        // streamed from DRAM measured slower (5 alternated `bench --tg 32 -r 3` runs: mean 24.4
        // vs 27.1 t/s, noisy); cache-resident the two forms are equally fast. BF16: no change.
        if (f16) __asm__("" : "+v"(h));
        const __m512 wf =
            f16 ? _mm512_cvtph_ps(h)
                : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        acc[u] = _mm512_fmadd_ps(wf, _mm512_loadu_ps(a + i + 16 * u), acc[u]);
      }
    float s = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
    for (; i < n_in; ++i) s += (f16 ? fp16_to_fp32(row[i]) : bf16_to_fp32(row[i])) * a[i];
    y[r] = s;
  }
}

}  // namespace

void gemv_f16(const WeightView& w, const float* x, float* y, ThreadPool& pool) {
  if (!gemm_f16_supported(w.type, best_cpu_tier()))
    throw Error("gemv_f16", std::string("type ") + gguf::type_name(w.type) +
                                " is not F16/BF16 or this CPU lacks AVX-512");
  if (w.n_out <= 0) return;
  thread_local std::vector<float> act;
  if (act.size() < size_t(w.n_in)) act.resize(size_t(w.n_in));
  // convert_activations' rounding, vectorised (the decode step's only serial part here: the
  // scalar form measured 1.7% of F16 decode).
  round_row(w.type, x, w.n_in, act.data());
  const float* a = act.data();
  const auto* wd = reinterpret_cast<const uint16_t*>(w.data);
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) {
        gemv_rows(w.type, wd, w.n_in, a, int64_t(rb), int64_t(re), y);
      },
      16);
}

bool gemm_f16_supported(TensorType t, CpuTier tier) {
  return (t == TensorType::F16 || t == TensorType::BF16) && tier == CpuTier::Avx512;
}

void gemm_f16(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (!gemm_f16_supported(w.type, CpuTier::Avx512))
    throw Error("gemm_f16", std::string("type ") + gguf::type_name(w.type) + " is not F16/BF16");
  if (!gemm_f16_supported(w.type, best_cpu_tier()))
    throw Error("gemm_f16", "this CPU lacks AVX-512");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  // BF16 weights take the vdpbf16ps scheme where the CPU has it: ggml rounds their activations
  // to bf16 too, so the products are the same exact products either way.
  const bool dot = w.type == TensorType::BF16 && cpu_features().avx512bf16;
  const int64_t n_steps = dot ? (w.n_in + 1) / 2 : w.n_in;
  const int64_t n_panels = (n_tokens + kPanel - 1) / kPanel;
  const size_t pstride = size_t(n_steps) * 64;  // bytes
  thread_local std::vector<uint8_t> panel_buf;
  uint8_t* panels = aligned_scratch(panel_buf, pstride * size_t(n_panels));
  pool.parallel_for(size_t(n_panels), [&](size_t pb, size_t pe, int) {
    thread_local std::vector<float> row;
    if (row.size() < size_t(w.n_in) + 1) row.resize(size_t(w.n_in) + 1);
    for (size_t p = pb; p < pe; ++p)
      for (int lane = 0; lane < kPanel; ++lane) {
        const int64_t t = int64_t(p) * kPanel + lane;
        if (t < n_tokens) {
          round_row(w.type, x + size_t(t) * size_t(w.n_in), w.n_in, row.data());
          row[size_t(w.n_in)] = 0.0f;  // the pad of an odd n_in in the bf16 scheme
        } else {
          std::fill(row.begin(), row.end(), 0.0f);
        }
        uint8_t* dst = panels + p * pstride;
        if (!dot) {
          auto* f = reinterpret_cast<float*>(dst) + lane;
          for (int64_t k = 0; k < w.n_in; ++k) f[size_t(k) * kPanel] = row[size_t(k)];
          continue;
        }
        // row[] holds bf16 values as floats: their top halves are the bf16 bits.
        auto* h = reinterpret_cast<uint16_t*>(dst) + 2 * lane;
        for (int64_t s = 0; s < n_steps; ++s)
          for (int j = 0; j < 2; ++j) {
            uint32_t bits;
            std::memcpy(&bits, &row[size_t(2 * s + j)], 4);
            h[size_t(s) * 2 * kPanel + size_t(j)] = uint16_t(bits >> 16);
          }
      }
  });
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) {
        gemm_rows(w, dot, panels, n_panels, n_tokens, pstride, n_steps, int64_t(rb), int64_t(re),
                  y);
      },
      kRows);
}

}  // namespace ragform::ops

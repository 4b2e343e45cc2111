// F32 weights on AVX-512: vec_dot's dot_f32 order for every output (lane j sums the products of
// k = j mod 16, k ascending, multiply then add; then lane k + w is added into lane k for
// w = 8, 4, 2, 1), so a row's result is the same alone, in a batch, in decode and on the scalar
// tier.
//
// Why F32 keeps this order where F16/BF16 moved to one fused chain along k (gemm_f16.cpp): F32
// products round, and a 16-lane sum stays closer to ggml's (64 fused lanes per F32 row); the F32
// fixture models match llama.cpp to about 1e-6 with it, and the single chain moved one tiny-llama
// position by 3e-4 (tolerance 1e-4). F32 matrices are the reference models and small encoders,
// not what users run for speed, so this is an inner-product kernel straight from the rows: a
// micro-tile of 4 rows x 6 tokens (24 zmm accumulators) loads 10 vectors per 24 multiply-adds and
// ends each output with the 4-step tree; one token keeps 4 rows in flight.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "base/error.h"
#include "engine/ops/gemm.h"
#include "engine/ops/simd_target.h"

namespace ragform::ops {

namespace {
// Tokens whose activations stay in a 1 MB L2 while row tiles pass under them.
constexpr size_t kActBlockBytes = 256 * 1024;
constexpr int kTileRows = 4, kTileTokens = 6;
}  // namespace

RAGFORM_TARGET_BEGIN("avx2,fma,avx512f,avx512bw,avx512vl")
namespace avx512_f32 {
namespace {

// vec_dot's reduce_lanes: acc[k] += acc[k + w] for w = 8, 4, 2, 1.
inline float reduce16(__m512 v) {
  alignas(64) float a[16];
  _mm512_store_ps(a, v);
  for (int w = 8; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) a[k] += a[k + w];
  return a[0];
}

// R weight rows x T tokens (row and token pointers, n floats each): y[t * n_out + r] for the
// first `rows` rows and `tokens` tokens (the others repeat a valid pointer and are dropped). The
// last partial step adds in lanes [0, n mod 16) only, as vec_dot does.
template <int R, int T>
void micro_tile(const float* const* wr, const float* const* ar, int64_t n, float* y, int64_t n_out,
                int rows, int tokens) {
  __m512 acc[R][T];
  for (auto& row : acc)
    for (auto& a : row) a = _mm512_setzero_ps();
  const int64_t full = n / 16 * 16;
  for (int64_t k = 0; k < full; k += 16) {
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm512_loadu_ps(wr[r] + k);
    for (int t = 0; t < T; ++t) {
      const __m512 a = _mm512_loadu_ps(ar[t] + k);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_add_ps(acc[r][t], _mm512_mul_ps(wv[r], a));
    }
  }
  if (full < n) {
    const __mmask16 m = __mmask16((1u << (n - full)) - 1);
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < T; ++t)
        acc[r][t] = _mm512_mask_add_ps(acc[r][t], m, acc[r][t],
                                       _mm512_mul_ps(_mm512_maskz_loadu_ps(m, wr[r] + full),
                                                     _mm512_maskz_loadu_ps(m, ar[t] + full)));
  }
  for (int t = 0; t < tokens; ++t)
    for (int r = 0; r < rows; ++r) y[t * n_out + r] = reduce16(acc[r][t]);
}

// Rows [rb, re) for tokens [t0, t1), R x T tiles.
template <int R, int T>
void rows_tokens(const WeightView& w, const float* x, int64_t t0, int64_t t1, int64_t rb,
                 int64_t re, float* y) {
  const auto* rows = reinterpret_cast<const float*>(w.data);
  const int64_t n = w.n_in;
  for (int64_t r0 = rb; r0 < re; r0 += R) {
    const int nr = int(std::min<int64_t>(R, re - r0));
    const float* wr[R];
    for (int r = 0; r < R; ++r) wr[r] = rows + size_t(r0 + std::min(r, nr - 1)) * size_t(n);
    for (int64_t t = t0; t < t1; t += T) {
      const int nt = int(std::min<int64_t>(T, t1 - t));
      const float* ar[T];
      for (int i = 0; i < T; ++i) ar[i] = x + size_t(t + std::min(i, nt - 1)) * size_t(n);
      micro_tile<R, T>(wr, ar, n, y + size_t(t) * size_t(w.n_out) + size_t(r0), w.n_out, nr, nt);
    }
  }
}

void gemm(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (n_tokens == 1) {
    pool.parallel_for(
        size_t(w.n_out),
        [&](size_t rb, size_t re, int) {
          rows_tokens<kTileRows, 1>(w, x, 0, 1, int64_t(rb), int64_t(re), y);
        },
        16);
    return;
  }
  const int64_t tb =
      std::max<int64_t>(kTileTokens, int64_t(kActBlockBytes / (size_t(w.n_in) * sizeof(float))) /
                                         kTileTokens * kTileTokens);
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) {
        for (int64_t t0 = 0; t0 < n_tokens; t0 += tb)
          rows_tokens<kTileRows, kTileTokens>(w, x, t0, std::min(n_tokens, t0 + tb), int64_t(rb),
                                              int64_t(re), y);
      },
      kTileRows);
}

}  // namespace
void run(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  gemm(w, x, n_tokens, y, pool);
}
}  // namespace avx512_f32
RAGFORM_TARGET_END

bool gemm_f32_supported(TensorType t, CpuTier tier) {
  return t == TensorType::F32 && tier == CpuTier::Avx512;
}

void gemm_f32(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (w.type != TensorType::F32)
    throw Error("gemm_f32", std::string("type ") + gguf::type_name(w.type) + " is not F32");
  if (clamp_tier(CpuTier::Avx512) != CpuTier::Avx512)
    throw Error("gemm_f32", "this CPU lacks AVX-512");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  avx512_f32::run(w, x, n_tokens, y, pool);
}

}  // namespace ragform::ops

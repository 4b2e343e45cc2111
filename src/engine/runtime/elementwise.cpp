#include "engine/runtime/elementwise.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "engine/model/blocks.h"
#include "engine/ops/simd_target.h"

namespace ragform::runtime {
namespace {

#include "engine/runtime/simd_traits.inc"

// silu(g) * u over whole vectors; the caller finishes the tail with the scalar form.
#define RAGFORM_SWIGLU_BODY                                           \
  int64_t i = 0;                                                      \
  const V::reg one = V::set1(1.0f), zero = V::zero();                 \
  for (; i + V::W <= n; i += V::W) {                                  \
    const V::reg g = V::load(gate + i);                               \
    const V::reg s = V::div(g, V::add(one, V::exp(V::sub(zero, g)))); \
    V::store(out + i, V::mul(s, V::load(up + i)));                    \
  }                                                                   \
  return i;

RAGFORM_TARGET_BEGIN("avx2,fma,f16c")
namespace avx2 {
int64_t swiglu(const float* gate, const float* up, int64_t n, float* out){RAGFORM_SWIGLU_BODY}

// Table GELU times up over whole vectors of 8 (the caller finishes the tail).
int64_t geglu(const float* gate, const float* up, int64_t n, float* out, const float* table) {
  int64_t i = 0;
  const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256i half = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT));
    __m256 y = _mm256_i32gather_ps(table, half, 4);
    y = _mm256_blendv_ps(y, g, _mm256_cmp_ps(g, hi, _CMP_GE_OQ));
    y = _mm256_andnot_ps(_mm256_cmp_ps(g, lo, _CMP_LE_OQ), y);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(y, _mm256_loadu_ps(up + i)));
  }
  return i;
}
}  // namespace avx2
RAGFORM_TARGET_END

RAGFORM_TARGET_BEGIN("avx512f,avx2,fma,f16c")
RAGFORM_AVX512_WARNINGS_OFF  // see simd_target.h
namespace avx512 {
int64_t swiglu(const float* gate, const float* up, int64_t n, float* out){RAGFORM_SWIGLU_BODY}

// Table GELU times up over whole vectors of 16 (the caller finishes the tail).
int64_t geglu(const float* gate, const float* up, int64_t n, float* out, const float* table) {
  int64_t i = 0;
  const __m512 lo = _mm512_set1_ps(-10.0f), hi = _mm512_set1_ps(10.0f);
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512i half = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(g, _MM_FROUND_TO_NEAREST_INT));
    __m512 y = _mm512_i32gather_ps(half, table, 4);
    y = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(g, hi, _CMP_GE_OQ), y, g);
    y = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(g, lo, _CMP_NLE_UQ), y);
    _mm512_storeu_ps(out + i, _mm512_mul_ps(y, _mm512_loadu_ps(up + i)));
  }
  return i;
}
}  // namespace avx512
RAGFORM_AVX512_WARNINGS_ON
RAGFORM_TARGET_END

#undef RAGFORM_SWIGLU_BODY

}  // namespace

void swiglu(const float* gate, const float* up, int64_t n, float* out, SimdLevel level) {
  if (level > cpu_simd_level())
    throw Error("swiglu", std::string("this CPU does not support ") + simd_name(level));
  if (level == SimdLevel::Scalar) return model::swiglu(gate, up, int(n), out);
  const auto body = level == SimdLevel::Avx512 ? &avx512::swiglu : &avx2::swiglu;
  const int64_t done = body(gate, up, n, out);
  if (done == n) return;
  // The tail goes through the vector form too, zero padded: every element gets the same exp
  // whatever its place in the array, so an element's result does not depend on how many rows
  // the caller passes at once (batch invariance: a tail lane here would be a vector lane in a
  // longer call).
  alignas(64) float g[16] = {}, u[16] = {}, o[16];
  const int64_t rest = n - done;
  std::copy(gate + done, gate + n, g);
  std::copy(up + done, up + n, u);
  body(g, u, 16, o);
  std::copy(o, o + rest, out + done);
}

void geglu(const float* gate, const float* up, int64_t n, float* out, SimdLevel level) {
  if (level > cpu_simd_level())
    throw Error("geglu", std::string("this CPU does not support ") + simd_name(level));
  int64_t done = 0;
  if (level != SimdLevel::Scalar) {
    const float* table = model::gelu_table_f32();
    done = level == SimdLevel::Avx512 ? avx512::geglu(gate, up, n, out, table)
                                      : avx2::geglu(gate, up, n, out, table);
  }
  // The tail (and the scalar tier): the same table and the same rounding to half, so the bits do
  // not depend on where an element falls.
  model::gelu(gate + done, int(n - done), out + done);
  for (int64_t i = done; i < n; ++i) out[i] *= up[i];
}

}  // namespace ragform::runtime

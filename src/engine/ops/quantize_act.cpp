// Activation conversion to each weight type's vec_dot type, rounding exactly as ggml's x86 CPU
// build does (see ops.h). The quantisers here are the ones llama.cpp ran for the fixtures:
// quantize_row_q8_0 / q8_1 from ggml-cpu/arch/x86/quants.c (AVX path: _mm256_round_ps with
// _MM_ROUND_NEAREST, i.e. ties to even, of x * (127 / amax)), and quantize_row_q8_K, which on x86
// is quantize_row_q8_K_ref from ggml-quants.c.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"
#include "engine/ops/simd_target.h"

namespace ragform::ops {

namespace {

// ggml's nearest_int: adding 1.5 * 2^23 makes the FPU round to an integer (ties to even under
// the default rounding mode); valid for |v| < 2^22, which every caller guarantees.
inline int nearest_int(float v) {
  const float big = v + 12582912.f;
  return int(std::bit_cast<uint32_t>(big) & 0x007fffffu) - 0x00400000;
}

// max |x| over a 32-block. Plain max is order-independent (no NaN in valid activations).
inline float block_amax(const float* x, int n) {
  float m = 0.0f;
  for (int j = 0; j < n; ++j) m = std::max(m, std::fabs(x[j]));
  return m;
}

}  // namespace

bool is_weight_type(TensorType t) {
  switch (t) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    case TensorType::Q8_1:
    case TensorType::Q8_K:
      return false;
  }
  return false;
}

TensorType activation_type(TensorType t) {
  switch (t) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
      return t;
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
      return TensorType::Q8_0;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
      return TensorType::Q8_1;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return TensorType::Q8_K;
    case TensorType::Q8_1:
    case TensorType::Q8_K:
      break;
  }
  throw Error("ops", std::string("type ") + gguf::type_name(t) + " is not a weight type");
}

void quantize_row_q8_0_ref(const float* x, void* dst, int64_t n) {
  check_row_length(TensorType::Q8_0, n, "quantize_row_q8_0");
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / QK8_0; ++i, x += QK8_0) {
    const float amax = block_amax(x, QK8_0);
    const float d = amax / 127.f;
    y[i].d = fp32_to_fp16(d);
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;  // not 1/d: ggml's AVX path
    for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = int8_t(nearest_int(x[j] * id));
  }
}

void quantize_row_q8_1(const float* x, void* dst, int64_t n) {
  check_row_length(TensorType::Q8_1, n, "quantize_row_q8_1");
  auto* y = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / QK8_1; ++i, x += QK8_1) {
    const float amax = block_amax(x, QK8_1);
    const float d = amax / 127.f;
    y[i].d = fp32_to_fp16(d);
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < QK8_1; ++j) {
      const int q = nearest_int(x[j] * id);
      y[i].qs[j] = int8_t(q);
      sum += q;
    }
    // s uses the unrounded float d times the integer sum, then rounds to f16 (AVX path).
    y[i].s = fp32_to_fp16(d * float(sum));
  }
}

void quantize_row_q8_K_ref(const float* x, void* dst, int64_t n) {
  check_row_length(TensorType::Q8_K, n, "quantize_row_q8_K");
  auto* y = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    // The signed element of largest magnitude (first one on ties), as quantize_row_q8_K_ref.
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < QK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      y[i].d = 0.0f;
      std::memset(y[i].qs, 0, sizeof(y[i].qs));
      std::memset(y[i].bsums, 0, sizeof(y[i].bsums));
      continue;
    }
    // iscale = -127/max (ggml changed it from -128/max); the max element maps to -127 and
    // nothing can exceed +127 after the MIN.
    const float iscale = -127.f / max;
    for (int j = 0; j < QK_K; ++j) y[i].qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
    for (int j = 0; j < QK_K / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * j + l];
      y[i].bsums[j] = int16_t(sum);
    }
    y[i].d = 1 / iscale;
  }
}

namespace {
RAGFORM_TARGET_BEGIN("avx512f,avx512bw,avx2,fma,f16c")
RAGFORM_AVX512_WARNINGS_OFF  // see simd_target.h
namespace avx512 {
// max |x| of 16k floats (k vectors). vmaxps returns its second operand when either is NaN, so
// with the running maximum second a NaN element is skipped, as std::max(m, |x|) skips it.
inline float amax_of(const float* x, int k) {
  __m512 m = _mm512_setzero_ps();
  for (int v = 0; v < k; ++v) m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 16 * v)), m);
  return _mm512_reduce_max_ps(m);
}

// Rounds x * s to the nearest integer, ties to even (vcvtps2dq under the default MXCSR, as
// nearest_int for |v| < 2^22; a NaN product gives INT_MIN, whose low byte 0 is nearest_int's).
inline __m512i round_scaled(const float* x, __m512 s) {
  return _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), s));
}

void q8_0(const float* x, BlockQ8_0* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += QK8_0) {
    const float amax = amax_of(x, QK8_0 / 16);
    y[i].d = fp32_to_fp16(amax / 127.f);
    const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
    for (int v = 0; v < QK8_0 / 16; ++v)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs + 16 * v),
                       _mm512_cvtepi32_epi8(round_scaled(x + 16 * v, id)));
  }
}

void q8_k(const float* x, BlockQ8_K* y, int64_t blocks) {
  for (int64_t i = 0; i < blocks; ++i, x += QK_K) {
    const float amax = amax_of(x, QK_K / 16);
    if (amax == 0.0f) {
      y[i].d = 0.0f;
      std::memset(y[i].qs, 0, sizeof(y[i].qs));
      std::memset(y[i].bsums, 0, sizeof(y[i].bsums));
      continue;
    }
    // The signed element of largest magnitude, the first one on ties (as the reference).
    int j = 0;
    while (std::fabs(x[j]) != amax) ++j;
    const float iscale = -127.f / x[j];
    const __m512 s = _mm512_set1_ps(iscale);
    const __m512i top = _mm512_set1_epi32(127);
    for (int v = 0; v < QK_K / 16; ++v) {
      const __m128i q = _mm512_cvtepi32_epi8(_mm512_min_epi32(round_scaled(x + 16 * v, s), top));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y[i].qs + 16 * v), q);
      y[i].bsums[v] = int16_t(_mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q)));  // of the bytes
    }
    y[i].d = 1 / iscale;
  }
}
}  // namespace avx512
RAGFORM_AVX512_WARNINGS_ON
RAGFORM_TARGET_END

bool avx512_quantisers() {
  static const bool yes = cpu_features().avx512f && cpu_features().avx512bw;
  return yes;
}
}  // namespace

void quantize_row_q8_0(const float* x, void* dst, int64_t n, CpuTier tier) {
  if (tier < CpuTier::Avx512 || !avx512_quantisers()) return quantize_row_q8_0_ref(x, dst, n);
  check_row_length(TensorType::Q8_0, n, "quantize_row_q8_0");
  avx512::q8_0(x, static_cast<BlockQ8_0*>(dst), n / QK8_0);
}

void quantize_row_q8_K(const float* x, void* dst, int64_t n, CpuTier tier) {
  if (tier < CpuTier::Avx512 || !avx512_quantisers()) return quantize_row_q8_K_ref(x, dst, n);
  check_row_length(TensorType::Q8_K, n, "quantize_row_q8_K");
  avx512::q8_k(x, static_cast<BlockQ8_K*>(dst), n / QK_K);
}

size_t activation_row_bytes(TensorType w, int64_t n) {
  const TensorType a = activation_type(w);
  if (a == TensorType::F16 || a == TensorType::BF16) return size_t(n) * sizeof(float);
  return gguf::row_bytes(a, n);
}

void convert_activations(TensorType w, const float* x, int64_t n, void* dst, CpuTier tier) {
  const TensorType a = activation_type(w);
  check_row_length(w, n, "convert_activations");
  switch (a) {
    case TensorType::F32:
      std::memcpy(dst, x, size_t(n) * sizeof(float));
      return;
    case TensorType::F16: {
      auto* out = static_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) out[i] = round_fp16(x[i]);
      return;
    }
    case TensorType::BF16: {
      auto* out = static_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) out[i] = round_bf16(x[i]);
      return;
    }
    case TensorType::Q8_0:
      return quantize_row_q8_0(x, dst, n, tier);
    case TensorType::Q8_1:
      return quantize_row_q8_1(x, dst, n);
    case TensorType::Q8_K:
      return quantize_row_q8_K(x, dst, n, tier);
    default:
      break;
  }
  throw Error("convert_activations", std::string("no activation format for ") + gguf::type_name(w));
}

void activations_to_float(TensorType w, const void* act, int64_t n, float* dst) {
  const TensorType a = activation_type(w);
  if (a == TensorType::F16 || a == TensorType::BF16 || a == TensorType::F32) {
    std::memcpy(dst, act, size_t(n) * sizeof(float));
    return;
  }
  dequantize_row(a, act, dst, n);
}

}  // namespace ragform::ops

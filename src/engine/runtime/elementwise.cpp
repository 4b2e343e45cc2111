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
int64_t swiglu(const float* gate, const float* up, int64_t n, float* out) { RAGFORM_SWIGLU_BODY }
}  // namespace avx2
RAGFORM_TARGET_END

RAGFORM_TARGET_BEGIN("avx512f,avx2,fma,f16c")
RAGFORM_AVX512_WARNINGS_OFF  // see simd_target.h
namespace avx512 {
int64_t swiglu(const float* gate, const float* up, int64_t n, float* out) { RAGFORM_SWIGLU_BODY }
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

}  // namespace ragform::runtime

#pragma once
// Target regions for the runtime's SIMD kernels: every function defined between
// RAGFORM_TARGET_BEGIN("avx2,fma,f16c") and RAGFORM_TARGET_END is compiled for that instruction
// set, whatever -march says, and the caller dispatches at run time (attention.h cpu_simd_level,
// cpu_features.h). GCC spells a region `#pragma GCC push_options` + `#pragma GCC target(...)`;
// clang ignores those and has `#pragma clang attribute push(__attribute__((target(...))), apply_to
// = function)`, which gives each function declared in the region the same target attribute. The GCC
// expansion is the pragma pair this file replaced, so GCC builds compile exactly as before.

// clang-format off
#define RAGFORM_PRAGMA(x) _Pragma(#x)

#if defined(__clang__)
#define RAGFORM_TARGET_BEGIN(features) \
  RAGFORM_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define RAGFORM_TARGET_END RAGFORM_PRAGMA(clang attribute pop)
// GCC 12's avx512fintrin.h builds several intrinsics on _mm512_undefined_ps(), which
// -Wmaybe-uninitialized reports as a use of an uninitialised value (a known false positive);
// clang has no such warning.
#define RAGFORM_AVX512_WARNINGS_OFF
#define RAGFORM_AVX512_WARNINGS_ON
#else
#define RAGFORM_TARGET_BEGIN(features) RAGFORM_PRAGMA(GCC push_options) RAGFORM_PRAGMA(GCC target(features))
#define RAGFORM_TARGET_END RAGFORM_PRAGMA(GCC pop_options)
#define RAGFORM_AVX512_WARNINGS_OFF \
  RAGFORM_PRAGMA(GCC diagnostic push) RAGFORM_PRAGMA(GCC diagnostic ignored "-Wmaybe-uninitialized")
#define RAGFORM_AVX512_WARNINGS_ON RAGFORM_PRAGMA(GCC diagnostic pop)
#endif
// clang-format on

// Runtime CPU dispatch for the matrix kernels. The binary is built for baseline x86-64 (no
// -march=native); kernels that use AVX2 or AVX-512 carry their own __attribute__((target(...)))
// and are chosen here, once per process, from what the CPU reports (cpuid via
// __builtin_cpu_supports). A weight's MatmulPolicy (ops.h, from EngineOptions; the CLI reads
// RAGFORM_CPU=scalar|avx2|avx512 into it) caps the tier, never above what the CPU has, so tests
// and benchmarks can compare variants in one binary on one machine.
//
// Tiers: Scalar = portable C++ reference kernels (vec_dot.cpp; GCC target_clones may still give
// them an AVX2 body); Avx2 = AVX2/FMA/F16C kernels; Avx512 = AVX-512 F/BW/VL kernels, with the
// int8 GEMM additionally needing AVX512-VNNI and BF16 kernels AVX512-BF16.
#pragma once
#include <string>

namespace ragform::ops {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false;
  bool avx512vnni = false, avx512bf16 = false;
  // cpuid's vendor is "AuthenticAMD" (where a kernel's best instruction differs by vendor: the
  // BF16 GEMM, gemm_f16.cpp).
  bool amd = false;
};

enum class CpuTier { Scalar = 0, Avx2 = 1, Avx512 = 2 };

// What this CPU supports (detected once; all false on non-x86 builds).
const CpuFeatures& cpu_features();

// The best tier the CPU supports.
CpuTier best_cpu_tier();

// min(requested, best_cpu_tier()): the tier a caller asking for `requested` actually gets.
CpuTier clamp_tier(CpuTier requested);

// "scalar" / "avx2" / "avx512".
const char* tier_name(CpuTier t);
// Parses a tier name; throws UsageError(where, ...) for anything else.
CpuTier parse_tier(const std::string& name, const char* where);

// One line for `ragform info` / benchmarks, e.g. "avx512 (avx2 fma f16c avx512f ... vnni bf16)".
std::string cpu_summary();

}  // namespace ragform::ops

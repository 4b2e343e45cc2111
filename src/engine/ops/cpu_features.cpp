// CPU feature detection and tier names (see cpu_features.h).
#include "engine/ops/cpu_features.h"

#include <cstdlib>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "base/error.h"

namespace ragform::ops {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  // F16C: cpuid leaf 1, ECX bit 29 (GCC 12 has no __builtin_cpu_supports name for it).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) f.f16c = (ecx & bit_F16C) != 0;
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.amd = __builtin_cpu_is("amd");
#endif
  return f;
}

CpuTier detect_tier(const CpuFeatures& f) {
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx2 && f.fma) return CpuTier::Avx512;
  if (f.avx2 && f.fma && f.f16c) return CpuTier::Avx2;
  return CpuTier::Scalar;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

CpuTier best_cpu_tier() {
  static const CpuTier t = detect_tier(cpu_features());
  return t;
}

CpuTier clamp_tier(CpuTier requested) {
  return int(requested) < int(best_cpu_tier()) ? requested : best_cpu_tier();
}

const char* tier_name(CpuTier t) {
  switch (t) {
    case CpuTier::Scalar:
      return "scalar";
    case CpuTier::Avx2:
      return "avx2";
    case CpuTier::Avx512:
      return "avx512";
  }
  return "?";
}

CpuTier parse_tier(const std::string& name, const char* where) {
  if (name == "scalar") return CpuTier::Scalar;
  if (name == "avx2") return CpuTier::Avx2;
  if (name == "avx512") return CpuTier::Avx512;
  throw UsageError(where, "unknown CPU tier '" + name + "' (expected scalar, avx2 or avx512)");
}

std::string cpu_summary() {
  const CpuFeatures& f = cpu_features();
  std::string s = tier_name(best_cpu_tier());
  s += " (";
  const std::pair<bool, const char*> flags[] = {{f.avx2, "avx2"},
                                                {f.fma, "fma"},
                                                {f.f16c, "f16c"},
                                                {f.avx512f, "avx512f"},
                                                {f.avx512bw, "avx512bw"},
                                                {f.avx512vl, "avx512vl"},
                                                {f.avx512vnni, "avx512vnni"},
                                                {f.avx512bf16, "avx512bf16"}};
  bool first = true;
  for (const auto& [on, name] : flags) {
    if (!on) continue;
    if (!first) s += ' ';
    s += name;
    first = false;
  }
  if (first) s += "baseline x86-64";
  return s + ")";
}

}  // namespace ragform::ops

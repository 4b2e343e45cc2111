// IEEE binary16 ("half", F16) and bfloat16 (BF16) <-> binary32 conversions, bit-exact with ggml's
// CPU build: float -> half rounds to nearest, ties to even, as `_cvtss_sh(x, 0)` (F16C) does,
// including overflow to infinity, half subnormals and quiet-NaN payloads; float -> bf16 is ggml's
// `ggml_compute_fp32_to_bf16` (round to nearest even, NaN forced quiet). Written in portable C++
// so results do not depend on whether the build machine has F16C.
#pragma once
#include <bit>
#include <cstdint>

namespace ragform::ops {

// Half -> float is exact (every half is a float).
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float v = float(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

// Float -> half, round to nearest even (F16C `vcvtps2ph` with imm 0).
inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf, or NaN (quietened, top payload bits kept)
    if (ax == 0x7f800000u) return uint16_t(sign | 0x7c00u);
    return uint16_t(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                                  // below 2^-14: half subnormal or 0
    if (ax <= 0x33000000u) return uint16_t(sign);          // <= 2^-25 (tie) rounds to 0
    const uint32_t e = ax >> 23;
    const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - e;  // value / 2^-24 = m * 2^(e-126); 14 <= shift <= 24
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal
    return uint16_t(sign | q);
  }
  const uint32_t r = ax - 0x38000000u;  // rebias exponent 127 -> 15
  uint32_t q = r >> 13;
  const uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // carry may bump the exponent
  return uint16_t(sign | q);
}

// Rounds a float to the nearest half and back (what ggml does to F16-weight activations).
inline float round_fp16(float f) { return fp16_to_fp32(fp32_to_fp16(f)); }

inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

// ggml_compute_fp32_to_bf16: NaN keeps its top bits and is forced quiet; everything else rounds
// to nearest even (overflow goes to infinity naturally).
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 64u);
  return uint16_t((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

inline float round_bf16(float f) { return bf16_to_fp32(fp32_to_bf16(f)); }

// A 65536-entry half -> float table for hot loops (built once, thread-safe static init).
const float* fp16_table();

}  // namespace ragform::ops

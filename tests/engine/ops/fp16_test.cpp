// F16 / BF16 conversions: hand-picked values (ties, overflow, subnormals, NaN), an exhaustive
// half round trip, and — where the CPU has F16C — agreement with `_cvtss_sh(x, 0)` (what ggml
// uses on x86) over many random and boundary floats.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "engine/ops/fp16.h"

using namespace ragform::ops;

namespace {
uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

__attribute__((target("f16c"))) uint16_t hw_fp32_to_fp16(float f) { return _cvtss_sh(f, 0); }
}  // namespace

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_fp16(0.5f), 0x3800);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);  // largest half
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);  // below the tie to 65536: rounds down
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // tie rounds to even = overflow to inf
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(0x1p-14f), 0x0400);    // smallest normal
  EXPECT_EQ(fp32_to_fp16(0x1p-24f), 0x0001);    // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(0x1p-25f), 0x0000);    // tie between 0 and 2^-24 -> even (0)
  EXPECT_EQ(fp32_to_fp16(0x1.8p-25f), 0x0001);  // above the tie
  EXPECT_EQ(fp32_to_fp16(0x1.8p-24f), 0x0002);  // 1.5 ulp tie -> even (2)
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  // Ties in the normal range: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> even (1.0);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 -> 1+2^-9.
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(fp32_to_fp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // just above the tie
  // Mantissa carry into the exponent: 2 - 2^-12 rounds up to 2.0.
  EXPECT_EQ(fp32_to_fp16(2.0f - 0x1p-12f), 0x4000);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(std::nanf("")) & 0x7e00, 0x7e00);  // quiet NaN

  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16_to_fp32(0x03ff), 1023 * 0x1p-24f);
  EXPECT_EQ(fp16_to_fp32(0xfbff), -65504.0f);
  EXPECT_TRUE(std::isinf(fp16_to_fp32(0x7c00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
  EXPECT_EQ(round_fp16(0.1f), 0.0999755859375f);
}

TEST(Fp16, ExhaustiveRoundTripAndTable) {
  const float* table = fp16_table();
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(uint16_t(h));
    ASSERT_EQ(bits(table[h]), bits(f)) << h;
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), h) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16, MatchesF16cHardware) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU has no F16C";
  std::mt19937 rng(42);
  // Random bit patterns over the whole float range, and floats near every half boundary.
  for (int i = 0; i < 2000000; ++i) {
    const float f = from_bits(uint32_t(rng()));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), hw_fp32_to_fp16(f)) << std::hexfloat << f;
  }
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = fp16_to_fp32(uint16_t(h)), hi = fp16_to_fp32(uint16_t(h + 1));
    const float mid = lo + (hi - lo) / 2;  // exact tie
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), -mid}) {
      ASSERT_EQ(fp32_to_fp16(f), hw_fp32_to_fp16(f)) << std::hexfloat << f;
    }
  }
}

TEST(Bf16, RoundingAndNan) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties to even -> 1.0.
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);  // odd neighbour -> round up
  EXPECT_EQ(fp32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  EXPECT_EQ(fp32_to_bf16(from_bits(0x7f7fffff)), 0x7f80);  // FLT_MAX rounds to inf
  // NaN: top 16 bits with the quiet bit (64) forced: signalling 0x7f800001 -> 0x7fc0.
  EXPECT_EQ(fp32_to_bf16(from_bits(0x7f800001)), 0x7fc0);
  EXPECT_EQ(fp32_to_bf16(from_bits(0xffc12345)), 0xffc1);
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(round_bf16(3.14159265f), 3.140625f);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_fp32(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_bf16(f), h);
  }
}

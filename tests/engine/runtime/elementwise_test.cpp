// runtime/elementwise.h: every SIMD tier of swiglu against model::swiglu (std::exp), over a range
// that includes exp's clamping and underflow regions, odd lengths (vector tails) and aliasing.
#include "engine/runtime/elementwise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/model/blocks.h"
#include "engine/ops/fp16.h"

namespace ragform::runtime {
namespace {

std::vector<SimdLevel> tiers() {
  std::vector<SimdLevel> t{SimdLevel::Scalar};
  if (cpu_simd_level() >= SimdLevel::Avx2) t.push_back(SimdLevel::Avx2);
  if (cpu_simd_level() >= SimdLevel::Avx512) t.push_back(SimdLevel::Avx512);
  return t;
}

TEST(Elementwise, SwigluMatchesScalarFormOnEveryTier) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> wide(-100.0f, 100.0f);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const int n = 1000 + 13;  // not a multiple of any vector width
  std::vector<float> g(n), u(n);
  for (int i = 0; i < n; ++i) {
    g[size_t(i)] = i % 5 == 0 ? wide(rng) : nd(rng);
    u[size_t(i)] = nd(rng);
  }
  g[0] = 0.0f, g[1] = -88.5f, g[2] = 88.5f, g[3] = -1e-30f;
  std::vector<float> ref(n);
  model::swiglu(g.data(), u.data(), n, ref.data());
  for (SimdLevel lv : tiers()) {
    std::vector<float> out(n);
    swiglu(g.data(), u.data(), n, out.data(), lv);
    // Relative to the value, with an absolute floor for gates below -87 where exp is clamped
    // (silu there is ~g e^g < 1e-35 either way).
    for (int i = 0; i < n; ++i)
      ASSERT_NEAR(out[size_t(i)], ref[size_t(i)], 4e-7 * std::fabs(ref[size_t(i)]) + 1e-30)
          << simd_name(lv) << " gate " << g[size_t(i)];
    // In place (out aliases gate) gives the same values.
    std::vector<float> gi = g;
    swiglu(gi.data(), u.data(), n, gi.data(), lv);
    EXPECT_EQ(gi, out) << simd_name(lv);
  }
}

// Batch invariance: an element's result is the same bits whether the array is passed whole or in
// pieces of any length (a piece's tail is a vector lane of a longer call).
TEST(Elementwise, SwigluSameBitsWhateverTheSplit) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const int n = 24 * 7;  // 7 rows of an FFN of 24 (not a multiple of 16)
  std::vector<float> g(n), u(n);
  for (int i = 0; i < n; ++i) g[size_t(i)] = nd(rng), u[size_t(i)] = nd(rng);
  for (SimdLevel lv : tiers()) {
    std::vector<float> whole(n);
    swiglu(g.data(), u.data(), n, whole.data(), lv);
    for (int piece : {1, 5, 24, 40}) {
      std::vector<float> split(n);
      for (int b = 0; b < n; b += piece)
        swiglu(&g[size_t(b)], &u[size_t(b)], std::min(piece, n - b), &split[size_t(b)], lv);
      for (int i = 0; i < n; ++i)
        ASSERT_EQ(std::memcmp(&split[size_t(i)], &whole[size_t(i)], 4), 0)
            << simd_name(lv) << " piece " << piece << " at " << i;
    }
  }
}

TEST(Elementwise, SwigluHandValues) {
  // silu(0) = 0, silu(2) = 2 / (1 + e^-2), silu(-2) = -2 / (1 + e^2); times up = 3.
  const float g[3] = {0.0f, 2.0f, -2.0f}, u[3] = {3.0f, 3.0f, 3.0f};
  for (SimdLevel lv : tiers()) {
    float out[3];
    swiglu(g, u, 3, out, lv);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_NEAR(out[1], 3.0 * 2.0 / (1.0 + std::exp(-2.0)), 1e-6);
    EXPECT_NEAR(out[2], 3.0 * -2.0 / (1.0 + std::exp(2.0)), 1e-6);
  }
}

// GEGLU with the F16 table (Gemma's FFN): every tier gives the bits of model::gelu times up, for
// every half value as a gate (each table entry), random floats between halves (the rounding to
// half), the cut-offs at -10 and 10, NaN, and a length with a tail, in place.
TEST(Elementwise, GegluSameBitsAsTheTableOnEveryTier) {
  std::vector<float> g;
  for (uint32_t h = 0; h < 65536; ++h) g.push_back(ops::fp16_to_fp32(uint16_t(h)));
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  for (int i = 0; i < 20000; ++i) g.push_back(i % 2 ? nd(rng) : wide(rng));
  for (float x : {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f), -1e-30f,
                  1e-30f, 65519.0f, 65520.0f, -0.0f, std::nanf("")})
    g.push_back(x);
  g.push_back(1.5f);  // odd length: a tail on every tier
  const int64_t n = int64_t(g.size());
  std::vector<float> u(g.size());
  for (float& x : u) x = nd(rng);
  std::vector<float> ref(g.size());
  model::gelu(g.data(), int(n), ref.data());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] *= u[i];
  for (SimdLevel lv : tiers()) {
    std::vector<float> out(g.size());
    geglu(g.data(), u.data(), n, out.data(), lv);
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(ref[i])) {
        ASSERT_TRUE(std::isnan(out[i])) << simd_name(lv) << " at " << i;
        continue;
      }
      ASSERT_EQ(std::memcmp(&out[i], &ref[i], 4), 0)
          << simd_name(lv) << " gate " << g[i] << ": " << out[i] << " vs " << ref[i];
    }
    std::vector<float> in_place = g;
    geglu(in_place.data(), u.data(), n, in_place.data(), lv);
    EXPECT_EQ(std::memcmp(in_place.data(), out.data(), 4 * size_t(n - 1)), 0) << simd_name(lv);
  }
}

}  // namespace
}  // namespace ragform::runtime

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

}  // namespace
}  // namespace ragform::runtime

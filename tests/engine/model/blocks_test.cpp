// The shared transformer blocks against hand-computed values.
#include "engine/model/blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace ragform::model {
namespace {

TEST(Gelu, ExactFormMatchesHandValues) {
  // 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))), evaluated in double by hand.
  EXPECT_NEAR(gelu_exact(1.0f), 0.841192f, 1e-6f);
  EXPECT_NEAR(gelu_exact(-0.5f), -0.154286f, 1e-6f);
  EXPECT_NEAR(gelu_exact(3.0f), 2.996363f, 1e-6f);
}

TEST(Gelu, ErfFormMatchesHandValues) {
  // 0.5 x (1 + erf(x / sqrt 2)), transformers' "gelu", evaluated in double by hand.
  std::vector<float> x{1.0f, -0.5f, 3.0f, 0.0f}, y(4);
  gelu_erf(x.data(), 4, y.data());
  EXPECT_NEAR(y[0], 0.8413447f, 1e-6f);
  EXPECT_NEAR(y[1], -0.1542687f, 1e-6f);
  EXPECT_NEAR(y[2], 2.9959502f, 1e-6f);
  EXPECT_EQ(y[3], 0.0f);
}

TEST(Gelu, TableRoundsInputAndOutputToHalf) {
  // llama.cpp's CPU GELU: x rounded to F16 (0.1234 -> 0.12341309), GELU of it rounded to F16.
  std::vector<float> x{1.0f, -0.5f, 3.0f, 0.1234f}, y(4);
  gelu(x.data(), 4, y.data());
  EXPECT_EQ(y[0], 0.84130859375f);  // F16 of 0.8411920; the exact value is not representable
  EXPECT_EQ(y[1], -0.154296875f);
  EXPECT_EQ(y[2], 2.99609375f);
  EXPECT_EQ(y[3], 0.0677490234375f);
}

TEST(Gelu, ClampsOutsideTheTable) {
  std::vector<float> x{-10.0f, -30.0f, 10.0f, 42.5f}, y(4);
  gelu(x.data(), 4, y.data());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 10.0f);
  EXPECT_EQ(y[3], 42.5f);
}

TEST(Gelu, InPlace) {
  std::vector<float> x{1.0f, -0.5f};
  gelu(x.data(), 2, x.data());
  EXPECT_EQ(x[0], 0.84130859375f);
  EXPECT_EQ(x[1], -0.154296875f);
}

TEST(Gelu, TanhFormIsTheExactFormOnEveryValue) {
  // Numerics::transformers: no table, no clamping.
  std::vector<float> x{0.1234f, -3.5f, 9.99f, 12.0f, -12.0f}, y(5);
  gelu_tanh(x.data(), 5, y.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], gelu_exact(x[i])) << x[i];
  std::vector<float> t(1);
  gelu(&x[0], 1, t.data());
  EXPECT_NE(t[0], y[0]);  // the table rounds 0.1234 to half first
}

TEST(Rope, TransformersAnglesAreOneRoundingOfPosTimesInvFreq) {
  RopeCache rc;
  const int pos = 1900, n_rot = 256;
  const float base = 10000.0f;
  rc.compute_transformers(pos, n_rot, base, 1.0f);
  for (int i = 0; i < n_rot / 2; ++i) {
    const float inv = 1.0f / std::pow(base, float(2 * i) / float(n_rot));
    const float t = float(pos) * inv;
    EXPECT_EQ(rc.cos[i], std::cos(t)) << i;
    EXPECT_EQ(rc.sin[i], std::sin(t)) << i;
  }
}

TEST(Rope, TransformersAnglesDriftLessOnAverageThanGgmlsProducts) {
  // ggml multiplies theta by theta_scale once per pair: theta_scale's rounding compounds with the
  // pair index, so at long positions its angles drift from pos * base^(-2i/n) coherently over the
  // middle pairs. One rounding per angle (transformers') is not exact either (its largest
  // single error can be the larger one), but its mean error is smaller at every long position.
  const int n_rot = 256;
  for (double base : {1e4, 1e6})
    for (int pos : {500, 1900, 3000}) {
      RopeCache g, t;
      g.compute(pos, n_rot, float(base), 1.0f);
      t.compute_transformers(pos, n_rot, float(base), 1.0f);
      double eg = 0, et = 0;
      for (int i = 0; i < n_rot / 2; ++i) {
        const double a = pos * std::pow(base, -2.0 * i / n_rot);
        eg += std::fabs(g.cos[i] - std::cos(a)) + std::fabs(g.sin[i] - std::sin(a));
        et += std::fabs(t.cos[i] - std::cos(a)) + std::fabs(t.sin[i] - std::sin(a));
      }
      EXPECT_LT(et, eg) << "base " << base << " pos " << pos;
    }
}

}  // namespace
}  // namespace ragform::model

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

}  // namespace
}  // namespace ragform::model

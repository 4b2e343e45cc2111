#include "pipelines/cnorm/abs.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace ragform::cnorm {

TEST(AttentionBalanceScore, HandValues) {
  // All mass on the first token: mu = 0, ABS = 0. On the last: mu = 1, ABS = 0.
  EXPECT_DOUBLE_EQ(attention_balance_score({1, 0, 0, 0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(attention_balance_score({0, 0, 0, 0, 1}), 0.0);
  // Uniform over 5 positions: mu = (0 + .25 + .5 + .75 + 1)/5 = 0.5, ABS = 1.
  EXPECT_DOUBLE_EQ(attention_balance_score({.2f, .2f, .2f, .2f, .2f}), 1.0);
  // a = (0.5, 0.3, 0.2) over T = 3: mu = 0*0.5 + 0.5*0.3 + 1*0.2 = 0.35; ABS = 1 - 2*0.15 = 0.7.
  EXPECT_NEAR(attention_balance_score({.5f, .3f, .2f}), 0.7, 1e-7);
  // Unnormalised weights are normalised: (2, 0, 2) -> mu = 0.5.
  EXPECT_DOUBLE_EQ(attention_centroid({2, 0, 2}), 0.5);
  // a = (0.1, 0.1, 0.8): mu = 0.05 + 0.8 = 0.85, ABS = 0.3.
  EXPECT_NEAR(attention_balance_score({.1f, .1f, .8f}), 0.3, 1e-7);
}

TEST(AttentionBalanceScore, DegenerateInputIsAnError) {
  EXPECT_THROW(attention_balance_score({}), Error);
  EXPECT_THROW(attention_balance_score({0, 0}), Error);
  EXPECT_THROW(attention_balance_score({-1, 2}), Error);
  EXPECT_DOUBLE_EQ(attention_balance_score({3}), 1.0);
}

}  // namespace ragform::cnorm

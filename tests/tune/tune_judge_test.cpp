// The judge's pick(): each objective's measure, then ties to higher accuracy, then fewer tokens,
// then the earlier candidate (judge.h, docs/tune.md "The judge").
#include <gtest/gtest.h>

#include "tune/judge.h"

namespace ragform::tune {
namespace {

Score score(size_t correct, double tokens, std::optional<double> rob, std::optional<double> abs) {
  Score s;
  s.n = 10;
  s.correct = correct;
  s.tokens = tokens;
  s.robustness = rob;
  s.abs = abs;
  return s;
}

TEST(TuneJudge, AbsTiesGoToHigherAccuracyThenFewerTokens) {
  // Equal ABS: the more accurate candidate wins although it comes later.
  EXPECT_EQ(pick({score(3, 100, {}, 0.5), score(7, 100, {}, 0.5)}, Objective::Abs, 0), 1u);
  // Equal ABS and accuracy: fewer tokens.
  EXPECT_EQ(pick({score(5, 120, {}, 0.5), score(5, 80, {}, 0.5)}, Objective::Abs, 0), 1u);
  // ABS first: a higher ABS wins over a higher accuracy.
  EXPECT_EQ(pick({score(9, 10, {}, 0.6), score(1, 500, {}, 0.4)}, Objective::Abs, 0), 0u);
  // The search under `abs` measures ABS alone (accuracy and tokens 0): the earlier candidate,
  // as cnorm calibrate's argmax.
  EXPECT_EQ(pick({Score{}, Score{}}, Objective::Abs, 0), 0u);
  Score a, b;
  a.abs = b.abs = 0.25;
  EXPECT_EQ(pick({a, b}, Objective::Abs, 0), 0u);
}

TEST(TuneJudge, EveryObjectiveBreaksTiesByAccuracyThenTokens) {
  // accuracy: equal accuracy -> fewer tokens; all equal -> the earlier.
  EXPECT_EQ(pick({score(5, 90, {}, {}), score(5, 60, {}, {})}, Objective::Accuracy, 0), 1u);
  EXPECT_EQ(pick({score(5, 60, {}, {}), score(5, 60, {}, {})}, Objective::Accuracy, 0), 0u);
  // robust: equal robustness -> higher accuracy -> fewer tokens.
  EXPECT_EQ(pick({score(4, 10, 0.9, {}), score(6, 90, 0.9, {})}, Objective::Robust, 0), 1u);
  EXPECT_EQ(pick({score(6, 90, 0.9, {}), score(6, 10, 0.9, {})}, Objective::Robust, 0), 1u);
  // balanced, none over the floor: the most robust, then higher accuracy, then fewer tokens.
  EXPECT_EQ(pick({score(6, 90, 0.5, {}), score(6, 10, 0.5, {})}, Objective::Balanced, 0.75), 1u);
  EXPECT_EQ(pick({score(2, 10, 0.5, {}), score(6, 90, 0.5, {})}, Objective::Balanced, 0.75), 1u);
  // balanced, over the floor: the most accurate, then fewer tokens; below the floor loses.
  EXPECT_EQ(pick({score(9, 10, 0.5, {}), score(6, 90, 0.8, {}), score(6, 40, 0.9, {})},
                 Objective::Balanced, 0.75),
            2u);
}

}  // namespace
}  // namespace ragform::tune

// Exact match, best_subspan_em-style substring match and SQuAD token F1 (text/metrics.h), on
// hand-computed values.
#include "text/metrics.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace ragform::text {
namespace {

using A = std::vector<std::string>;

TEST(Metrics, ExactMatchIsMaxOverNormalisedAnswers) {
  EXPECT_EQ(exact_match("The Beatles!", {"beatles"}), 1.0);
  EXPECT_EQ(exact_match("Paris, France", {"Paris", "paris france"}), 1.0);
  EXPECT_EQ(exact_match("Paris, France", {"Paris"}), 0.0);
  EXPECT_EQ(exact_match("R\xC3\xB6ntgen", {"Rontgen"}), 1.0);  // accent folding (default)
  EXPECT_EQ(exact_match("R\xC3\xB6ntgen", {"Rontgen"}, kSquadReference), 0.0);
  EXPECT_EQ(exact_match("\xE2\x80\x9CParis\xE2\x80\x9D", {"Paris"}), 1.0);
  EXPECT_EQ(exact_match("\xE2\x80\x9CParis\xE2\x80\x9D", {"Paris"}, kSquadReference), 0.0);
}

TEST(Metrics, SubstringMatchFollowsBestSubspanEm) {
  EXPECT_EQ(
      substring_match("I think the answer is Wilhelm Conrad Röntgen.", {"Wilhelm Conrad Röntgen"}),
      1.0);
  EXPECT_EQ(substring_match("Röntgen", {"Wilhelm Conrad Röntgen"}), 0.0);  // gold must be inside
  EXPECT_EQ(substring_match("In 1990 it fell.", {"1"}), 1.0);  // plain character substring
  EXPECT_EQ(substring_match("May 18, 2018", {"may 18 2018", "June"}), 1.0);
  EXPECT_EQ(substring_match("nothing here", {"The"}), 1.0);  // "" is in everything, as in Python
  EXPECT_EQ(substring_match("", {"x"}), 0.0);
}

TEST(Metrics, TokenF1HandValues) {
  // pred {wilhelm, rontgen}, gold {wilhelm, conrad, rontgen}: P = 1, R = 2/3, F1 = 0.8.
  EXPECT_DOUBLE_EQ(token_f1("Wilhelm Röntgen", {"Wilhelm Conrad Röntgen"}), 0.8);
  // pred {new, york, new, jersey} gold {new, york}: common = 2 (new once, york once):
  // P = 2/4, R = 1, F1 = 2/3.
  EXPECT_DOUBLE_EQ(token_f1("New York, New Jersey", {"the New York"}), 2.0 / 3.0);
  // Repeated tokens count as a bag: pred {a1, a1, a1}, gold {a1}: P = 1/3, R = 1, F1 = 0.5.
  EXPECT_DOUBLE_EQ(token_f1("x x x", {"x"}), 0.5);
  // Max over answers: 0 for "cat", 1/2 for "dog food" (P=1/2,R=1/2).
  EXPECT_DOUBLE_EQ(token_f1("dog house", {"cat", "dog food"}), 0.5);
  EXPECT_EQ(token_f1("abc", {"xyz"}), 0.0);
  EXPECT_EQ(token_f1("the", {"a"}), 1.0);  // both normalise to no tokens (SQuAD v2.0 rule)
  EXPECT_EQ(token_f1("the", {"cat"}), 0.0);
}

TEST(Metrics, ScoreAnswerAgreesWithSingleMetrics) {
  A answers = {"Dai Yongge", "Yongge Dai"};
  for (const char* pred :
       {"Dai Yongge", "The owner is Dai Yongge.", "Yongge", "Reading F.C.", ""}) {
    AnswerScores s = score_answer(pred, answers);
    EXPECT_EQ(s.exact_match, exact_match(pred, answers)) << pred;
    EXPECT_EQ(s.substring_match, substring_match(pred, answers)) << pred;
    EXPECT_EQ(s.token_f1, token_f1(pred, answers)) << pred;
  }
  AnswerScores s = score_answer("The owner is Dai Yongge.", answers);
  EXPECT_EQ(s.exact_match, 0.0);
  EXPECT_EQ(s.substring_match, 1.0);
  // pred {owner, is, dai, yongge}, gold {dai, yongge}: P = 1/2, R = 1, F1 = 2/3.
  EXPECT_DOUBLE_EQ(s.token_f1, 2.0 / 3.0);
}

TEST(Metrics, NoGoldAnswersIsAnError) {
  EXPECT_THROW(exact_match("x", {}), Error);
  EXPECT_THROW(substring_match("x", {}), Error);
  EXPECT_THROW(token_f1("x", {}), Error);
  EXPECT_THROW(score_answer("x", {}), Error);
}

}  // namespace
}  // namespace ragform::text

// Answer-correctness metrics over normalised answers (text/normalize.h), each the maximum over
// the gold answers, as in the SQuAD evaluation script and lost-in-the-middle's metrics.py:
//  - exact_match:     normalize(prediction) == normalize(gold).
//  - substring_match: lost-in-the-middle best_subspan_em: normalize(gold) is a substring of
//    normalize(prediction) (plain character substring, so gold "1" matches "1990"; like the
//    reference, a gold answer that normalises to "" — e.g. "The" — matches every prediction).
//  - token_f1:        SQuAD token F1: bag-of-tokens overlap of the normalised strings,
//    precision = common / |pred|, recall = common / |gold|, F1 = 2PR / (P + R); 0 when nothing
//    is shared. When either side has no tokens, F1 is 1 if both are empty and 0 otherwise (the
//    SQuAD v2.0 script's rule; v1.1 returned 0 for empty-vs-empty).
// Scores are 0.0 or 1.0 for the match metrics. An empty gold-answer list is an Error, not 0.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "text/normalize.h"

namespace ragform::text {

double exact_match(std::string_view prediction, const std::vector<std::string>& answers,
                   const NormalizeOptions& options = {});
double substring_match(std::string_view prediction, const std::vector<std::string>& answers,
                       const NormalizeOptions& options = {});
double token_f1(std::string_view prediction, const std::vector<std::string>& answers,
                const NormalizeOptions& options = {});

// All three at once, normalising the prediction and each answer only once.
struct AnswerScores {
  double exact_match = 0;
  double substring_match = 0;
  double token_f1 = 0;
};
AnswerScores score_answer(std::string_view prediction, const std::vector<std::string>& answers,
                          const NormalizeOptions& options = {});

}  // namespace ragform::text

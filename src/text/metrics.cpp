#include "text/metrics.h"

#include <algorithm>
#include <map>

#include "base/error.h"

namespace ragform::text {

namespace {

void require_answers(const std::vector<std::string>& answers) {
  if (answers.empty()) throw Error("metrics", "no gold answers to compare the prediction with");
}

std::vector<std::string> split_spaces(const std::string& n) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < n.size()) {
    size_t sp = n.find(' ', start);
    if (sp == std::string::npos) sp = n.size();
    out.push_back(n.substr(start, sp - start));
    start = sp + 1;
  }
  return out;
}

double f1_tokens(const std::vector<std::string>& pred, const std::vector<std::string>& gold) {
  if (pred.empty() || gold.empty()) return pred.empty() && gold.empty() ? 1.0 : 0.0;
  std::map<std::string_view, long> counts;
  for (const auto& t : gold) ++counts[t];
  long common = 0;
  for (const auto& t : pred) {
    auto it = counts.find(t);
    if (it != counts.end() && it->second > 0) {
      --it->second;
      ++common;
    }
  }
  if (common == 0) return 0.0;
  double precision = double(common) / double(pred.size());
  double recall = double(common) / double(gold.size());
  return 2.0 * precision * recall / (precision + recall);
}

}  // namespace

AnswerScores score_answer(std::string_view prediction, const std::vector<std::string>& answers,
                          const NormalizeOptions& options) {
  require_answers(answers);
  const std::string pred = normalize_answer(prediction, options);
  const std::vector<std::string> pred_tokens = split_spaces(pred);
  AnswerScores s;
  for (const std::string& answer : answers) {
    const std::string gold = normalize_answer(answer, options);
    if (gold == pred) s.exact_match = 1.0;
    if (pred.find(gold) != std::string::npos) s.substring_match = 1.0;
    s.token_f1 = std::max(s.token_f1, f1_tokens(pred_tokens, split_spaces(gold)));
  }
  return s;
}

double exact_match(std::string_view prediction, const std::vector<std::string>& answers,
                   const NormalizeOptions& options) {
  require_answers(answers);
  const std::string pred = normalize_answer(prediction, options);
  for (const std::string& answer : answers)
    if (normalize_answer(answer, options) == pred) return 1.0;
  return 0.0;
}

double substring_match(std::string_view prediction, const std::vector<std::string>& answers,
                       const NormalizeOptions& options) {
  require_answers(answers);
  const std::string pred = normalize_answer(prediction, options);
  for (const std::string& answer : answers)
    if (pred.find(normalize_answer(answer, options)) != std::string::npos) return 1.0;
  return 0.0;
}

double token_f1(std::string_view prediction, const std::vector<std::string>& answers,
                const NormalizeOptions& options) {
  return score_answer(prediction, answers, options).token_f1;
}

}  // namespace ragform::text

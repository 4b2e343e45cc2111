// SURE pairs for tests that need no reader to perturb: `questions` questions ("what is thing q?",
// gold "answerq"), one document each (doc_of(q)), perturbed by two rule-based kinds
// (logic/reverse, format/json) through apply_rule as `sure perturb` does.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "pipelines/sure/sure.h"

namespace ragform::testing {

inline std::vector<sure::Pair> rule_pairs(int questions,
                                          const std::function<sure::Document(int)>& doc_of) {
  using namespace sure;
  std::vector<Pair> out;
  for (int q = 0; q < questions; ++q) {
    const sure::Document doc = doc_of(q);
    for (Kind k : {Kind::LogicReverse, Kind::FormatJson}) {
      Pair p = pair_of("q" + std::to_string(q), 0, "what is thing " + std::to_string(q) + "?",
                       {"answer" + std::to_string(q)}, doc, k);
      p.perturbed = apply_rule(k, doc, RuleOptions{}, p.id).text;
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace ragform::testing

#include "pipelines/sure/nli_encoder.h"

#include <algorithm>

#include "base/error.h"

namespace ragform::sure {

NliJudge encoder_nli_judge(reader::Encoder& enc) {
  return [&enc](const std::vector<std::pair<std::string, std::string>>& ph) {
    std::vector<reader::TextPair> pairs;
    pairs.reserve(ph.size());
    for (const auto& [premise, hypothesis] : ph) pairs.push_back({premise, hypothesis});
    std::vector<reader::Classification> res = enc.classify(pairs);
    std::vector<NliLabel> out;
    out.reserve(res.size());
    for (const reader::Classification& c : res) {
      if (c.scores.empty()) throw Error("nli model", "no scores for a pair");
      const size_t best =
          size_t(std::max_element(c.scores.begin(), c.scores.end()) - c.scores.begin());
      out.push_back(best < c.labels.size() ? parse_nli(c.labels[best]) : NliLabel::Unparsed);
    }
    return out;
  };
}

void check_nli_labels(const std::vector<std::string>& labels, const std::string& what) {
  for (const std::string& l : labels)
    if (parse_nli(l) == NliLabel::Entailment) return;
  std::string list;
  for (const std::string& l : labels) list += (list.empty() ? "" : ", ") + l;
  throw UsageError("--nli-model", what + " has no entailment label (its labels: " +
                                      (list.empty() ? "none" : list) + ")");
}

}  // namespace ragform::sure

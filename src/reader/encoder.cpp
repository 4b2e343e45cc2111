#include "reader/encoder.h"

#include <algorithm>
#include <cmath>

namespace ragform::reader {

int Classification::find(const std::string& label) const {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) return int(i);
  return -1;
}

std::vector<Classification> Encoder::rerank(const std::string& query,
                                            const std::vector<std::string>& documents) {
  std::vector<Classification> out;
  out.reserve(documents.size());
  for (size_t i = 0; i < documents.size(); i += kRerankChunk) {
    std::vector<TextPair> pairs;
    for (size_t d = i; d < std::min(documents.size(), i + kRerankChunk); ++d)
      pairs.push_back({query, documents[d]});
    for (Classification& c : classify(pairs)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<float> softmax_probs(const std::vector<float>& scores) {
  std::vector<float> p(scores.size());
  if (scores.empty()) return p;
  const double mx = *std::max_element(scores.begin(), scores.end());
  double sum = 0;
  for (size_t i = 0; i < scores.size(); ++i) sum += std::exp(double(scores[i]) - mx);
  for (size_t i = 0; i < scores.size(); ++i) p[i] = float(std::exp(double(scores[i]) - mx) / sum);
  return p;
}

}  // namespace ragform::reader

#include "reader/encoder.h"

#include <algorithm>
#include <cmath>

namespace ragform::reader {

int Classification::find(const std::string& label) const {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) return int(i);
  return -1;
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

#include "pipelines/cnorm/abs.h"

#include <cmath>

#include "base/error.h"

namespace ragform::cnorm {

double attention_centroid(const std::vector<float>& a) {
  if (a.empty()) throw Error("ABS", "no attention weights");
  const size_t T = a.size();
  if (T == 1) return 0.5;
  double sum = 0, weighted = 0;
  for (size_t t = 0; t < T; ++t) {
    if (!(a[t] >= 0.0f))
      throw Error("ABS", "attention weight " + std::to_string(a[t]) + " at position " +
                             std::to_string(t) + " is negative or NaN");
    sum += a[t];
    weighted += (double(t) / double(T - 1)) * a[t];  // (t-1)/(T-1) with 1-based t
  }
  if (sum <= 0) throw Error("ABS", "attention weights sum to zero");
  return weighted / sum;
}

double attention_balance_score(const std::vector<float>& a) {
  return 1.0 - 2.0 * std::fabs(attention_centroid(a) - 0.5);
}

}  // namespace ragform::cnorm

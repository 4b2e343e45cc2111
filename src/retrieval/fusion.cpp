#include "retrieval/fusion.h"

#include <algorithm>
#include <unordered_map>

namespace ragform::retrieval {

std::vector<Hit> reciprocal_rank_fusion(const std::vector<std::vector<Hit>>& rankings, int k,
                                        int rrf_k) {
  std::unordered_map<int64_t, double> score;
  for (const auto& r : rankings)
    for (size_t i = 0; i < r.size(); ++i) score[r[i].rowid] += 1.0 / double(rrf_k + int(i) + 1);
  std::vector<Hit> out;
  out.reserve(score.size());
  for (auto [rowid, s] : score) out.push_back({rowid, s});
  std::sort(out.begin(), out.end(), [](const Hit& a, const Hit& b) {
    return a.score != b.score ? a.score > b.score : a.rowid < b.rowid;
  });
  if (k >= 0 && out.size() > size_t(k)) out.resize(size_t(k));
  return out;
}

}  // namespace ragform::retrieval

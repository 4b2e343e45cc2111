// Reciprocal-rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009, "Reciprocal rank fusion
// outperforms Condorcet and individual rank learning methods"): a passage's fused score is
//   RRF(d) = sum over rankings r of 1 / (k + rank_r(d)),   rank 1-based, k = 60 (the paper's value)
// and a ranking that does not hold d adds nothing. Ties are broken by the smaller rowid so the
// order is deterministic.
#pragma once
#include <vector>

#include "retrieval/bm25_index.h"

namespace ragform::retrieval {

inline constexpr int kRrfK = 60;

// Fuses rankings (each best first) into the top `k` by RRF; Hit::score is the fused score.
std::vector<Hit> reciprocal_rank_fusion(const std::vector<std::vector<Hit>>& rankings, int k,
                                        int rrf_k = kRrfK);

}  // namespace ragform::retrieval

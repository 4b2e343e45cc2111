// C-NORM's Attention Balance Score (cnorm-surface-formatting.txt, section 4.2).
//
// Given the final token's attention a_1..a_T over the T prompt positions (last layer, mean over
// heads by default), the attention centroid is
//     mu = sum_t ((t - 1) / (T - 1)) * a_t / sum_j a_j          (t = 1..T)
// and the score
//     ABS = 1 - 2 |mu - 0.5|   in [0, 1]
// ABS is 1 when attention is centred on the middle of the prompt and 0 when it sits entirely on
// the first or the last token.
#pragma once
#include <vector>

namespace ragform::cnorm {

// The centroid mu in [0, 1]. T = 1 gives 0.5 (a single position is its own middle). Throws
// ragform::Error when the weights are empty, negative or sum to zero.
double attention_centroid(const std::vector<float>& a);
double attention_balance_score(const std::vector<float>& a);

}  // namespace ragform::cnorm

#include <gtest/gtest.h>

#include "retrieval/fusion.h"

namespace ragform::testing {
namespace {

using retrieval::Hit;

TEST(Rrf, SumsReciprocalRanksWithK60) {
  // a: [1, 2, 3], b: [3, 4]. RRF: 1 -> 1/61, 2 -> 1/62, 3 -> 1/63 + 1/61, 4 -> 1/62.
  std::vector<Hit> a = {{1, 9}, {2, 8}, {3, 7}}, b = {{3, 0.9}, {4, 0.8}};
  auto f = retrieval::reciprocal_rank_fusion({a, b}, 10);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].rowid, 3);
  EXPECT_DOUBLE_EQ(f[0].score, 1.0 / 63 + 1.0 / 61);
  EXPECT_EQ(f[1].rowid, 1);
  EXPECT_DOUBLE_EQ(f[1].score, 1.0 / 61);
  // 2 and 4 tie at 1/62: the smaller rowid first.
  EXPECT_EQ(f[2].rowid, 2);
  EXPECT_EQ(f[3].rowid, 4);
  EXPECT_EQ(retrieval::reciprocal_rank_fusion({a, b}, 2).size(), 2u);
}

}  // namespace
}  // namespace ragform::testing

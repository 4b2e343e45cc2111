// Issue 40, pass 22: a question's dense scores and ranking do not depend on the questions
// searched with it. FAISS's flat search took a BLAS product for 20 queries or more, whose sums
// are ordered otherwise: `retrieve --batch 64` and `--batch 1` (and /v1/retrieve's one question)
// gave scores 1e-7 apart, enough to swap near ties. Equal scores come in the corpus's order, as
// BM25 ranks them (FAISS's heap gave the reverse).
#include <random>

#include <gtest/gtest.h>

#include "retrieval/dense_index.h"
#include "retrieval/dense_meta.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

retrieval::DenseMeta flat_meta(int d) { return random_dense_meta(d, retrieval::FaissKind::Flat); }

TEST(DenseBatchInvariance, AQuestionsScoresAreTheSameInAnyBatch) {
  const int d = 384;  // MiniLM's width
  const size_t n = 500, nq = 64;
  retrieval::DenseIndex ix(temp_dir("dense-batch").string(), flat_meta(d));
  std::mt19937 rng(11);
  std::normal_distribution<float> g;
  std::vector<float> x(n * d), q(nq * d);
  for (auto& v : x) v = g(rng);
  for (auto& v : q) v = g(rng);
  std::vector<int64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = int64_t(i) + 1;
  ix.add(x.data(), ids.data(), n);
  const auto batch = ix.search(q.data(), nq, 10);
  ASSERT_EQ(batch.size(), nq);
  for (size_t i = 0; i < nq; ++i) {
    const auto alone = ix.search(&q[i * d], 1, 10)[0];
    ASSERT_EQ(alone.size(), batch[i].size());
    for (size_t j = 0; j < alone.size(); ++j) {
      EXPECT_EQ(alone[j].rowid, batch[i][j].rowid) << i << " " << j;
      EXPECT_EQ(alone[j].score, batch[i][j].score) << i << " " << j;  // bit for bit
    }
  }
}

TEST(DenseBatchInvariance, EqualScoresComeInTheCorpussOrder) {
  const int d = 8;
  retrieval::DenseIndex ix(temp_dir("dense-ties").string(), flat_meta(d));
  std::vector<float> x(4 * d, 0.0f);
  for (int k = 0; k < 3; ++k) x[size_t(k) * d] = 1.0f;  // three equal passages, then another
  x[3 * d + 1] = 1.0f;
  const std::vector<int64_t> ids = {10, 11, 12, 13};
  ix.add(x.data(), ids.data(), 4);
  std::vector<float> q(d, 0.0f);
  q[0] = 1.0f;
  const auto hits = ix.search(q.data(), 1, 4)[0];
  ASSERT_EQ(hits.size(), 4u);
  EXPECT_EQ(hits[0].rowid, 10);
  EXPECT_EQ(hits[1].rowid, 11);
  EXPECT_EQ(hits[2].rowid, 12);
  EXPECT_EQ(hits[3].rowid, 13);
}

}  // namespace
}  // namespace ragform::testing

// A FAISS HNSW index searched from several threads at once with different k (the server's
// /v1/retrieve does this through RetrieverPool): efSearch travels with each call
// (SearchParametersHNSW), nothing is written into the shared index, and every answer equals the
// sequential one. Not named "_concurrency": FAISS's OpenMP runtime is not TSan-instrumented.
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "retrieval/dense_index.h"
#include "retrieval/dense_meta.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

TEST(DenseIndexParallel, HnswSearchesWithDifferentKFromManyThreadsMatchSequential) {
  const int d = 32;
  const size_t n = 3000;
  auto dir = temp_dir("dense-parallel");
  retrieval::DenseIndex ix(dir.string(), random_dense_meta(d, retrieval::FaissKind::Hnsw));
  std::mt19937 rng(7);
  std::normal_distribution<float> g;
  std::vector<float> x(n * d);
  for (auto& v : x) v = g(rng);
  std::vector<int64_t> ids(n);
  for (size_t i = 0; i < n; ++i) ids[i] = int64_t(i) + 100;  // rowids, not positions
  ix.add(x.data(), ids.data(), n);

  const size_t nq = 40;
  std::vector<float> q(nq * d);
  for (auto& v : q) v = g(rng);
  const int ks[] = {1, 10, 100, 200};  // 100 and 200 need efSearch above the default 64
  std::vector<std::vector<std::vector<retrieval::Hit>>> want(4);
  for (size_t ki = 0; ki < 4; ++ki)
    for (size_t i = 0; i < nq; ++i) want[ki].push_back(ix.search(&q[i * d], 1, ks[ki])[0]);
  for (size_t ki = 0; ki < 4; ++ki) {
    EXPECT_EQ(want[ki][0].size(), size_t(ks[ki]));
    EXPECT_GE(want[ki][0][0].rowid, 100);
  }

  retrieval::DenseIndex::set_threads(1);
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (size_t t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (size_t rep = 0; rep < 3; ++rep)
        for (size_t i = 0; i < nq; ++i) {
          const size_t ki = (t + i + rep) % 4;
          auto h = ix.search(&q[i * d], 1, ks[ki])[0];
          bool same = h.size() == want[ki][i].size();
          for (size_t j = 0; same && j < h.size(); ++j)
            same = h[j].rowid == want[ki][i][j].rowid && h[j].score == want[ki][i][j].score;
          if (!same) ++wrong;
        }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace ragform::testing

#include "base/thread_pool.h"

#include <atomic>
#include <vector>

#include <gtest/gtest.h>

namespace ragform {

TEST(ThreadPool, CoversEveryIndexOnceInGrainAlignedChunks) {
  ThreadPool pool(3);
  for (size_t n : {1u, 7u, 64u, 1000u}) {
    std::vector<std::atomic<int>> hits(n);
    pool.parallel_for(
        n,
        [&](size_t b, size_t e, int) {
          EXPECT_EQ(b % 4, 0u);
          for (size_t i = b; i < e; ++i) hits[i]++;
        },
        4);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, ManyCallsReuseWorkers) {
  ThreadPool pool(2);
  std::atomic<long> sum{0};
  for (int r = 0; r < 2000; ++r)
    pool.parallel_for(10, [&](size_t b, size_t e, int) { sum += long(e - b); });
  EXPECT_EQ(sum.load(), 20000);
}

}  // namespace ragform

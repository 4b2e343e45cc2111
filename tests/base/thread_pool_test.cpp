#include "base/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
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

// Calls separated by pauses longer than the spin window, so workers go to sleep between calls and
// must be woken (the lost-wake-up path), mixed with back-to-back calls (the spinning path).
TEST(ThreadPool, WakesSleepingWorkersAfterIdleGaps) {
  ThreadPool pool(3);
  std::atomic<long> sum{0};
  for (int r = 0; r < 40; ++r) {
    if (r % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.parallel_for(
        90, [&](size_t b, size_t e, int) { sum += long(e - b); }, 8);
  }
  EXPECT_EQ(sum.load(), 40 * 90);
}

// The caller waits for a worker that is still busy after the caller's spin window ends.
TEST(ThreadPool, CallerWaitsForSlowWorker) {
  ThreadPool pool(2);
  std::atomic<int> done{0};
  for (int r = 0; r < 3; ++r)
    pool.parallel_for(2, [&](size_t b, size_t, int) {
      if (b == 1) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      done.fetch_add(1);
    });
  EXPECT_EQ(done.load(), 6);
}

}  // namespace ragform

#include "base/thread_pool.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"

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

namespace ragform {
namespace {

TEST(ThreadPool, ExceptionInAJobReachesTheCaller) {
  ThreadPool pool(3);
  for (size_t thrower : {size_t(0), size_t(50), size_t(99)}) {  // caller's chunk and workers'
    std::atomic<int> ran{0};
    try {
      pool.parallel_for(100, [&](size_t b, size_t e, int) {
        ran += int(e - b);
        if (thrower >= b && thrower < e) throw Error("job", "failed at " + std::to_string(thrower));
      });
      FAIL() << "no exception";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("failed at " + std::to_string(thrower)),
                std::string::npos);
    }
    EXPECT_EQ(ran.load(), 100) << "every chunk still ran";
  }
  // The pool is still usable afterwards.
  std::atomic<long> sum{0};
  pool.parallel_for(64, [&](size_t b, size_t e, int) { sum += long(e - b); });
  EXPECT_EQ(sum.load(), 64);
}

// Two threads sharing one pool (two models in two Python threads): calls serialise instead of
// corrupting each other's job or hanging (the old pool hung here).
TEST(ThreadPool, TwoCallerThreadsShareOnePool) {
  ThreadPool pool(2);
  std::atomic<long> sums[2] = {0, 0};
  auto caller = [&](int c) {
    for (int r = 0; r < 3000; ++r)
      pool.parallel_for(
          37, [&](size_t b, size_t e, int) { sums[c] += long(e - b); }, 4);
  };
  std::thread t0(caller, 0), t1(caller, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(sums[0].load(), 3000L * 37);
  EXPECT_EQ(sums[1].load(), 3000L * 37);
}

TEST(ThreadPool, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<long> sum{0};
  pool.parallel_for(8, [&](size_t b, size_t e, int) {
    for (size_t i = b; i < e; ++i)
      pool.parallel_for(10, [&](size_t bb, size_t ee, int t) {
        EXPECT_EQ(t, 0);  // inline on the calling thread
        sum += long(ee - bb);
      });
  });
  EXPECT_EQ(sum.load(), 80);
}

// A pool that cannot start its threads (a process thread limit: `ulimit -u`) fails with an error
// instead of sleeping forever. Run in a child process, as an unprivileged user when we are root
// (root is exempt from RLIMIT_NPROC), with a few threads' headroom so that some workers start
// before one fails; an alarm turns a hang into a failure.
TEST(ThreadPool, ThreadLimitIsAnErrorNotAHang) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    rlim_t limit = 1;  // as ourselves: we already run one process, so no thread can start
    if (geteuid() == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
      limit = 4;  // `nobody` runs nothing else: three workers start, the fourth fails
    }
    struct rlimit rl {
      limit, limit
    };
    if (setrlimit(RLIMIT_NPROC, &rl) != 0) _exit(4);
    try {
      ThreadPool pool(200);
      _exit(5);  // started 200 threads under the limit?
    } catch (const Error& e) {
      const std::string msg = e.what();
      _exit(msg.find("could not start worker thread") != std::string::npos &&
                    msg.find("--threads") != std::string::npos
                ? 0
                : 6);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status)
                                 << " (14 = SIGALRM: the pool hung)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ragform

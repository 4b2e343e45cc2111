// A fixed pool of worker threads for the engine's hot loops. parallel_for splits [0, n) into one
// contiguous chunk per thread; the calling thread works too, so a pool of N threads starts N-1
// workers. Workers persist between calls (no per-token thread creation).
//
// Hand-off is poll-then-sleep: a decode step issues a few hundred parallel_for calls of tens of
// microseconds each, and waking a sleeping thread (on a VM, a halted vCPU) costs about as much as
// the work. So a worker that just finished polls the job counter for up to 100 us before it
// sleeps, and the caller polls the same way for the workers to finish. The window shrinks for a
// thread whose polls time out (a loaded machine: polling would only take the core from the thread
// it waits for) and is restored when a poll succeeds. An idle pool sleeps.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ragform {

class ThreadPool {
 public:
  // n_threads <= 0 means "all cores" (std::thread::hardware_concurrency()).
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // fn(begin, end, thread_index) over disjoint chunks covering [0, n). Chunks are multiples of
  // `grain` (except the last) so callers can keep blocks aligned. Blocks until all are done.
  // Not re-entrant: do not call parallel_for from inside fn.
  void parallel_for(size_t n, const std::function<void(size_t, size_t, int)>& fn, size_t grain = 1);

  // The process-wide pool used by the engine when no pool is given.
  static ThreadPool& global();
  // Resizes the global pool (e.g. from --threads). Not thread-safe against running work.
  static void set_global_threads(int n_threads);

 private:
  void worker(int index);
  void wait_for_workers();
  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  // Written by the caller before generation_ is bumped (release), read by workers after they see
  // the new generation (acquire).
  const std::function<void(size_t, size_t, int)>* job_ = nullptr;
  size_t job_n_ = 0, job_grain_ = 1;
  std::atomic<unsigned> generation_{0};
  std::atomic<int> pending_{0};
  // Sleepers announce themselves (seq_cst) before re-checking the counter under mu_, so a bump
  // that sees no sleeper is always seen by the sleeper's check (no lost wake-up).
  std::atomic<int> sleeping_workers_{0};
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace ragform

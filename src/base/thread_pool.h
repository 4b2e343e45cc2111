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
//
// Ownership and concurrency: there is no process-wide pool. Whoever runs the engine owns a pool
// (EngineOptions::pool, shared_ptr) and hands it to the contexts that use it, so a pool can never
// be destroyed under a running context. Several threads may call parallel_for on one pool: calls
// are serialised (one job at a time owns every worker). A call made from inside a job of the same
// pool runs inline on the calling thread. An exception thrown by fn on any thread is carried back
// and rethrown by parallel_for once every chunk has finished.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ragform {

class ThreadPool {
 public:
  // n_threads <= 0 means "all cores" (std::thread::hardware_concurrency()). Throws Error when a
  // worker thread cannot be started (a process thread limit, `ulimit -u`), after stopping the
  // workers it did start.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // fn(begin, end, thread_index) over disjoint chunks covering [0, n). Chunks are multiples of
  // `grain` (except the last) so callers can keep blocks aligned. Blocks until all are done;
  // rethrows the first exception any chunk threw.
  void parallel_for(size_t n, const std::function<void(size_t, size_t, int)>& fn, size_t grain = 1);

 private:
  void worker(int index);
  void wait_for_workers();
  void stop_workers();
  void run_chunk(size_t b, size_t e, int index);
  int n_threads_;
  std::vector<std::thread> threads_;
  std::mutex call_mu_;  // one parallel_for at a time
  std::mutex mu_;
  std::mutex error_mu_;
  std::exception_ptr error_;  // first exception of the running job
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

#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <utility>

#include "base/error.h"

namespace ragform {

namespace {
// Chunk t of n items split over k threads in units of `grain`.
void chunk(size_t n, size_t grain, int k, int t, size_t* b, size_t* e) {
  size_t units = (n + grain - 1) / grain;
  size_t per = units / k, rem = units % k;
  size_t ub = t * per + std::min<size_t>(t, rem);
  size_t ue = ub + per + (size_t(t) < rem ? 1 : 0);
  *b = std::min(n, ub * grain);
  *e = std::min(n, ue * grain);
}

// How long a thread polls before it sleeps on a condition variable: a decode step's gap between
// two parallel_for calls is a few microseconds, and a sleeping vCPU takes tens to wake. The budget
// adapts per waiting thread (SpinBudget): a poll that times out means the other side is not
// running (a loaded machine, where polling only steals its core), so the next poll is shorter,
// down to none; a poll that succeeds earns the full window back.
constexpr int64_t kSpinMaxNs = 100'000;
constexpr int64_t kSpinMinNs = 2'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Polls `done` with a pause between reads; true once it holds, false when the budget runs out.
template <typename Pred>
bool spin_until(Pred done, int64_t& budget_ns) {
  if (budget_ns < kSpinMinNs) {
    budget_ns = std::min(kSpinMaxNs, budget_ns + kSpinMinNs / 4);  // retry polling slowly
    return done();
  }
  const int64_t start = now_ns();
  for (unsigned i = 1;; ++i) {
    if (done()) {
      budget_ns = kSpinMaxNs;
      return true;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (i % 32 == 0 && now_ns() - start > budget_ns) {
      budget_ns /= 4;
      return done();
    }
  }
}
}  // namespace

// The pool whose job the current thread is running (null outside jobs): a parallel_for on that
// same pool from inside fn runs inline instead of waiting for itself.
thread_local const ThreadPool* tl_running_pool = nullptr;

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  for (int i = 1; i < n_threads_; ++i) {
    try {
      threads_.emplace_back([this, i] { worker(i); });
    } catch (const std::system_error& e) {
      // Workers already started wait for a job that will never come: stop them, or the process
      // sleeps forever in the destructor's join (or, before this fix, here).
      stop_workers();
      throw Error("threads", "could not start worker thread " + std::to_string(i + 1) + " of " +
                                 std::to_string(n_threads_) + " (" + e.code().message() +
                                 "): a process or user thread limit (ulimit -u)? use fewer "
                                 "threads (--threads)");
    }
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_work_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::run_chunk(size_t b, size_t e, int index) {
  if (b >= e) return;
  const ThreadPool* outer = tl_running_pool;
  tl_running_pool = this;
  try {
    (*job_)(b, e, index);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!error_) error_ = std::current_exception();
  }
  tl_running_pool = outer;
}

void ThreadPool::worker(int index) {
  unsigned seen = 0;
  int64_t budget = kSpinMaxNs;
  for (;;) {
    if (!spin_until([&] { return stop_.load() || generation_.load() != seen; }, budget)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleeping_workers_.fetch_add(1);
      cv_work_.wait(lock, [&] { return stop_.load() || generation_.load() != seen; });
      sleeping_workers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load();
    size_t b, e;
    chunk(job_n_, job_grain_, n_threads_, index, &b, &e);
    run_chunk(b, e, index);
    if (pending_.fetch_sub(1) == 1 && caller_sleeping_.load()) {
      std::lock_guard<std::mutex> lock(mu_);
      cv_done_.notify_one();
    }
  }
}

void ThreadPool::wait_for_workers() {
  thread_local int64_t budget = kSpinMaxNs;
  if (spin_until([&] { return pending_.load() == 0; }, budget)) return;
  std::unique_lock<std::mutex> lock(mu_);
  caller_sleeping_.store(true);
  cv_done_.wait(lock, [&] { return pending_.load() == 0; });
  caller_sleeping_.store(false);
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t, int)>& fn,
                              size_t grain) {
  if (n == 0) return;
  grain = std::max<size_t>(1, grain);
  if (n_threads_ == 1 || n <= grain || tl_running_pool == this) {
    fn(0, n, 0);
    return;
  }
  std::lock_guard<std::mutex> call(call_mu_);
  error_ = nullptr;
  job_ = &fn;
  job_n_ = n;
  job_grain_ = grain;
  pending_.store(n_threads_ - 1);
  generation_.fetch_add(1);
  if (sleeping_workers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);  // a sleeper is inside wait() or before its check
    cv_work_.notify_all();
  }
  size_t b, e;
  chunk(n, grain, n_threads_, 0, &b, &e);
  run_chunk(b, e, 0);
  wait_for_workers();
  job_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace ragform

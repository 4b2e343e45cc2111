// The server's engine thread: one thread owns every forward pass. HTTP handler threads enqueue
// jobs; the engine thread takes the oldest, and when it is a completion it also takes up to
// max_batch - 1 further pending completions with the same generation options, so concurrent
// requests share one batched prefill and one decode pass per token (runtime::generate). Other
// jobs (score, attention, token counts) run one at a time on the same thread, so the model is
// never driven by two threads at once.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.h"
#include "engine/runtime/generate.h"

namespace ragform::reader {
class NativeReader;
}

namespace ragform::server {

// The queue already holds max_queue jobs (HTTP 503).
class QueueFull : public Error {
 public:
  using Error::Error;
};

struct EngineOptions {
  int n_ctx = 4096;
  bool kv_f16 = false;
  int max_batch = 8;   // completions per shared forward pass (1 = one at a time)
  int max_queue = 64;  // pending jobs before QueueFull
};

struct EngineStats {
  uint64_t batches = 0, sequences = 0;
  int largest_batch = 0;
};

class Engine {
 public:
  Engine(reader::NativeReader& reader, const EngineOptions& opt);
  ~Engine();  // stops the thread; pending jobs fail with an Error
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Generation over ready-made prompt tokens (BOS and any chat markup included).
  std::future<runtime::GenerateOutput> complete(std::vector<int32_t> ids,
                                                runtime::GenerateOptions opt);
  // Runs fn on the engine thread (it may use the reader freely).
  std::future<void> run(std::function<void()> fn);
  void stop();
  EngineStats stats() const;
  int pending() const;

 private:
  struct Job;
  void enqueue(std::shared_ptr<Job> j);
  void loop();
  reader::NativeReader& reader_;
  EngineOptions opt_;
  struct CtxHolder;
  std::unique_ptr<CtxHolder> ctx_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  EngineStats stats_;
  std::thread thread_;
};

}  // namespace ragform::server

// The server's engine thread: one thread owns every forward pass, with continuous batching.
//
// HTTP handler threads enqueue jobs. The engine keeps up to max_batch completions *active*; each
// step is one Context::eval over every active sequence — the prompt of a newly admitted one
// (prefill) together with the next token of each running one (decode) — so concurrent requests,
// streaming or not, share every forward pass, and a request arriving mid-generation joins the
// next step instead of waiting for the batch to drain. Other jobs (score, attention, hidden states,
// token counts) run between steps on the same thread, so the model is never driven by two threads
// at once.
//
// Prefix cache: the engine's context shares the reader's (NativeReader::prefix_cache()), so a
// prompt starting with a system prompt or context another request (or a /v1/score call) prefilled
// copies those KV rows and prefills only the rest; every prompt is offered to the cache once
// prefilled. The rows are the same numbers (engine/runtime/prefix_cache.h), so outputs are too.
//
// The decode rule is runtime::generate's (generate.h), token for token: greedy or seeded sampling
// (every completion has its own Sampler, so a sampled request gives the same text whatever else
// shares its steps), end-of-generation tokens, stop strings (text cut before the stop string),
// max_tokens and the context limit.
//
// Streaming: a completion may carry an on_text callback, called on the engine thread with each new
// piece of text as soon as it is final — never part of a UTF-8 character, never text a stop string
// could still remove — so the pieces concatenate exactly to the final GenerateOutput::text.
// on_text returning false cancels the completion (the client went away): its sequence is freed.
//
// Failures: whatever fails for one completion — its admission, its token, its stream's callback,
// an allocation anywhere in them — fails that completion's future alone, and a std::bad_alloc also
// empties the prefix cache to give its memory back; a failed forward pass fails the completions of
// that pass. The engine thread itself goes on (an uncaught bad_alloc here ended the server,
// issue 40). A failed copy of a prompt into the prefix cache costs only the cache.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
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

// The batch scheduler's settings (the model's own are engine/model/engine_options.h's
// EngineOptions).
struct SchedulerOptions {
  int n_ctx = 4096;
  bool kv_f16 = false;
  int max_batch = 8;   // completions active at once, sharing each forward pass (1 = one at a time)
  int max_queue = 64;  // jobs waiting (not yet active) before QueueFull
  // Milliseconds the engine sleeps after each forward pass of completions (0 = none): slows a tiny
  // model to a pace at which streaming can be watched, and lets tests tell streaming from
  // buffering without depending on how fast the machine is.
  int pace_ms = 0;
};

struct EngineStats {
  uint64_t steps = 0;      // forward passes of completions
  uint64_t sequences = 0;  // completions finished
  int largest_batch = 0;   // most sequences in one forward pass
  int active = 0;          // completions active now
  uint64_t jobs = 0;       // other jobs run between steps (scoring, attention, hidden states)
  // Prompt tokens of admitted completions and of the jobs, and those prefilled (the rest came from
  // the reader's prefix cache, shared with the engine's context). A completion of max_tokens 0 is
  // admitted and never prefilled.
  uint64_t prompt_tokens = 0, prompt_tokens_computed = 0;
};

// Hooks of one completion, called on the engine thread. Both may be empty.
struct CompletionHooks {
  std::function<bool(const std::string& delta)> on_text;  // false = cancel
  std::function<void()> on_finish;  // just before the future becomes ready (value or error)
};

class Engine {
 public:
  Engine(reader::NativeReader& reader, const SchedulerOptions& opt);
  ~Engine();  // stops the thread; pending and active jobs fail with an Error
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Generation over ready-made prompt tokens (BOS and any chat markup included). Throws QueueFull
  // or Error (stopping) at once; errors of the generation itself arrive through the future.
  std::future<runtime::GenerateOutput> complete(std::vector<int32_t> ids,
                                                runtime::GenerateOptions opt,
                                                CompletionHooks hooks = {});
  // Runs fn on the engine thread between steps (it may use the reader freely).
  std::future<void> run(std::function<void()> fn);
  void stop();
  EngineStats stats() const;
  int pending() const;
  // Jobs that may wait at once (SchedulerOptions::max_queue).
  int max_queue() const { return opt_.max_queue; }

 private:
  struct Job;
  struct Active;
  void enqueue(std::shared_ptr<Job> j);
  void loop();
  void step(std::vector<Active>& active);
  void advance(Active& a, const float* logits);
  void finish(Active& a);
  void fail(const std::shared_ptr<Job>& j, std::exception_ptr e);
  void fail_active(Active& a, std::exception_ptr e);
  void shed_cache() noexcept;
  void publish_counts(int jobs_done = 0) noexcept;
  reader::NativeReader& reader_;
  SchedulerOptions opt_;
  struct CtxHolder;
  std::unique_ptr<CtxHolder> ctx_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  EngineStats stats_;
  // Test hook: RAGFORM_TEST_ENGINE_BAD_ALLOC=N makes the N-th completion admitted (1-based) fail
  // with std::bad_alloc at its first token (tests/server); 0 = never.
  long fail_alloc_at_ = 0;
  uint64_t admitted_ = 0;      // completions admitted (engine thread only)
  uint64_t unrun_tokens_ = 0;  // prompt tokens of completions of max_tokens 0 (engine thread only)
  std::thread thread_;
};

// The length of text's prefix that is final while generation goes on: text minus its longest
// suffix that is a proper prefix of a stop string, minus a trailing incomplete UTF-8 sequence.
// Exposed for tests.
size_t stable_prefix(const std::string& text, const std::vector<std::string>& stop);

}  // namespace ragform::server

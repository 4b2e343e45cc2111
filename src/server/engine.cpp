#include "server/engine.h"

#include <chrono>
#include <cstdlib>
#include <new>

#include <algorithm>

#include "engine/runtime/context.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/runtime/sampler.h"
#include "reader/native_reader.h"

namespace ragform::server {

struct Engine::CtxHolder {
  std::unique_ptr<runtime::Context> ctx;
};

struct Engine::Job {
  // A completion when fn is empty.
  std::function<void()> fn;
  std::promise<void> fn_done;
  std::vector<int32_t> ids;
  runtime::GenerateOptions opt;
  CompletionHooks hooks;
  std::promise<runtime::GenerateOutput> done;
};

// One completion being generated.
struct Engine::Active {
  Active(std::shared_ptr<Job> j, runtime::Sampler s)
      : job(std::move(j)), sampler(std::move(s)), next(job->ids) {}
  std::shared_ptr<Job> job;
  int seq = -1;
  runtime::Sampler sampler;
  runtime::GenerateOutput out;
  std::vector<int32_t> next;  // tokens to feed in the next step (the prompt, then one token)
  size_t emitted = 0;         // bytes of out.text already given to on_text
  bool finished = false;
  bool cancelled = false;
  bool prefilled = false;   // the prompt went through a step (and was offered to the cache)
  bool fail_alloc = false;  // the test hook (engine.h): a bad_alloc at the first token
};

size_t stable_prefix(const std::string& text, const std::vector<std::string>& stop) {
  size_t keep = text.size();
  for (const std::string& s : stop) {
    // Longest proper prefix of s that text ends with.
    for (size_t len = std::min(s.size() - (s.empty() ? 0 : 1), text.size()); len > 0; --len) {
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        keep = std::min(keep, text.size() - len);
        break;
      }
    }
  }
  // Back off a trailing incomplete UTF-8 sequence.
  size_t i = keep, back = 0;
  while (i > 0 && back < 4) {
    unsigned char c = static_cast<unsigned char>(text[i - 1]);
    --i;
    ++back;
    if ((c & 0xC0) != 0x80) {
      size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
      return back >= need ? keep : i;
    }
  }
  return keep;
}

Engine::Engine(reader::NativeReader& reader, const SchedulerOptions& opt)
    : reader_(reader), opt_(opt) {
  if (opt_.max_batch < 1) opt_.max_batch = 1;
  ctx_ = std::make_unique<CtxHolder>();
  runtime::ContextParams cp;
  cp.n_ctx = opt.n_ctx;
  cp.kv_type = opt.kv_f16 ? runtime::KvType::F16 : runtime::KvType::F32;
  cp.pool = reader_.pool();  // shared with the reader's own passes (/v1/score): calls serialise
  // The reader's prefix cache, when its KV type is the engine's (entries never mix types anyway).
  cp.prefix_cache = reader_.prefix_cache();
  ctx_->ctx = std::make_unique<runtime::Context>(reader_.model(), cp);
  // Test hook (tests/server): the N-th completion admitted fails with std::bad_alloc at its
  // first token, as a real allocation failure there would.
  if (const char* n = std::getenv("RAGFORM_TEST_ENGINE_BAD_ALLOC")) fail_alloc_at_ = std::atol(n);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { stop(); }

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Fail whatever is still queued (the loop failed the active ones).
  std::deque<std::shared_ptr<Job>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  for (auto& j : left) {
    auto e = std::make_exception_ptr(Error("server", "shutting down"));
    if (j->fn) {
      j->fn_done.set_exception(e);
    } else {
      if (j->hooks.on_finish) j->hooks.on_finish();
      j->done.set_exception(e);
    }
  }
}

void Engine::enqueue(std::shared_ptr<Job> j) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) throw Error("server", "shutting down");
    if (int(queue_.size()) >= opt_.max_queue)
      throw QueueFull("server",
                      "the request queue is full (" + std::to_string(opt_.max_queue) + " pending)");
    queue_.push_back(std::move(j));
  }
  cv_.notify_one();
}

std::future<runtime::GenerateOutput> Engine::complete(std::vector<int32_t> ids,
                                                      runtime::GenerateOptions opt,
                                                      CompletionHooks hooks) {
  auto j = std::make_shared<Job>();
  j->ids = std::move(ids);
  j->opt = std::move(opt);
  j->hooks = std::move(hooks);
  auto f = j->done.get_future();
  enqueue(j);
  return f;
}

std::future<void> Engine::run(std::function<void()> fn) {
  auto j = std::make_shared<Job>();
  j->fn = std::move(fn);
  auto f = j->fn_done.get_future();
  enqueue(j);
  return f;
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

int Engine::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int(queue_.size());
}

// Completes a finished (or cancelled) sequence: the rest of its text to on_text, its sequence
// freed, on_finish, the future set.
void Engine::finish(Active& a) {
  auto& ctx = *ctx_->ctx;
  if (a.seq >= 0) ctx.free_sequence(a.seq);
  a.seq = -1;
  auto& h = a.job->hooks;
  if (!a.cancelled && h.on_text && a.emitted < a.out.text.size())
    h.on_text(a.out.text.substr(a.emitted));
  a.emitted = a.out.text.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.sequences++;
    stats_.active--;
  }
  // The bookkeeping and on_finish come first, so whoever sees the future ready sees them done.
  if (h.on_finish) h.on_finish();
  a.finished = true;  // (after anything that could throw: fail_active answers until here)
  a.job->done.set_value(std::move(a.out));
}

// A completion that failed: counted out, on_finish, the future fails.
void Engine::fail(const std::shared_ptr<Job>& j, std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.active--;
  }
  if (j->hooks.on_finish) j->hooks.on_finish();
  try {
    j->done.set_exception(e);
  } catch (const std::future_error&) {
    // Already answered (a failure after its value was set): nothing more to tell.
  }
}

// An allocation failed on the engine thread: the prefix cache gives its memory back, so that the
// failure costs one request, not the next ones too.
void Engine::shed_cache() noexcept {
  if (auto pc = reader_.prefix_cache()) pc->clear();
}

// An active completion that failed (its sequence freed, the future failed), once.
void Engine::fail_active(Active& a, std::exception_ptr e) {
  if (a.seq >= 0) ctx_->ctx->free_sequence(a.seq);
  a.seq = -1;
  if (a.finished) return;  // answered already
  a.finished = true;
  fail(a.job, e);
}

namespace {
bool is_bad_alloc(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    return true;
  } catch (...) {
  }
  return false;
}
}  // namespace

// One forward pass over every active sequence, then one token for each (runtime::generate's rule).
void Engine::step(std::vector<Active>& active) {
  auto& ctx = *ctx_->ctx;
  std::vector<runtime::SeqOutput> res;
  try {
    std::vector<runtime::SeqInput> in;
    for (auto& a : active) {
      runtime::SeqInput s;
      s.seq = a.seq;
      s.tokens = a.next;
      in.push_back(std::move(s));
    }
    res = ctx.eval(in);
  } catch (...) {
    auto e = std::current_exception();
    if (is_bad_alloc(e)) shed_cache();
    for (auto& a : active) fail_active(a, e);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.steps++;
    stats_.largest_batch = std::max(stats_.largest_batch, int(active.size()));
  }
  for (auto& a : active)
    if (!a.prefilled) {
      a.prefilled = true;
      // The cache only saves later work: when its copy of the rows cannot be made (no memory:
      // a server under `ulimit -v` died of this bad_alloc, issue 40), the request goes on
      // without it and the cache gives its memory back.
      try {
        ctx.cache_prefix(a.seq);
      } catch (const std::bad_alloc&) {
        shed_cache();
      }
    }
  for (size_t b = 0; b < active.size(); ++b) {
    Active& a = active[b];
    // Whatever fails for one sequence (an allocation for its text, its stream's callback) fails
    // that request alone; the engine thread goes on.
    try {
      advance(a, res[b].logits.data());
    } catch (...) {
      auto e = std::current_exception();
      if (is_bad_alloc(e)) shed_cache();
      fail_active(a, e);
    }
  }
}

// The token after a step for one sequence: sampled, checked against generate()'s rules, given to
// the stream; the sequence finished when it ends.
void Engine::advance(Active& a, const float* logits) {
  auto& ctx = *ctx_->ctx;
  const auto& tk = reader_.tokenizer();
  const int V = ctx.model().hp().n_vocab;
  const auto& opt = a.job->opt;
  if (a.fail_alloc) {
    a.fail_alloc = false;
    throw std::bad_alloc();
  }
  runtime::GenerateOutput& o = a.out;
  const int32_t id = a.sampler.sample(logits, V);
  if (!runtime::take_token(o, id, tk, opt, ctx, a.seq)) {  // generate()'s per-token rule
    finish(a);
    return;
  }
  if (a.job->hooks.on_text) {
    size_t upto = stable_prefix(o.text, opt.stop);
    if (upto > a.emitted) {
      if (!a.job->hooks.on_text(o.text.substr(a.emitted, upto - a.emitted))) {
        a.cancelled = true;
        o.finish_reason = "cancelled";
        finish(a);
        return;
      }
      a.emitted = upto;
    }
  }
  a.next = {id};
}

// The contexts' own accounting (reuse_prefix counts every prompt): the engine's, the reader's (the
// jobs run on it), and the completions of max_tokens 0; published under mu_. On the engine thread,
// the reader's only user while a job is not running.
void Engine::publish_counts(int jobs_done) noexcept {
  const runtime::PrefillCounts c = ctx_->ctx->prefill_counts();
  const auto r = reader_.prefill_counts();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.prompt_tokens = uint64_t(c.submitted) + (r ? uint64_t(r->submitted) : 0) + unrun_tokens_;
  stats_.prompt_tokens_computed = uint64_t(c.computed) + (r ? uint64_t(r->computed) : 0);
  stats_.jobs += uint64_t(jobs_done);
}

void Engine::loop() {
  std::vector<Active> active;
  // Room for every place at once: admitting a completion never reallocates (or fails) here.
  active.reserve(size_t(opt_.max_batch));
  auto& ctx = *ctx_->ctx;
  for (;;) {
    std::shared_ptr<Job> fn_job;
    std::vector<std::shared_ptr<Job>> admit;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
      if (stopping_) break;
      // The oldest other job (one per step, so decoding is never held up for long), and as many
      // waiting completions as there are free places.
      for (auto it = queue_.begin(); it != queue_.end();) {
        if ((*it)->fn) {
          if (!fn_job) {
            fn_job = *it;
            it = queue_.erase(it);
            continue;
          }
        } else if (int(active.size() + admit.size()) < opt_.max_batch) {
          admit.push_back(*it);
          it = queue_.erase(it);
          continue;
        }
        ++it;
      }
      stats_.active += int(admit.size());
    }
    if (fn_job) {
      try {
        fn_job->fn();
        publish_counts(1);  // before the future is ready: its caller's /health sees the job
        fn_job->fn_done.set_value();
      } catch (...) {
        publish_counts(1);
        fn_job->fn_done.set_exception(std::current_exception());
      }
    }
    for (auto& j : admit) {
      // runtime::generate's checks, then the prompt is the sequence's first step.
      std::exception_ptr err;
      try {
        runtime::check_prompt(j->opt, j->ids.size(), ctx.n_ctx());
      } catch (...) {
        err = std::current_exception();
      }
      if (err) {
        fail(j, err);
        continue;
      }
      // Admission (its sequence, steering, the cached prefix's rows) fails this request alone:
      // a bad_alloc here ended the whole server (issue 40).
      int seq = -1;
      try {
        Active a(j, runtime::Sampler(j->opt.sampling));
        a.out.prompt_tokens = int(j->ids.size());
        if (j->opt.max_tokens == 0) {
          a.out.finish_reason = "length";
          unrun_tokens_ += j->ids.size();
          publish_counts();
          finish(a);
          continue;
        }
        a.fail_alloc = fail_alloc_at_ > 0 && ++admitted_ == uint64_t(fail_alloc_at_);
        seq = a.seq = ctx.new_sequence();
        if (!j->opt.steering.empty()) ctx.set_steering(a.seq, j->opt.steering[0]);
        const int reused = ctx.reuse_prefix(a.seq, a.next);
        a.next.erase(a.next.begin(), a.next.begin() + reused);
        publish_counts();
        active.push_back(std::move(a));
      } catch (...) {
        auto e = std::current_exception();
        if (is_bad_alloc(e)) shed_cache();
        if (seq >= 0) ctx.free_sequence(seq);
        fail(j, e);
      }
    }
    if (!active.empty()) {
      step(active);
      active.erase(
          std::remove_if(active.begin(), active.end(), [](const Active& a) { return a.finished; }),
          active.end());
      if (opt_.pace_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(opt_.pace_ms));
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.active = int(active.size());
  }
  // Stopping: the active completions fail.
  for (auto& a : active) {
    ctx.free_sequence(a.seq);
    fail(a.job, std::make_exception_ptr(Error("server", "shutting down")));
  }
}

}  // namespace ragform::server

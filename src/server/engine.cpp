#include "server/engine.h"

#include "engine/runtime/context.h"
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
  std::promise<runtime::GenerateOutput> done;
};

namespace {
// Requests may share one generate() call only when every option agrees and sampling is greedy:
// runtime::generate seeds sequence i with seed + i, so a sampled request must run alone to give the
// same text whatever else is queued.
bool batchable(const runtime::GenerateOptions& a, const runtime::GenerateOptions& b) {
  return a.sampling.temperature <= 0 && b.sampling.temperature <= 0 &&
         a.max_tokens == b.max_tokens && a.stop == b.stop && a.ignore_eos == b.ignore_eos;
}
}  // namespace

Engine::Engine(reader::NativeReader& reader, const EngineOptions& opt)
    : reader_(reader), opt_(opt) {
  if (opt_.max_batch < 1) opt_.max_batch = 1;
  ctx_ = std::make_unique<CtxHolder>();
  runtime::ContextParams cp;
  cp.n_ctx = opt.n_ctx;
  cp.kv_type = opt.kv_f16 ? runtime::KvType::F16 : runtime::KvType::F32;
  ctx_->ctx = std::make_unique<runtime::Context>(reader_.model(), cp);
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
  // Fail whatever is still queued.
  std::deque<std::shared_ptr<Job>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
  }
  for (auto& j : left) {
    auto e = std::make_exception_ptr(Error("server", "shutting down"));
    if (j->fn)
      j->fn_done.set_exception(e);
    else
      j->done.set_exception(e);
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
                                                      runtime::GenerateOptions opt) {
  auto j = std::make_shared<Job>();
  j->ids = std::move(ids);
  j->opt = std::move(opt);
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

void Engine::loop() {
  for (;;) {
    std::vector<std::shared_ptr<Job>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch.push_back(queue_.front());
      queue_.pop_front();
      if (!batch[0]->fn) {
        for (auto it = queue_.begin(); it != queue_.end() && int(batch.size()) < opt_.max_batch;) {
          if (!(*it)->fn && batchable(batch[0]->opt, (*it)->opt)) {
            batch.push_back(*it);
            it = queue_.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
    if (batch[0]->fn) {
      try {
        batch[0]->fn();
        batch[0]->fn_done.set_value();
      } catch (...) {
        batch[0]->fn_done.set_exception(std::current_exception());
      }
      continue;
    }
    std::vector<std::vector<int32_t>> prompts;
    for (auto& j : batch) prompts.push_back(j->ids);
    try {
      auto outs = runtime::generate(*ctx_->ctx, reader_.tokenizer(), prompts, batch[0]->opt);
      for (size_t i = 0; i < batch.size(); ++i) batch[i]->done.set_value(std::move(outs[i]));
      std::lock_guard<std::mutex> lock(mu_);
      stats_.batches++;
      stats_.sequences += batch.size();
      stats_.largest_batch = std::max(stats_.largest_batch, int(batch.size()));
    } catch (...) {
      for (auto& j : batch) j->done.set_exception(std::current_exception());
    }
  }
}

}  // namespace ragform::server

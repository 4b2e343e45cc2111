#include "retrieval/retriever_pool.h"

#include <algorithm>

namespace ragform::retrieval {

RetrieverPool::RetrieverPool(std::string dir, RetrieverOptions opt,
                             std::shared_ptr<const DenseIndex> dense, int max_size)
    : dir_(std::move(dir)),
      opt_(std::move(opt)),
      dense_(std::move(dense)),
      max_size_(size_t(std::max(1, max_size))) {
  // One Retriever now, so a bad index or encoder fails at construction, not at the first request.
  free_.push_back(std::make_unique<Retriever>(dir_, opt_, dense_));
  opened_ = 1;
}

RetrieverPool::~RetrieverPool() = default;

RetrieverPool::Lease::~Lease() {
  if (r_) pool_->release(std::move(r_));
}

RetrieverPool::Lease RetrieverPool::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty() || opened_ < max_size_; });
  if (!free_.empty()) {
    auto r = std::move(free_.back());
    free_.pop_back();
    return Lease(*this, std::move(r));
  }
  ++opened_;  // counted before opening, so a concurrent caller cannot pass max_size
  lock.unlock();
  try {
    return Lease(*this, std::make_unique<Retriever>(dir_, opt_, dense_));
  } catch (...) {
    lock.lock();
    --opened_;
    cv_.notify_one();
    throw;
  }
}

void RetrieverPool::release(std::unique_ptr<Retriever> r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(r));
  }
  cv_.notify_one();
}

size_t RetrieverPool::opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

}  // namespace ragform::retrieval

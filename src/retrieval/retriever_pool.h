// Retrievers for concurrent callers (the server's /v1/retrieve): a Retriever is one batch at a
// time (its SQLite connections are its own), so concurrent requests each lease one from a pool
// that grows on demand up to `max_size` and then makes callers wait for a free one. Every
// Retriever of a pool shares one read-only FAISS index (DenseIndex::search is const and takes its
// efSearch per call, so parallel searches of one index are safe) and the caller's encoder (which
// must be thread-safe: NativeEncoder serialises its calls).
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "retrieval/retriever.h"

namespace ragform::retrieval {

class RetrieverPool {
 public:
  // `opt.threads` is each Retriever's own worker count (1 suits a server: parallelism comes from
  // the concurrent requests). `dense` is shared by the dense and hybrid Retrievers (null for bm25).
  RetrieverPool(std::string dir, RetrieverOptions opt, std::shared_ptr<const DenseIndex> dense,
                int max_size);
  ~RetrieverPool();

  class Lease {
   public:
    Lease(RetrieverPool& pool, std::unique_ptr<Retriever> r) : pool_(&pool), r_(std::move(r)) {}
    Lease(Lease&& o) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease();
    Retriever& operator*() const { return *r_; }
    Retriever* operator->() const { return r_.get(); }

   private:
    RetrieverPool* pool_;
    std::unique_ptr<Retriever> r_;
  };
  // A free Retriever (opened on first need; waits when max_size are leased).
  Lease acquire();
  size_t opened() const;  // Retrievers opened so far

 private:
  void release(std::unique_ptr<Retriever> r);
  std::string dir_;
  RetrieverOptions opt_;
  std::shared_ptr<const DenseIndex> dense_;
  size_t max_size_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Retriever>> free_;
  size_t opened_ = 0;
};

}  // namespace ragform::retrieval

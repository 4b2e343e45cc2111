// Queries against an index directory (index_build.h): BM25 (FTS5), dense (FAISS) or hybrid
// (reciprocal-rank fusion of both, fusion.h), for a batch of questions at a time.
//
// Threads: BM25 questions are spread over `threads` workers, each with its own read-only SQLite
// connection (SQLite connections are not shared between threads); dense queries are embedded in
// one batched encoder call and searched in one FAISS call on `threads` OpenMP threads. Concurrent
// callers use one Retriever each (retriever_pool.h), sharing the read-only FAISS index.
// Hybrid: each ranker contributes its top max(2k, 100) passages, fused with k_rrf = 60.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "reader/encoder.h"
#include "retrieval/bm25_index.h"
#include "retrieval/dense_index.h"

namespace ragform::retrieval {

enum class Mode { Bm25, Dense, Hybrid };
const char* mode_name(Mode m);          // "bm25", "dense", "hybrid"
Mode parse_mode(const std::string& s);  // throws UsageError

struct Retrieved {
  std::string id, title, text;
  double score = 0;  // -bm25() (bm25), cosine (dense) or the RRF score (hybrid)
  int rank = 0;      // 1-based
};

struct RetrieverOptions {
  Mode mode = Mode::Bm25;
  int threads = 1;
  // Dense and hybrid: the query encoder and the SHA-256 of its model file, which must be the
  // one the index was built with (DenseIndex::require_encoder).
  reader::Encoder* encoder = nullptr;
  std::string encoder_sha256;
  std::string encoder_name;
};

class Retriever {
 public:
  // `dense`: an already open FAISS index of DIR to share (RetrieverPool); null = open it here when
  // the mode needs it.
  Retriever(const std::string& dir, const RetrieverOptions& opt,
            std::shared_ptr<const DenseIndex> dense = nullptr);
  ~Retriever();
  // The top k passages of every question, best first (exactly k when the index holds k and the
  // question has a searchable word). Not reentrant: one batch at a time per Retriever.
  std::vector<std::vector<Retrieved>> retrieve(const std::vector<std::string>& questions, int k);
  size_t size() const;                                     // passages in the index
  size_t truncated_queries() const { return truncated_; }  // questions cut to the encoder context
  const DenseIndex* dense() const { return dense_.get(); }

 private:
  std::vector<std::vector<Hit>> bm25(const std::vector<std::string>& questions, int k);
  std::vector<std::vector<Hit>> dense_hits(const std::vector<std::string>& questions, int k);
  std::string dir_;
  RetrieverOptions opt_;
  std::vector<std::unique_ptr<Bm25Index>> conns_;  // one per worker
  std::unique_ptr<ThreadPool> pool_;
  std::shared_ptr<const DenseIndex> dense_;
  size_t truncated_ = 0;
};

}  // namespace ragform::retrieval

// `ragform index build`: streams a corpus (corpus.h) into an index directory:
//   DIR/index.sqlite   passages + FTS5 BM25 index (bm25_index.h)
//   DIR/dense.faiss    with an encoder: FAISS index of passage vectors (dense_index.h)
//   DIR/dense.json     its metadata (encoder SHA-256, pooling, normalisation, metric, dims)
//
// Memory: one batch of passages (and, for IVF, the training sample) at a time; SQLite and the
// FAISS index itself hold the rest. Every `checkpoint` passages the SQLite transaction is
// committed and then the FAISS index saved, so a killed build loses at most one checkpoint:
// building again with `append` skips the passages already indexed (same id, title and text) and
// embeds those whose vector is missing. A passage is embedded as "title\ntext"; one longer than the
// encoder's context is cut to its first n_ctx word-pieces and counted, never an error.
#pragma once
#include <cstddef>
#include <string>

#include "base/run_hooks.h"
#include "reader/encoder.h"
#include "retrieval/dense_index.h"

namespace ragform::retrieval {

struct BuildOptions {
  std::string corpus;  // JSONL or DPR TSV
  std::string dir;
  bool append = false;  // add to an existing index (or resume a killed build)
  // Dense vectors when set; name and SHA-256 of the model file go into dense.json.
  reader::Encoder* encoder = nullptr;
  std::string encoder_name, encoder_sha256;
  FaissKind faiss = FaissKind::Flat;
  int hnsw_m = 32;
  size_t batch = 256;         // passages per encoder call
  size_t checkpoint = 20000;  // passages between commits / saves
  size_t ivf_train = 20000;   // vectors the IVF k-means trains on (the first ones)
  // Progress: one stage "index" of unknown total, advanced once per passage read. The library
  // draws nothing itself; the CLI passes hooks that draw base/progress.h's line.
  RunHooks hooks;
};

struct BuildSummary {
  size_t read = 0;             // passages read from the corpus
  size_t added = 0;            // new passages
  size_t already_indexed = 0;  // identical passages from an earlier build (append / resume)
  size_t embedded = 0;         // vectors added
  size_t truncated = 0;        // of those, passages cut to the encoder's context
  size_t total = 0;            // passages in the index afterwards
  bool dense = false;
};

BuildSummary build_index(const BuildOptions& opt);

}  // namespace ragform::retrieval

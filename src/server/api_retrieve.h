// POST /v1/retrieve on `ragform serve --index DIR` (docs/retrieval.md): the retrieval of
// `ragform retrieve` over HTTP, beside whichever API the served model answers (api.h for a reader,
// api_encoder.h for an encoder): a route of the same table (router.h), with the same API key check
// and error objects.
//   POST /v1/retrieve {question: string | questions: [string | {"question", "id"?, "answers"?,
//   ...}],
//                      k?: 1..1000 (default 20), mode?: "bm25" | "dense" | "hybrid"}
//     -> {object: "list", mode, k, data: [{"id", "question", "answers", ..., "ctxs": [{"id",
//         "title", "text", "score", "rank"}]}]}   (one row per question, retrieve --json's shape;
//         a string question gets the id "q<index>")
// dense and hybrid need the index's encoder: the served encoder model, or --encoder-model, when
// its SHA-256 is the one in DIR/dense.json; otherwise they are a 400 naming the reason.
// Concurrent requests run in parallel, up to `parallel` at once, each on a Retriever leased from a
// pool (retrieval/retriever_pool.h: its own SQLite connection; one shared FAISS index searched
// with per-call parameters); more wait for a free one.
#pragma once
#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "server/api.h"

namespace ragform::reader {
class Encoder;
}
namespace ragform::retrieval {
class RetrieverPool;
}

namespace ragform::server {

class Router;
struct RequestBody;

struct RetrieveApiOptions {
  std::string index_dir;
  int parallel = 4;  // retrievals run at once (SQLite connections per mode, opened on demand)
  // The encoder for dense / hybrid (may be null) and its model file's SHA-256 and name.
  reader::Encoder* encoder = nullptr;
  std::string encoder_sha256, encoder_name;
  int max_questions = 1024;
};

class RetrieveApi {
 public:
  // Opens the index (throws Error when DIR holds none).
  explicit RetrieveApi(RetrieveApiOptions opt);
  ~RetrieveApi();
  // Adds POST /v1/retrieve (and /retrieve) to the server's table.
  void add_routes(Router& router);
  // The same route without a handler, for the API document of a server not started (openapi.h).
  static void declare_routes(Router& router);
  // Modes this server answers: "bm25", plus "dense" and "hybrid" with a matching encoder.
  bool dense_available() const { return bool(dense_); }
  const std::string& dense_unavailable_reason() const { return why_no_dense_; }

 private:
  Response retrieve(RequestBody& body);
  RetrieveApiOptions opt_;
  std::unique_ptr<retrieval::RetrieverPool> bm25_, dense_, hybrid_;
  std::string why_no_dense_;
  // The most bytes one hit (its passage and fields) has taken in a reply so far: the reply
  // budget's estimate of a hit before the passages of a request are known (api_retrieve.cpp).
  std::atomic<size_t> largest_hit_{0};
};

}  // namespace ragform::server

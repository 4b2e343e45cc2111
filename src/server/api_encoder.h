// The HTTP API of `ragform serve` when it runs an encoder model (reader/encoder.h), independent of
// any HTTP library like api.h (same Request / Response, routes of the same table, router.h, with
// the same API key check and OpenAI-style error objects):
//   GET  /health -> {status: "ok", encoder: the model's description, reply_memory: the reply
//   budget's counters (reply_budget.h)}; GET /v1/models as for a reader
//   POST /v1/embeddings {input: string | [strings], model?, encoding_format?: "float",
//                        pooling?: none|mean|cls|last, normalize?: bool (default true)}
//        -> {object: "list", model, data: [{object: "embedding", index, embedding, n_tokens,
//            truncated}], usage: {prompt_tokens, total_tokens}} (OpenAI's shape; with pooling
//            none `embedding` is one vector per token and `pieces` names the tokens)
//   POST /v1/rerank {query, documents: [strings], top_n?, return_documents?, model?}
//        -> {object: "list", model, results: [{index, relevance_score, labels, scores,
//            document?: {text}}] (highest first, top_n of them), usage} (llama.cpp / Jina shape);
//            each document is scored as the pair [CLS] query [SEP] document [SEP];
//            relevance_score is the head's first raw output, as llama.cpp's rerank reports it.
// Bad input is a 400 naming the field (not JSON, empty or non-string input — an empty string
// too, as OpenAI refuses it —, unknown pooling, a
// classifier asked for embeddings without pooling, rerank on a model without a head); a model
// name other than the served one is a 404; per-token vectors over kMaxEmbeddingValues are a 400
// response_too_large.
#pragma once
#include <atomic>
#include <cstddef>
#include <string>

#include "server/api.h"

namespace ragform::reader {
class Encoder;
}

namespace ragform::server {

// The most numbers one /v1/embeddings reply with pooling none (a vector per token) may hold: texts
// x tokens x width, 2^21 (as /v1/attention's kMaxAttentionValues: about 45 MB of JSON, under a
// remote encoder's 64 MiB answer cap). More is a 400 response_too_large; ragform's remote encoder
// then asks for its texts in smaller batches.
inline constexpr size_t kMaxEmbeddingValues = size_t(1) << 21;

struct EncoderApiOptions {
  std::string model_id;
  std::string model_sha256;  // of the encoder file, reported by /v1/models (as api.h's)
  int max_inputs = 2048;     // texts per /v1/embeddings request, documents per /v1/rerank
  // The model's width and longest input in tokens, for the reply budget's estimates; 0 = the
  // native encoder's own (else the width is learned from the first answer).
  int n_embd = 0;
  int max_tokens = 0;
};

class Router;
struct RequestBody;

class EncoderApi {
 public:
  EncoderApi(reader::Encoder& enc, EncoderApiOptions opt);
  // Adds these endpoints to the server's table; every other 404 names them.
  void add_routes(Router& router);
  // The same routes without handlers, for the API document of a server not started (openapi.h).
  static void declare_routes(Router& router);

 private:
  static void routes(Router& router, EncoderApi* self);  // self null: declared only
  Response health();
  Response models();
  Response model(RequestBody& body);
  Response embeddings(RequestBody& body);
  Response rerank(RequestBody& body);
  reader::Encoder& enc_;
  EncoderApiOptions opt_;
  long created_;
  std::atomic<size_t> width_{0};  // the vectors' width, 0 until known
};

}  // namespace ragform::server

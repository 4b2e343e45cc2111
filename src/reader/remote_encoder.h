// RemoteEncoder: the Encoder over an HTTP server.
//   embed    — POST {base}/embeddings {"input": [texts], "model"?, "encoding_format": "float"}
//              (OpenAI's shape; answered by llama-server --embedding, vLLM, TEI's OpenAI route,
//              hosted APIs, and `ragform serve -m ENCODER.gguf`). The answer's data[i].embedding
//              is taken in index order. Two fields beyond OpenAI's are sent: "pooling" (only when
//              asked for) and "normalize"; `ragform serve` honours them, other servers ignore them
//              and return their own pooling (OpenAI-style servers normalise). Pooling none asks
//              ragform's server for per-token vectors; a server that returns one vector per text
//              then gives NotSupported.
//   classify — POST {base}/rerank {"query": a, "documents": [b], "top_n": 1} (llama.cpp / Jina /
//              Cohere shape); results[0].relevance_score is the score. `ragform serve` also returns
//              every label's raw score ("scores", "labels"), which classify then uses; elsewhere
//              the one relevance score becomes label "score". A text without a pair -> NotSupported
//              (rerank scores pairs only).
// Transport as OpenAIReader: retries with exponential backoff on connection errors, 429 and 5xx;
// RequestFailed after the last attempt or on another 4xx (with the server's message). A pooling-
// none batch refused with a 400 (a reply over the server's limit) is asked for in halves. Every
// field of an answer is checked where it is read (indexes once each and in range, vectors of one
// width of finite floats, counts integers in range, pieces strings): RequestFailed naming the
// method, the field and the server otherwise.
#pragma once
#include <string>

#include "reader/encoder.h"
#include "reader/openai_reader.h"

namespace ragform::reader {

struct RemoteEncoderOptions {
  std::string base_url;  // "http://127.0.0.1:8080" or ".../v1" (a missing path means /v1)
  std::string model;     // sent as "model" when not empty
  std::string api_key;
  int retries = 2;
  double backoff_s = 0.5;
  int timeout_s = 300;
  int batch = 64;  // texts per /embeddings request
};

class RemoteEncoder : public Encoder {
 public:
  explicit RemoteEncoder(RemoteEncoderOptions opt);
  std::string describe() const override;
  // Unknown without asking: the server applies its model's own pooling. Reported as mean.
  Pooling default_pooling() const override { return Pooling::Mean; }
  std::vector<Embedding> embed(const std::vector<std::string>& texts,
                               std::optional<Pooling> pooling, bool normalize) override;
  std::vector<Classification> classify(const std::vector<TextPair>& pairs) override;

 private:
  std::string post(const std::string& endpoint, const std::string& body) const;
  // texts[b, e) in one request (in halves when a pooling-none reply is refused as too large).
  std::vector<Embedding> embed_batch(const std::vector<std::string>& texts, size_t b, size_t e,
                                     std::optional<Pooling> pooling, bool normalize);
  RemoteEncoderOptions opt_;
  HttpJsonClient http_;  // after opt_: built from opt_.base_url
};

}  // namespace ragform::reader

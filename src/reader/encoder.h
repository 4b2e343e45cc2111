// The Encoder: the second model interface beside the Reader (reader.h), for embedding and
// cross-encoder models (BERT-family: BGE, E5, MiniLM, GTE, rerankers, NLI classifiers). It answers
// two questions:
//   embed    — one vector per text (pooled: mean / cls / last), or one per word-piece (pooling
//              none), optionally L2-normalised: retrieval, SpotlightRAG's token encoder;
//   classify — the classification head's raw scores and their softmax for a text or a text pair
//              ([CLS] a [SEP] b [SEP]): SURE's NLI filter, reranking.
// NativeEncoder (native_encoder.h) runs the model on the GGUF engine; RemoteEncoder
// (remote_encoder.h) calls an OpenAI-compatible /v1/embeddings and a llama.cpp/Jina-style
// /v1/rerank (a GPU embedding server, or `ragform serve` running an encoder model).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/model/bert.h"

namespace ragform::reader {

using model::Pooling;

struct Embedding {
  int n_tokens = 0;  // tokens encoded (after truncation; 0 when the server does not say)
  bool truncated = false;
  std::vector<float> vector;         // pooled vector (mean / cls / last)
  int n_embd = 0;                    // width of vector / of each token vector
  std::vector<float> token_vectors;  // [n_tokens][n_embd] for pooling none
  std::vector<std::string> pieces;   // the n_tokens word-pieces (pooling none), "[CLS]" etc.
};

struct TextPair {
  std::string a;
  std::optional<std::string> b;  // none: classify `a` alone ([CLS] a [SEP])
};

struct Classification {
  std::vector<std::string> labels;
  std::vector<float> scores;  // raw head outputs, one per label
  std::vector<float> probs;   // softmax of scores
  int n_tokens = 0;
  bool truncated = false;
  // Index of `label` in labels, or -1.
  int find(const std::string& label) const;
};

class Encoder {
 public:
  virtual ~Encoder() = default;
  // "native:<file name>" or "remote:<url>#<model>" (run stores, reports).
  virtual std::string describe() const = 0;
  // The pooling embed() uses when none is asked for (the model's bert.pooling_type).
  virtual Pooling default_pooling() const = 0;
  // Throws Error / NotSupported (e.g. pooling none on a server that returns one vector).
  virtual std::vector<Embedding> embed(const std::vector<std::string>& texts,
                                       std::optional<Pooling> pooling, bool normalize) = 0;
  virtual std::vector<Classification> classify(const std::vector<TextPair>& pairs) = 0;
  // classify of the pairs (query, document) for every document, in order, holding the query once:
  // a 500 KB query against 2,000 documents is neither copied nor (natively) tokenised 2,000 times.
  // This default classifies the pairs kRerankChunk at a time.
  virtual std::vector<Classification> rerank(const std::string& query,
                                             const std::vector<std::string>& documents);
  static constexpr size_t kRerankChunk = 64;
};

// softmax of raw scores (max-subtracted, in double).
std::vector<float> softmax_probs(const std::vector<float>& scores);

}  // namespace ragform::reader

// NativeEncoder: the Encoder over ragform's own engine (engine/model/bert.h +
// engine/runtime/encoder.h). Texts are tokenised with the model's WordPiece vocabulary, special-
// token text NOT parsed (document text cannot inject [SEP]); every call encodes all its texts in
// batched passes on the given thread pool. Thread-safe: calls are serialised by a mutex.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "base/thread_pool.h"
#include "engine/model/engine_options.h"
#include "engine/runtime/encoder.h"
#include "reader/encoder.h"

namespace ragform::tok {
class Tokenizer;
}

namespace ragform::reader {

struct NativeEncoderOptions {
  EngineOptions engine;  // thread pool (or thread count), CPU tier, F16 path, load mode
  runtime::Truncate truncate = runtime::Truncate::Right;
  // Longest input; 0 = the length the model was trained for: sentence-transformers'
  // max_seq_length when the file records it (scripts/convert-encoder.py writes
  // sentence_transformers.max_seq_length), else the model's position table.
  int max_tokens = 0;
  int max_batch_tokens = 4096;  // tokens per forward pass
};

class NativeEncoder : public Encoder {
 public:
  // Runs on opt.engine's pool (shared), else on a pool of its own.
  NativeEncoder(const std::string& model_path, const NativeEncoderOptions& opt = {});
  ~NativeEncoder() override;

  std::string describe() const override;
  Pooling default_pooling() const override;
  std::vector<Embedding> embed(const std::vector<std::string>& texts,
                               std::optional<Pooling> pooling, bool normalize) override;
  std::vector<Classification> classify(const std::vector<TextPair>& pairs) override;
  // The query tokenised once and paired with each document's pieces.
  std::vector<Classification> rerank(const std::string& query,
                                     const std::vector<std::string>& documents) override;

  const model::BertModel& model() const { return *model_; }
  const tok::Tokenizer& tokenizer() const { return *tok_; }
  const std::string& model_path() const { return path_; }
  int max_tokens() const;

 private:
  std::string path_;
  NativeEncoderOptions opt_;
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<model::BertModel> model_;
  std::unique_ptr<tok::Tokenizer> tok_;
  int trained_max_tokens_ = 0;  // sentence_transformers.max_seq_length, 0 when absent
  std::vector<Classification> classify_inputs(const std::vector<runtime::EncoderInput>& ins);
  std::unique_ptr<runtime::Encoder> enc_;
  std::mutex mu_;
};

}  // namespace ragform::reader

#include "reader/native_encoder.h"

#include <filesystem>

#include "base/error.h"
#include "base/options.h"
#include "engine/tokenizer/tokenizer.h"

namespace ragform::reader {

NativeEncoder::NativeEncoder(const std::string& model_path, const NativeEncoderOptions& opt)
    : path_(model_path), opt_(opt) {
  pool_ = opt.engine.pool_or_new();
  model_ = model::BertModel::load(model_path, opt.engine);
  tok_ = tok::Tokenizer::from_gguf(model_->file());
  enc_ = std::make_unique<runtime::Encoder>(*model_, pool_);
  if (opt_.max_tokens < 0) throw UsageError("encoder", "max_tokens must be >= 0");
  // A length past the position table cannot be honoured: refused, not cut to the table without a
  // word (pass 22: --max-tokens 600 on MiniLM read as 512, and --truncate error quoted 512).
  if (opt_.max_tokens > model_->hp().n_ctx_train)
    throw OptionError("max_tokens", std::to_string(opt_.max_tokens) + " is more than the " +
                                        std::to_string(model_->hp().n_ctx_train) +
                                        " positions of " +
                                        std::filesystem::path(model_path).filename().string());
  // sentence-transformers truncates at its max_seq_length (256 for all-MiniLM-L6-v2, whose
  // position table holds 512): the same default gives its embeddings for 257-512-token texts.
  const std::string key = "sentence_transformers.max_seq_length";
  if (model_->file().has(key)) {
    const int64_t v = model_->file().get_int(key);
    if (v > 0 && v < (int64_t(1) << 30)) trained_max_tokens_ = int(v);
  }
}

NativeEncoder::~NativeEncoder() = default;

std::string NativeEncoder::describe() const {
  std::string d = "native:" + std::filesystem::path(path_).filename().string();
  // Transformers' GELU gives other numbers than the default's: never the same run (as the
  // reader's description, native_reader.cpp).
  if (opt_.engine.numerics != Numerics::ggml)
    d += std::string("#numerics=") + numerics_name(opt_.engine.numerics);
  return d;
}

Pooling NativeEncoder::default_pooling() const { return model_->hp().pooling; }

int NativeEncoder::max_tokens() const {
  int n = model_->hp().n_ctx_train;
  if (trained_max_tokens_ > 0) n = std::min(n, trained_max_tokens_);
  return opt_.max_tokens > 0 ? opt_.max_tokens : n;
}

std::vector<Embedding> NativeEncoder::embed(const std::vector<std::string>& texts,
                                            std::optional<Pooling> pooling, bool normalize) {
  const Pooling p = pooling.value_or(default_pooling());
  if (p == Pooling::Rank)
    throw UsageError("embed", path_ +
                                  ": the model's pooling is rank (a classifier): use classify, "
                                  "or ask for none, mean, cls or last");
  std::vector<runtime::EncoderInput> ins;
  ins.reserve(texts.size());
  for (const std::string& t : texts)
    ins.push_back(runtime::encoder_input(*tok_, t, max_tokens(), opt_.truncate));
  std::lock_guard<std::mutex> lock(mu_);
  auto outs = enc_->encode(ins, {p, opt_.max_batch_tokens});
  const int E = model_->hp().n_embd;
  std::vector<Embedding> res(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    Embedding& e = res[i];
    e.n_tokens = outs[i].n_tokens;
    e.truncated = ins[i].truncated;
    e.n_embd = E;
    if (p == Pooling::None) {
      e.token_vectors = std::move(outs[i].states);
      e.pieces.reserve(ins[i].tokens.size());
      for (int32_t id : ins[i].tokens) e.pieces.push_back(tok_->token_text(id));
      if (normalize)
        for (int t = 0; t < e.n_tokens; ++t) {
          std::vector<float> row(e.token_vectors.begin() + t * E,
                                 e.token_vectors.begin() + (t + 1) * E);
          runtime::l2_normalize(row);
          std::copy(row.begin(), row.end(), e.token_vectors.begin() + t * E);
        }
    } else {
      e.vector = std::move(outs[i].pooled);
      if (normalize) runtime::l2_normalize(e.vector);
    }
  }
  return res;
}

std::vector<Classification> NativeEncoder::classify(const std::vector<TextPair>& pairs) {
  if (!model_->has_cls_out)
    throw Error("classify", path_ + ": the model has no classification head (cls.output)");
  std::vector<runtime::EncoderInput> ins;
  ins.reserve(pairs.size());
  for (const TextPair& pr : pairs)
    ins.push_back(pr.b ? runtime::encoder_pair_input(*tok_, pr.a, *pr.b, max_tokens(),
                                                     opt_.truncate, model_->hp().n_token_types)
                       : runtime::encoder_input(*tok_, pr.a, max_tokens(), opt_.truncate));
  return classify_inputs(ins);
}

std::vector<Classification> NativeEncoder::rerank(const std::string& query,
                                                  const std::vector<std::string>& documents) {
  if (!model_->has_cls_out)
    throw Error("classify", path_ + ": the model has no classification head (cls.output)");
  const std::vector<int32_t> q = runtime::encoder_pieces(*tok_, query);
  std::vector<runtime::EncoderInput> ins;
  ins.reserve(documents.size());
  for (const std::string& d : documents) {
    const std::vector<int32_t> pieces = runtime::encoder_pieces(*tok_, d);
    ins.push_back(runtime::encoder_pair_input(*tok_, q, pieces, max_tokens(), opt_.truncate,
                                              model_->hp().n_token_types));
  }
  return classify_inputs(ins);
}

std::vector<Classification> NativeEncoder::classify_inputs(
    const std::vector<runtime::EncoderInput>& ins) {
  std::lock_guard<std::mutex> lock(mu_);
  auto outs = enc_->encode(ins, {Pooling::Rank, opt_.max_batch_tokens});
  std::vector<Classification> res(ins.size());
  for (size_t i = 0; i < ins.size(); ++i) {
    Classification& c = res[i];
    c.labels = model_->labels;
    c.scores = std::move(outs[i].pooled);
    c.probs = softmax_probs(c.scores);
    c.n_tokens = outs[i].n_tokens;
    c.truncated = ins[i].truncated;
  }
  return res;
}

}  // namespace ragform::reader

#include "engine/model/bert.h"

#include <cmath>

#include "base/error.h"

namespace ragform::model {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::None:
      return "none";
    case Pooling::Mean:
      return "mean";
    case Pooling::Cls:
      return "cls";
    case Pooling::Last:
      return "last";
    case Pooling::Rank:
      return "rank";
  }
  return "?";
}

Pooling parse_pooling(const std::string& name) {
  for (Pooling p : {Pooling::None, Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Rank})
    if (name == pooling_name(p)) return p;
  throw Error("pooling", "unknown pooling '" + name + "' (none, mean, cls, last or rank)");
}

void layer_norm(const float* x, const float* w, const float* b, int n, float eps, float* out) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += double(x[i]);
  const float mean = float(sum / n);
  double sum2 = 0.0;
  for (int i = 0; i < n; ++i) {
    const float v = x[i] - mean;
    out[i] = v;
    sum2 += double(v * v);
  }
  const float scale = 1.0f / std::sqrt(float(sum2 / n) + eps);
  for (int i = 0; i < n; ++i) {
    float v = out[i] * scale;
    if (w) v *= w[i];
    if (b) v += b[i];
    out[i] = v;
  }
}

bool is_encoder_file(const gguf::File& file) { return file.architecture() == "bert"; }

std::unique_ptr<BertModel> BertModel::load(const std::string& path, const LoadOptions& opt) {
  return from_file(PackedWeights::open(path, opt), opt);
}

std::vector<float> BertModel::table(const std::string& name, int64_t n_in, int64_t* rows) {
  ops::WeightView w = mat(name, n_in, -1);
  *rows = w.n_out;
  return ops::dequantize_tensor(w);
}

namespace {

// The hyperparameters of a bert GGUF, each checked: required sizes positive, the embedding a
// multiple of the heads, a bidirectional encoder, a known pooling type.
BertHparams read_hparams(const gguf::File& f) {
  BertHparams hp;
  auto req = [&](const std::string& key) -> int {
    if (!f.has(key)) throw Error("model", f.path() + ": missing metadata key '" + key + "'");
    const int64_t v = f.get_int(key);
    if (v <= 0 || v > (1 << 30))
      throw Error("model",
                  f.path() + ": '" + key + "' = " + std::to_string(v) + " is out of range");
    return int(v);
  };
  hp.n_embd = req("bert.embedding_length");
  hp.n_layer = req("bert.block_count");
  hp.n_head = req("bert.attention.head_count");
  hp.n_ff = req("bert.feed_forward_length");
  if (hp.n_embd % hp.n_head != 0)
    throw Error("model", f.path() + ": embedding_length " + std::to_string(hp.n_embd) +
                             " is not a multiple of head_count " + std::to_string(hp.n_head));
  hp.head_dim = hp.n_embd / hp.n_head;
  hp.norm_eps = float(f.get_float("bert.attention.layer_norm_epsilon", 1e-12));
  if (f.get_bool("bert.attention.causal", false))
    throw Error("model", f.path() +
                             ": bert.attention.causal = true is not supported (BERT "
                             "encoders attend in both directions)");
  const int64_t pt = f.get_int("bert.pooling_type", 0);
  if (pt < 0 || pt > 4)
    throw Error("model", f.path() + ": bert.pooling_type " + std::to_string(pt) + " is unknown");
  hp.pooling = Pooling(int(pt));
  return hp;
}

}  // namespace

void BertModel::load_embeddings() {
  const gguf::File& f = *file_;
  const int64_t E = hp_.n_embd;
  tok_embd = mat("token_embd.weight", E, -1);
  hp_.n_vocab = int(tok_embd.n_out);
  if (f.has("tokenizer.ggml.tokens") &&
      int64_t(f.get_strings("tokenizer.ggml.tokens").size()) != tok_embd.n_out)
    throw Error("model", f.path() + ": token_embd has " + std::to_string(tok_embd.n_out) +
                             " rows but the vocabulary has " +
                             std::to_string(f.get_strings("tokenizer.ggml.tokens").size()) +
                             " tokens");
  int64_t rows = 0;
  pos_embd = table("position_embd.weight", E, &rows);
  hp_.n_ctx_train = int(rows);
  if (f.find_tensor("token_types.weight")) {
    type_embd = table("token_types.weight", E, &rows);
    hp_.n_token_types = int(rows);
  }
  embd_norm_w = vec("token_embd_norm.weight", E, true);
  embd_norm_b = vec("token_embd_norm.bias", E, true);
}

BertLayer BertModel::load_layer(int il) {
  const int64_t E = hp_.n_embd, FF = hp_.n_ff;
  const std::string p = "blk." + std::to_string(il) + ".";
  BertLayer L;
  L.wq = mat(p + "attn_q.weight", E, E);
  L.wk = mat(p + "attn_k.weight", E, E);
  L.wv = mat(p + "attn_v.weight", E, E);
  L.wo = mat(p + "attn_output.weight", E, E);
  L.bq = vec(p + "attn_q.bias", E, true);
  L.bk = vec(p + "attn_k.bias", E, true);
  L.bv = vec(p + "attn_v.bias", E, true);
  L.bo = vec(p + "attn_output.bias", E, true);
  L.attn_norm_w = vec(p + "attn_output_norm.weight", E, true);
  L.attn_norm_b = vec(p + "attn_output_norm.bias", E, true);
  L.w_up = mat(p + "ffn_up.weight", E, FF);
  L.b_up = vec(p + "ffn_up.bias", FF, true);
  L.w_down = mat(p + "ffn_down.weight", FF, E);
  L.b_down = vec(p + "ffn_down.bias", E, true);
  L.out_norm_w = vec(p + "layer_output_norm.weight", E, true);
  L.out_norm_b = vec(p + "layer_output_norm.bias", E, true);
  return L;
}

// The optional heads: cls (pooler dense) and cls.output (classifier, labels from the metadata or
// LABEL_i). Rank pooling needs the classifier.
void BertModel::load_heads() {
  const gguf::File& f = *file_;
  const int64_t E = hp_.n_embd;
  if (f.find_tensor("cls.weight")) {
    has_cls = true;
    cls = mat("cls.weight", E, E);
    cls_b = vec("cls.bias", E, false);
  }
  if (f.find_tensor("cls.output.weight")) {
    has_cls_out = true;
    cls_out = mat("cls.output.weight", E, -1);
    cls_out_b = vec("cls.output.bias", cls_out.n_out, false);
    if (f.has("bert.classifier.output_labels")) {
      for (auto s : f.get_strings("bert.classifier.output_labels")) labels.emplace_back(s);
      if (int64_t(labels.size()) != cls_out.n_out)
        throw Error("model", f.path() + ": bert.classifier.output_labels has " +
                                 std::to_string(labels.size()) + " labels but cls.output has " +
                                 std::to_string(cls_out.n_out) + " rows");
    } else {
      for (int64_t i = 0; i < cls_out.n_out; ++i) labels.push_back("LABEL_" + std::to_string(i));
    }
  }
  if (hp_.pooling == Pooling::Rank && !has_cls_out)
    throw Error("model",
                f.path() + ": pooling_type rank needs a classification head ('cls.output.weight')");
}

std::unique_ptr<BertModel> BertModel::from_file(std::shared_ptr<const gguf::File> file,
                                                const LoadOptions& opt) {
  std::unique_ptr<BertModel> m(new BertModel());
  m->file_ = std::move(file);
  m->policy_ = opt.matmul_policy();
  m->numerics_ = opt.numerics;
  m->tensors_ = TensorReader(m->file_, m->policy_);
  const gguf::File& f = *m->file_;
  const std::string arch = f.architecture();
  if (arch != "bert")
    throw Error("model", f.path() + ": architecture '" + arch +
                             "' is not an encoder (supported encoders: bert); use it as a reader "
                             "(generate, logits, ...)");
  m->hp_ = read_hparams(f);
  m->load_embeddings();
  m->layers.reserve(size_t(m->hp_.n_layer));
  for (int il = 0; il < m->hp_.n_layer; ++il) m->layers.push_back(m->load_layer(il));
  m->load_heads();
  std::vector<ops::WeightView*> mats = {&m->tok_embd};
  for (BertLayer& L : m->layers)
    for (ops::WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_up, &L.w_down}) mats.push_back(w);
  if (m->has_cls) mats.push_back(&m->cls);
  if (m->has_cls_out) mats.push_back(&m->cls_out);
  m->packed_.pack(mats, f);
  return m;
}

}  // namespace ragform::model

#include "engine/model/model.h"

#include "base/error.h"
#include "engine/model/bert.h"

namespace ragform::model {

namespace {
std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}
}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, const EngineOptions& opt) {
  // By default weights go to huge-page memory where there is room: decode streams all of them
  // every token.
  std::shared_ptr<const gguf::File> f = gguf::File::open(path, opt.load);
  return from_file(std::move(f), opt);
}

const float* Model::vec(const std::string& name, int64_t n, bool required) {
  const gguf::TensorInfo* t = file_->find_tensor(name);
  if (!t) {
    if (required) throw Error("model", file_->path() + ": missing tensor '" + name + "'");
    return nullptr;
  }
  if (t->n_elements() != n)
    throw Error("model", file_->path() + ": tensor '" + name + "' has shape " + shape_str(t->ne) +
                             ", expected [" + std::to_string(n) + "]");
  if (t->type == gguf::TensorType::F32) return reinterpret_cast<const float*>(t->data);
  owned_.emplace_back(size_t(n));
  ops::dequantize_row(t->type, t->data, owned_.back().data(), n);
  return owned_.back().data();
}

ops::WeightView Model::mat(const std::string& name, int64_t n_in, int64_t n_out) {
  const gguf::TensorInfo& t = file_->tensor(name);
  if (t.ne.size() != 2 || t.ne[0] != n_in || t.ne[1] != n_out)
    throw Error("model", file_->path() + ": tensor '" + name + "' has shape " + shape_str(t.ne) +
                             ", expected [" + std::to_string(n_in) + ", " + std::to_string(n_out) +
                             "]");
  if (!ops::is_weight_type(t.type))
    throw Error("model", file_->path() + ": tensor '" + name + "' has type " +
                             gguf::type_name(t.type) + ", which cannot be a weight matrix");
  return ops::WeightView{t.type, t.data, n_in, n_out, policy_};
}

std::unique_ptr<Model> Model::from_file(std::shared_ptr<const gguf::File> file,
                                        const EngineOptions& opt) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  m->policy_ = opt.matmul_policy();
  const gguf::File& f = *m->file_;
  std::string arch = f.architecture();
  if (arch.empty())
    throw Error("model", f.path() + ": missing metadata key 'general.architecture'");
  if (is_encoder_file(f))
    throw Error("model", f.path() + ": '" + arch +
                             "' is an encoder, not a reader: use it with `ragform embed`, "
                             "`ragform classify` or an --encoder-model / --nli-model flag");
  m->arch_ = &find_arch(arch);
  m->hp_ = Hparams::from_gguf(f, m->arch_->rope_type);
  Hparams& hp = m->hp_;
  const ArchSpec& spec = *m->arch_;

  const gguf::TensorInfo& te = f.tensor("token_embd.weight");
  if (te.ne.size() != 2 || te.ne[0] != hp.n_embd)
    throw Error("model", f.path() + ": tensor 'token_embd.weight' has shape " + shape_str(te.ne) +
                             ", expected [" + std::to_string(hp.n_embd) + ", n_vocab]");
  if (hp.n_vocab == 0) hp.n_vocab = int(te.ne[1]);
  if (te.ne[1] != hp.n_vocab)
    throw Error("model", f.path() + ": token_embd has " + std::to_string(te.ne[1]) +
                             " rows but the vocabulary has " + std::to_string(hp.n_vocab) +
                             " tokens");
  m->tok_embd = m->mat("token_embd.weight", hp.n_embd, hp.n_vocab);
  m->output_norm = m->vec("output_norm.weight", hp.n_embd, true);
  if (f.find_tensor("output.weight")) {
    m->output = m->mat("output.weight", hp.n_embd, hp.n_vocab);
  } else if (spec.output_may_be_tied) {
    m->output = m->tok_embd;
    m->tied_output = true;
  } else {
    throw Error("model", f.path() + ": missing tensor 'output.weight'");
  }

  const int64_t E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), FF = hp.n_ff;
  m->layers.resize(size_t(hp.n_layer));
  for (int il = 0; il < hp.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    LayerWeights& L = m->layers[size_t(il)];
    L.attn_norm = m->vec(p + "attn_norm.weight", E, true);
    L.wq = m->mat(p + "attn_q.weight", E, Q);
    L.wk = m->mat(p + "attn_k.weight", E, KV);
    L.wv = m->mat(p + "attn_v.weight", E, KV);
    L.wo = m->mat(p + "attn_output.weight", Q, E);
    if (spec.qkv_bias) {
      L.bq = m->vec(p + "attn_q.bias", Q, true);
      L.bk = m->vec(p + "attn_k.bias", KV, true);
      L.bv = m->vec(p + "attn_v.bias", KV, true);
    }
    if (spec.qk_norm) {
      L.q_norm = m->vec(p + "attn_q_norm.weight", hp.head_dim, true);
      L.k_norm = m->vec(p + "attn_k_norm.weight", hp.head_dim, true);
    }
    L.ffn_norm = m->vec(p + "ffn_norm.weight", E, true);
    L.w_gate = m->mat(p + "ffn_gate.weight", E, FF);
    L.w_up = m->mat(p + "ffn_up.weight", E, FF);
    L.w_down = m->mat(p + "ffn_down.weight", FF, E);
  }
  return m;
}

}  // namespace ragform::model

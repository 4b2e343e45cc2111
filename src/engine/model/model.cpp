#include "engine/model/model.h"

#include "base/error.h"
#include "engine/model/bert.h"

namespace ragform::model {

namespace {
// Rows [r0, r0 + n) of a weight matrix: rows are contiguous, so a slice of a fused matrix is a
// matrix of its own (phi3's attn_qkv and ffn_up).
ops::WeightView row_slice(const ops::WeightView& w, int64_t r0, int64_t n) {
  return ops::WeightView{w.type, w.data + size_t(r0) * w.row_bytes(), w.n_in, n, w.policy};
}

// Tensors a file may carry that no architecture needs and that change nothing when left unread:
// blk.N.attn_rot_embd, the rotary inverse frequencies some old converters stored (the engine
// computes them from rope.freq_base). Loading warns about them and goes on.
bool harmless_tensor(const std::string& name) {
  const std::string suffix = ".attn_rot_embd";
  return name.rfind("blk.", 0) == 0 && name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Tensors ragform knows and refuses, with the reason.
std::string refused_tensor_reason(const std::string& name) {
  if (name == "rope_factors_long.weight" || name == "rope_factors_short.weight")
    return "LongRoPE frequency factors (Phi-3.5 / Phi-3 128k) are not supported";
  return "";
}
}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& opt) {
  // By default weights go to huge-page memory where there is room: decode streams all of them
  // every token.
  // Huge-page memory where there is room (decode streams every weight per token), except for
  // files of float weights, which are mapped and packed (PackedWeights::open).
  std::shared_ptr<const gguf::File> f = PackedWeights::open(path, opt);
  return from_file(std::move(f), opt);
}

std::unique_ptr<Model> Model::from_file(std::shared_ptr<const gguf::File> file,
                                        const LoadOptions& opt) {
  std::unique_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  m->policy_ = opt.matmul_policy();
  m->numerics_ = opt.numerics;
  m->tensors_ = TensorReader(m->file_, m->policy_);
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
  if (spec.read_hparams) spec.read_hparams(f, hp, m->warnings_);

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

  if (spec.rope_freqs && f.find_tensor("rope_freqs.weight"))
    m->rope_freqs = m->vec("rope_freqs.weight", hp.n_rot / 2, true);
  m->layers.resize(size_t(hp.n_layer));
  for (int il = 0; il < hp.n_layer; ++il) m->load_layer(il);
  m->check_all_tensors_used();
  // The token embedding too: get_rows reads a packed matrix from its panels, so every F16/BF16
  // byte of the file lives in the panels alone (a tied output shares them).
  std::vector<ops::WeightView*> mats = {&m->output, &m->tok_embd};
  for (LayerWeights& L : m->layers)
    for (ops::WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      if (w->data) mats.push_back(w);
  m->packed_.pack(mats, f);
  return m;
}

void Model::load_layer(int il) {
  const Hparams& hp = hp_;
  const ArchSpec& spec = *arch_;
  const int64_t E = hp.n_embd, Q = hp.q_dim(), KV = hp.kv_dim(), FF = hp.n_ff;
  const std::string p = "blk." + std::to_string(il) + ".";
  LayerWeights& L = layers[size_t(il)];
  L.attn_norm = vec(p + "attn_norm.weight", E, true);
  if (spec.fused_qkv) {
    const ops::WeightView qkv = mat(p + "attn_qkv.weight", E, Q + 2 * KV);
    L.wq = row_slice(qkv, 0, Q);
    L.wk = row_slice(qkv, Q, KV);
    L.wv = row_slice(qkv, Q + KV, KV);
  } else {
    L.wq = mat(p + "attn_q.weight", E, Q);
    L.wk = mat(p + "attn_k.weight", E, KV);
    L.wv = mat(p + "attn_v.weight", E, KV);
  }
  L.wo = mat(p + "attn_output.weight", Q, E);
  if (spec.qkv_bias) {
    L.bq = vec(p + "attn_q.bias", Q, true);
    L.bk = vec(p + "attn_k.bias", KV, true);
    L.bv = vec(p + "attn_v.bias", KV, true);
  }
  if (spec.qk_norm) {
    L.q_norm = vec(p + "attn_q_norm.weight", hp.head_dim, true);
    L.k_norm = vec(p + "attn_k_norm.weight", hp.head_dim, true);
  }
  if (spec.post_norms) {
    L.attn_post_norm = vec(p + "post_attention_norm.weight", E, true);
    L.ffn_post_norm = vec(p + "post_ffw_norm.weight", E, true);
  }
  L.ffn_norm = vec(p + "ffn_norm.weight", E, true);
  if (spec.fused_gate_up) {
    const ops::WeightView gate_up = mat(p + "ffn_up.weight", E, 2 * FF);
    L.w_gate = row_slice(gate_up, 0, FF);
    L.w_up = row_slice(gate_up, FF, FF);
  } else {
    L.w_gate = mat(p + "ffn_gate.weight", E, FF);
    L.w_up = mat(p + "ffn_up.weight", E, FF);
  }
  L.w_down = mat(p + "ffn_down.weight", FF, E);
}

void Model::check_all_tensors_used() {
  int n_harmless = 0;
  std::string first_harmless;
  for (const gguf::TensorInfo& t : file_->tensors()) {
    if (tensors_.used(t.name)) continue;
    if (std::string why = refused_tensor_reason(t.name); !why.empty())
      throw Error("model", file_->path() + ": tensor '" + t.name + "': " + why);
    if (harmless_tensor(t.name)) {
      if (n_harmless++ == 0) first_harmless = t.name;
      continue;
    }
    throw Error("model", file_->path() + ": tensor '" + t.name + "' is not part of the " +
                             arch_->name +
                             " architecture as ragform computes it; refusing to run without it "
                             "(the logits would be wrong)");
  }
  if (n_harmless > 0)
    warnings_.push_back(file_->path() + ": " + std::to_string(n_harmless) +
                        " unused tensor(s) ignored (" + first_harmless +
                        (n_harmless > 1 ? ", ..." : "") +
                        "): rotary inverse frequencies the engine computes itself");
}

}  // namespace ragform::model

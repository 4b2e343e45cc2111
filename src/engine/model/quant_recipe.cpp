// llama-quantize's per-tensor recipe (quant_recipe.h): the scheme table, the name categories, the
// mixtures' bumps and the block-size fallback.
#include "engine/model/quant_recipe.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>

#include "base/error.h"
#include "base/excerpt.h"

namespace ragform::model {

using gguf::TensorType;

namespace {

struct SchemeRow {
  const char* name;
  TensorType base;
  Mixture mix;
  uint32_t file_type;  // llama_ftype (llama.h)
};

// llama_ftype numbers (llama.h): plain K types are written as their _S ftype, as
// `llama-quantize --pure` does (a pure Q3_K file is ftype Q3_K_S).
constexpr SchemeRow kSchemes[] = {
    {"f32", TensorType::F32, Mixture::Pure, 0},
    {"f16", TensorType::F16, Mixture::Pure, 1},
    {"bf16", TensorType::BF16, Mixture::Pure, 32},
    {"q8_0", TensorType::Q8_0, Mixture::Pure, 7},
    {"q4_0", TensorType::Q4_0, Mixture::Pure, 2},
    {"q4_1", TensorType::Q4_1, Mixture::Pure, 3},
    {"q5_0", TensorType::Q5_0, Mixture::Pure, 8},
    {"q5_1", TensorType::Q5_1, Mixture::Pure, 9},
    {"q2_k", TensorType::Q2_K, Mixture::Pure, 10},
    {"q3_k", TensorType::Q3_K, Mixture::Pure, 11},
    {"q4_k", TensorType::Q4_K, Mixture::Pure, 14},
    {"q5_k", TensorType::Q5_K, Mixture::Pure, 16},
    {"q6_k", TensorType::Q6_K, Mixture::Pure, 18},
    {"q3_k_m", TensorType::Q3_K, Mixture::Q3_K_M, 12},
    {"q4_k_s", TensorType::Q4_K, Mixture::Q4_K_S, 14},
    {"q4_k_m", TensorType::Q4_K, Mixture::Q4_K_M, 15},
    {"q5_k_s", TensorType::Q5_K, Mixture::Q5_K_S, 16},
    {"q5_k_m", TensorType::Q5_K, Mixture::Q5_K_M, 17},
};

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int block_size(TensorType t) { return gguf::type_info(t).block_size; }

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// The first and last eighth of the layers, and every third one in between.
bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool attn_v_like(TensorRole r) {
  return r == TensorRole::AttnV || r == TensorRole::AttnQKV || r == TensorRole::AttnKvB;
}

// A row length that is not a multiple of the chosen block: the nearest 32-block type of about
// the same size, else F16 (no block at all).
TensorType fallback(TensorType t, int64_t n_in) {
  if (n_in % block_size(t) == 0) return t;
  TensorType r = TensorType::F16;
  switch (t) {
    case TensorType::Q2_K:
    case TensorType::Q3_K:
      r = TensorType::Q4_0;
      break;
    case TensorType::Q4_K:
      r = TensorType::Q5_0;
      break;
    case TensorType::Q5_K:
      r = TensorType::Q5_1;
      break;
    case TensorType::Q6_K:
      r = TensorType::Q8_0;
      break;
    default:
      break;  // a 32-block type that does not fit: F16, as llama.cpp's "unusual shape" case
  }
  return n_in % block_size(r) == 0 ? r : TensorType::F16;
}

// The layer of "blk.N.*", or -1.
int layer_of(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

// ggml_n_dims: the dimensions up to the last one larger than 1.
int n_dims(const std::vector<int64_t>& ne) {
  int n = 1;
  for (size_t d = 1; d < ne.size(); ++d)
    if (ne[d] > 1) n = int(d) + 1;
  return n;
}

}  // namespace

std::vector<std::string> scheme_names() {
  std::vector<std::string> v;
  for (const auto& r : kSchemes) v.push_back(r.name);
  return v;
}

WeightScheme parse_scheme(const std::string& name, const std::string& what) {
  const std::string n = lower(name);
  for (const auto& r : kSchemes)
    if (n == r.name) return {r.name, r.base, r.mix, r.file_type};
  std::string list;
  for (const auto& r : kSchemes) list += (list.empty() ? "" : ", ") + std::string(r.name);
  throw UsageError(what, "unknown --type '" + excerpt(name) + "' (accepted: " + list + ")");
}

TensorRole role_of_name(std::string_view name) {
  if (name == "output.weight") return TensorRole::Output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight")
    return TensorRole::TokenEmbd;
  // Substring tests in llama.cpp's order: "attn_qkv.weight" before "attn_v.weight", which a fused
  // tensor's name does not contain anyway, and the ffn names without ".weight" so that expert
  // tensors (ffn_up_exps) count too.
  static const std::pair<std::string_view, TensorRole> kParts[] = {
      {"attn_qkv.weight", TensorRole::AttnQKV},
      {"attn_kv_b.weight", TensorRole::AttnKvB},
      {"attn_v.weight", TensorRole::AttnV},
      {"attn_k.weight", TensorRole::AttnK},
      {"attn_q.weight", TensorRole::AttnQ},
      {"attn_output.weight", TensorRole::AttnOutput},
      {"ffn_up", TensorRole::FfnUp},
      {"ffn_gate", TensorRole::FfnGate},
      {"ffn_down", TensorRole::FfnDown},
  };
  for (const auto& [part, role] : kParts)
    if (contains(name, part)) return role;
  return TensorRole::Other;
}

bool is_quantizable(std::string_view name, const std::vector<int64_t>& ne) {
  if (n_dims(ne) < 2) return false;
  if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  if (contains(name, "_norm.weight")) return false;
  // Tensors llama-quantize keeps as they are, although 2-D: BERT's learned positions and token
  // types (small, and added to every embedding); MoE router gates and token->expert tables;
  // tiny per-layer tensors of Gemma 3n (altup, laurel, per_layer_model_proj); Mamba/RWKV/T5 and
  // multimodal pieces (listed so that a file of those architectures is copied as llama.cpp does,
  // though the engine runs none of them).
  static const std::string_view kExact[] = {"position_embd.weight", "token_types.weight"};
  for (auto e : kExact)
    if (name == e) return false;
  static const std::string_view kParts[] = {"ffn_gate_inp.weight",
                                            "ffn_gate_tid2eid.weight",
                                            "altup",
                                            "laurel",
                                            "per_layer_model_proj",
                                            "ssm_conv1d",
                                            "shortconv.conv.weight",
                                            "indexer.k_proj.weight",
                                            "indexer.q_proj.weight",
                                            "time_mix_first.weight",
                                            "time_mix_w0.weight",
                                            "time_mix_w1.weight",
                                            "time_mix_w2.weight",
                                            "time_mix_v0.weight",
                                            "time_mix_v1.weight",
                                            "time_mix_v2.weight",
                                            "time_mix_a0.weight",
                                            "time_mix_a1.weight",
                                            "time_mix_a2.weight",
                                            "time_mix_g1.weight",
                                            "time_mix_g2.weight",
                                            "time_mix_decay_w1.weight",
                                            "time_mix_decay_w2.weight",
                                            "time_mix_lerp_fused.weight",
                                            "attn_rel_b.weight",
                                            ".position_embd",
                                            "sam.pos_embd",
                                            "sam.neck.",
                                            "sam.net_",
                                            ".rel_pos",
                                            ".patch_embd",
                                            ".patch_merger",
                                            "a.rvq.codebook",
                                            "mm.a.code_embd"};
  for (auto p : kParts)
    if (contains(name, p)) return false;
  return true;
}

TensorType choose_tensor_type(const WeightScheme& w, TensorRole role, int i, int n, int64_t n_in,
                              bool tied, bool lift_attn_v) {
  if (role == TensorRole::Norm || role == TensorRole::Bias || role == TensorRole::RopeFreqs)
    return TensorType::F32;
  TensorType t = w.base;
  // Float types have no block to fall back from and no mixture.
  if (block_size(t) == 1) return t;
  const Mixture m = w.mix;
  if (m != Mixture::Pure) {
    const bool more = use_more_bits(i, n);
    const bool km = m == Mixture::Q4_K_M || m == Mixture::Q5_K_M;
    if (role == TensorRole::Output || (tied && role == TensorRole::TokenEmbd)) {
      // The row is tested against the base type's block: Q8_0 when it does not fit.
      t = n_in % block_size(w.base) != 0 ? TensorType::Q8_0 : TensorType::Q6_K;
    } else if (attn_v_like(role)) {
      if (km && more)
        t = TensorType::Q6_K;
      else if (m == Mixture::Q4_K_S && i < 4)
        t = TensorType::Q5_K;
      else if (m == Mixture::Q3_K_M)
        t = i < 2 ? TensorType::Q5_K : TensorType::Q4_K;
      if (lift_attn_v && (t == TensorType::Q3_K || t == TensorType::Q4_K)) t = TensorType::Q5_K;
    } else if (role == TensorRole::FfnDown) {
      if (km && more)
        t = TensorType::Q6_K;
      else if (m == Mixture::Q4_K_S && i < n / 8)
        t = TensorType::Q5_K;
      else if (m == Mixture::Q3_K_M)
        t = i < n / 16 ? TensorType::Q5_K : TensorType::Q4_K;
    } else if (role == TensorRole::AttnOutput) {
      if (m == Mixture::Q3_K_M) t = TensorType::Q4_K;
    }
  }
  return fallback(t, n_in);
}

RecipeFacts recipe_facts(const gguf::File& f) {
  RecipeFacts r;
  r.arch = f.architecture();
  const std::string a = r.arch + ".";
  r.n_layer = int(f.get_int(a + "block_count", 0));
  r.n_expert = int(f.get_int(a + "expert_count", 0));
  // llama.cpp sizes a model from its hyper-parameters (llama-model.cpp / models/<arch>.cpp):
  // 80 layers is "70B" for llama when some heads share K/V (else 65B) and for qwen2.
  const int64_t n_head = f.get_int(a + "attention.head_count", 0);
  const int64_t n_head_kv = f.get_int(a + "attention.head_count_kv", n_head);
  if (r.n_layer == 80 && r.n_expert <= 1)
    r.lift_attn_v = (r.arch == "llama" && n_head != n_head_kv) || r.arch == "qwen2";
  return r;
}

std::vector<TensorType> plan_types(const std::vector<gguf::TensorInfo>& tensors,
                                   const RecipeFacts& facts, const WeightScheme& w,
                                   const std::string& what) {
  if (w.mix != Mixture::Pure && (facts.n_expert > 1 || facts.arch == "falcon"))
    throw UsageError(what, "--type " + w.name + ": llama.cpp's mixture rules for " +
                               (facts.n_expert > 1 ? "mixture-of-experts" : facts.arch) +
                               " models are not implemented (use a plain type such as " +
                               gguf::type_name(w.base) + ")");
  // llama.cpp walks the tensors sorted by layer (non-layer tensors first), then by name, and
  // counts attn_v-like and ffn_down tensors as it goes.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::vector<int> layer(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) layer[k] = layer_of(tensors[k].name);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (layer[a] != layer[b]) return layer[a] < layer[b];
    return tensors[a].name < tensors[b].name;
  });
  bool tied = true;
  int n_attn_v = 0, n_layer = facts.n_layer;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const TensorRole r = role_of_name(tensors[k].name);
    if (r == TensorRole::Output) tied = false;
    if (attn_v_like(r)) ++n_attn_v;
    if (facts.n_layer <= 0) n_layer = std::max(n_layer, layer[k] + 1);
  }
  std::vector<TensorType> out(tensors.size());
  int i_attn_v = 0, i_ffn_down = 0;
  for (size_t k : order) {
    const gguf::TensorInfo& t = tensors[k];
    if (!is_quantizable(t.name, t.ne)) {
      out[k] = t.type;
      continue;
    }
    const TensorRole r = role_of_name(t.name);
    int i = 0, n = 0;
    if (attn_v_like(r)) {
      i = i_attn_v++;
      n = n_attn_v;
    } else if (r == TensorRole::FfnDown) {
      i = i_ffn_down++;
      n = n_layer;
    }
    out[k] = choose_tensor_type(w, r, i, n, t.ne[0], tied, facts.lift_attn_v);
  }
  return out;
}

}  // namespace ragform::model

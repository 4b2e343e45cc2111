// Random-weight models of real shapes: shapes, weight schemes, llama-quantize's per-tensor type
// rules and the synthetic vocabulary (the streaming writer is in random_model_write.cpp).
#include "engine/model/random_model.h"

#include <cctype>
#include <cmath>
#include <functional>

#include "base/error.h"
#include "engine/model/arch.h"

namespace ragform::model {

using gguf::TensorType;

const std::vector<ModelShape>& model_shapes() {
  // name, arch, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx, rope base,
  // rms eps, tied. The real ones copy the published config.json of each model.
  // The last two fields: gemma3's sliding window, Llama 3.1 rope_freqs.
  static const std::vector<ModelShape> shapes = {
      {"tiny", "llama", 64, 2, 4, 2, 0, 192, 512, 512, 10000.0f, 1e-5f, false},
      {"small", "llama", 256, 4, 4, 2, 0, 768, 1024, 2048, 10000.0f, 1e-5f, false},
      {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 0, 4864, 151936, 32768, 1e6f, 1e-6f, true},
      {"qwen2.5-1.5b", "qwen2", 1536, 28, 12, 2, 0, 8960, 151936, 32768, 1e6f, 1e-6f, true},
      {"llama-3.2-1b", "llama", 2048, 16, 32, 8, 0, 8192, 128256, 131072, 5e5f, 1e-5f, true, 0,
       true},
      {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1e-6f, true},
      {"gemma-3-1b", "gemma3", 1152, 26, 4, 1, 256, 6912, 262144, 32768, 1e6f, 1e-6f, true, 512},
      {"phi-3-mini", "phi3", 3072, 32, 32, 32, 0, 8192, 32064, 4096, 10000.0f, 1e-5f, false},
  };
  return shapes;
}

const ModelShape& find_shape(const std::string& name) {
  std::string list;
  for (const auto& s : model_shapes()) {
    if (s.name == name) return s;
    list += (list.empty() ? "" : ", ") + s.name;
  }
  throw UsageError("make-test-model", "unknown shape '" + name + "' (known: " + list + ")");
}

namespace {

using AddTensor = std::function<void(const std::string&, std::vector<int64_t>, TensorRole, int)>;

// The decoder-only architectures of arch.h: llama's tensors plus what the ArchSpec adds (biases,
// q/k norms, post-norms) or fuses (phi3's attn_qkv and gate+up ffn_up).
void plan_decoder(const ModelShape& s, const std::string& arch, const AddTensor& add) {
  const ArchSpec& spec = find_arch(arch);
  const int64_t e = s.n_embd, hd = s.head_size(), q = int64_t(s.n_head) * hd,
                kv = int64_t(s.n_head_kv) * hd, ff = s.n_ff, nv = s.n_vocab;
  add("token_embd.weight", {e, nv}, TensorRole::TokenEmbd, -1);
  if (spec.rope_freqs && s.rope_freqs)
    add("rope_freqs.weight", {hd / 2}, TensorRole::RopeFreqs, -1);
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", {e}, TensorRole::Norm, il);
    if (spec.fused_qkv) {
      add(p + "attn_qkv.weight", {e, q + 2 * kv}, TensorRole::AttnQKV, il);
    } else {
      add(p + "attn_q.weight", {e, q}, TensorRole::AttnQ, il);
      if (spec.qkv_bias) add(p + "attn_q.bias", {q}, TensorRole::Bias, il);
      add(p + "attn_k.weight", {e, kv}, TensorRole::AttnK, il);
      if (spec.qkv_bias) add(p + "attn_k.bias", {kv}, TensorRole::Bias, il);
      add(p + "attn_v.weight", {e, kv}, TensorRole::AttnV, il);
      if (spec.qkv_bias) add(p + "attn_v.bias", {kv}, TensorRole::Bias, il);
    }
    if (spec.qk_norm) {
      add(p + "attn_q_norm.weight", {hd}, TensorRole::Norm, il);
      add(p + "attn_k_norm.weight", {hd}, TensorRole::Norm, il);
    }
    add(p + "attn_output.weight", {q, e}, TensorRole::AttnOutput, il);
    if (spec.post_norms) add(p + "post_attention_norm.weight", {e}, TensorRole::Norm, il);
    add(p + "ffn_norm.weight", {e}, TensorRole::Norm, il);
    if (spec.fused_gate_up) {
      add(p + "ffn_up.weight", {e, 2 * ff}, TensorRole::FfnUp, il);
    } else {
      add(p + "ffn_gate.weight", {e, ff}, TensorRole::FfnGate, il);
      add(p + "ffn_up.weight", {e, ff}, TensorRole::FfnUp, il);
    }
    add(p + "ffn_down.weight", {ff, e}, TensorRole::FfnDown, il);
    if (spec.post_norms) add(p + "post_ffw_norm.weight", {e}, TensorRole::Norm, il);
  }
  add("output_norm.weight", {e}, TensorRole::Norm, -1);
  if (!s.tied) add("output.weight", {e, nv}, TensorRole::Output, -1);
}

// The architectures make-test-model writes: one row each (name, tensor plan).
struct ArchPlan {
  const char* arch;
  void (*plan)(const ModelShape&, const std::string&, const AddTensor&);
};
const ArchPlan kArchPlans[] = {
    {"llama", &plan_decoder},  {"qwen2", &plan_decoder}, {"qwen3", &plan_decoder},
    {"gemma3", &plan_decoder}, {"phi3", &plan_decoder},
};

}  // namespace

std::vector<std::string> random_model_archs() {
  std::vector<std::string> v;
  for (const auto& r : kArchPlans) v.push_back(r.arch);
  return v;
}

std::vector<TensorPlan> plan_tensors(const ModelShape& s, const std::string& arch,
                                     const WeightScheme& w) {
  const ArchPlan* row = nullptr;
  for (const auto& r : kArchPlans)
    if (arch == r.arch) row = &r;
  if (!row) {
    std::string list;
    for (const auto& a : random_model_archs()) list += (list.empty() ? "" : ", ") + a;
    throw UsageError("make-test-model", "unknown --arch '" + arch + "' (supported: " + list + ")");
  }
  std::vector<TensorPlan> out;
  row->plan(
      s, arch, [&](const std::string& name, std::vector<int64_t> ne, TensorRole role, int layer) {
        const TensorType t = ne.size() == 1
                                 ? TensorType::F32
                                 : choose_tensor_type(w, role, layer, s.n_layer, ne[0], s.tied);
        out.push_back({name, std::move(ne), role, layer, t});
      });
  return out;
}

std::vector<float> llama3_rope_factors(int n_rot, float base, float factor, float low_freq_factor,
                                       float high_freq_factor, int original_ctx) {
  const double low_wavelen = double(original_ctx) / low_freq_factor;
  const double high_wavelen = double(original_ctx) / high_freq_factor;
  std::vector<float> f;
  for (int i = 0; i < n_rot; i += 2) {
    const double freq = std::pow(double(base), -double(i) / n_rot);
    const double wavelen = 2.0 * M_PI / freq;
    if (wavelen < high_wavelen) {
      f.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      f.push_back(factor);
    } else {
      const double sm =
          (original_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f.push_back(float(1.0 / ((1.0 - sm) / factor + sm)));
    }
  }
  return f;
}

SyntheticVocab synthetic_spm_vocab(int n) {
  if (n < 300)
    throw UsageError("make-test-model",
                     "a synthetic vocabulary needs at least 300 tokens, not " + std::to_string(n));
  SyntheticVocab v;
  auto push = [&](std::string text, float score, int32_t type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  push("<unk>", 0.0f, 2);
  push("<s>", 0.0f, 3);
  push("</s>", 0.0f, 3);
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) push(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0.0f, 6);
  const std::string space = "\xE2\x96\x81";  // U+2581, SentencePiece's escaped space
  int k = 0;
  auto piece = [&](std::string text) {
    if (int(v.tokens.size()) < n) push(std::move(text), -float(k++), 1);
  };
  piece(space);
  for (char c = 0x21; c < 0x7F; ++c) piece(std::string(1, c));
  // Letter strings in frequency order, shortest first: "▁e", "▁t", ..., then "▁ee", "ee", ...
  static const std::string letters = "etaoinshrdlucmfwypvbgkjqxz";
  for (int len = 1; int(v.tokens.size()) < n; ++len) {
    std::vector<int> idx(size_t(len), 0);
    while (int(v.tokens.size()) < n) {
      std::string s;
      for (int i : idx) s += letters[size_t(i)];
      piece(space + s);
      if (len > 1) piece(s);  // single letters are already in the ASCII set
      int pos = len - 1;      // odometer increment
      while (pos >= 0 && ++idx[size_t(pos)] == int(letters.size())) idx[size_t(pos--)] = 0;
      if (pos < 0) break;
    }
  }
  return v;
}

}  // namespace ragform::model

#include "engine/model/hparams.h"

#include <cmath>

#include "base/error.h"

namespace ragform::model {

float Hparams::attention_scale() const {
  return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(float(head_dim));
}

Hparams Hparams::from_gguf(const gguf::File& f, RopeType rope_type) {
  Hparams h;
  h.arch = f.architecture();
  const std::string a = h.arch + ".";
  auto req = [&](const std::string& key) -> int {
    if (!f.has(key)) throw Error("model", f.path() + ": missing metadata key '" + key + "'");
    int64_t v = f.get_int(key);
    if (v <= 0 || v > (1 << 30))
      throw Error("model",
                  f.path() + ": '" + key + "' = " + std::to_string(v) + " is out of range");
    return int(v);
  };
  h.n_embd = req(a + "embedding_length");
  h.n_layer = req(a + "block_count");
  h.n_head = req(a + "attention.head_count");
  h.n_head_kv =
      f.has(a + "attention.head_count_kv") ? req(a + "attention.head_count_kv") : h.n_head;
  h.n_ff = req(a + "feed_forward_length");
  h.n_ctx_train = f.has(a + "context_length") ? req(a + "context_length") : 2048;
  h.head_dim =
      f.has(a + "attention.key_length") ? req(a + "attention.key_length") : h.n_embd / h.n_head;
  h.n_rot = f.has(a + "rope.dimension_count") ? req(a + "rope.dimension_count") : h.head_dim;
  h.rope_base = float(f.get_float(a + "rope.freq_base", 10000.0));
  double scale = f.get_float(a + "rope.scale_linear", 0.0);
  // llama.cpp's rope.scaling.type values: none, linear, yarn, longrope. Only the first two are
  // computed here; the others change every angle (YaRN ramps, LongRoPE factor tables), so a file
  // asking for them is refused rather than run with plain RoPE.
  const std::string scaling = f.get_string(a + "rope.scaling.type", "none");
  if (scaling != "none" && scaling != "linear")
    throw Error("model", f.path() + ": rope.scaling.type '" + scaling +
                             "' is not supported (none and linear are); this long-context variant "
                             "would give wrong logits with plain RoPE");
  if (scale == 0.0 && scaling == "linear") scale = f.get_float(a + "rope.scaling.factor", 0.0);
  h.rope_scale = scale > 0 ? float(scale) : 1.0f;
  h.rms_eps = float(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  h.rope_type = rope_type;
  if (h.n_head % h.n_head_kv != 0)
    throw Error("model", f.path() + ": head_count " + std::to_string(h.n_head) +
                             " is not a multiple of head_count_kv " + std::to_string(h.n_head_kv));
  if (h.n_rot > h.head_dim || h.n_rot % 2 != 0)
    throw Error("model", f.path() + ": rope.dimension_count " + std::to_string(h.n_rot) +
                             " does not fit head_dim " + std::to_string(h.head_dim));
  if (f.has("tokenizer.ggml.tokens"))
    h.n_vocab = int(f.get_strings("tokenizer.ggml.tokens").size());
  return h;
}

}  // namespace ragform::model

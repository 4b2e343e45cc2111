// Hyper-parameters of a decoder-only transformer, read from GGUF metadata with llama.cpp's key
// names (`<arch>.embedding_length`, ...). Shapes of every weight follow from these.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"

namespace ragform::model {

enum class RopeType {
  Norm,
  Neox
};  // NORM rotates (x[2i], x[2i+1]); NEOX rotates (x[i], x[i+n_rot/2])

struct Hparams {
  std::string arch;
  int n_embd = 0;  // model width
  int n_layer = 0;
  int n_head = 0;     // query heads
  int n_head_kv = 0;  // key/value heads (GQA: n_head % n_head_kv == 0)
  int head_dim = 0;   // n_embd / n_head unless attention.key_length says otherwise
  int n_ff = 0;       // feed-forward width
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_rot = 0;  // rotated dimensions per head (rope.dimension_count, default head_dim)
  float rope_base = 10000.0f;
  float rope_scale = 1.0f;  // linear scaling factor (rope.scale_linear / rope.scaling.factor)
  RopeType rope_type = RopeType::Norm;
  float rms_eps = 1e-5f;
  // Attention: scores are scale * q.k; 0 here means 1/sqrt(head_dim) (every architecture so far
  // except Gemma 3 27B, whose scale is 1/sqrt(n_embd/n_head)).
  float attn_scale = 0.0f;
  // Sliding-window attention (gemma3): a layer with swa_layers[il] != 0 sees only the n_swa most
  // recent keys (llama.cpp's LLAMA_SWA_TYPE_STANDARD: key j is masked for query p when
  // p - j >= n_swa) and rotates with rope_base_swa. Empty swa_layers = no sliding layers.
  int n_swa = 0;
  std::vector<char> swa_layers;
  float rope_base_swa = 10000.0f;
  // logits = cap * tanh(logits / cap) when > 0 (final_logit_softcapping).
  float final_softcap = 0.0f;

  bool is_swa(int il) const { return !swa_layers.empty() && swa_layers[size_t(il)] != 0; }
  float layer_rope_base(int il) const { return is_swa(il) ? rope_base_swa : rope_base; }
  float attention_scale() const;
  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // Reads and validates the keys every architecture shares; throws Error naming the file and the
  // key. rope.scaling.type other than none and linear is refused (see docs/engine.md).
  static Hparams from_gguf(const gguf::File& f, RopeType rope_type);
};

}  // namespace ragform::model

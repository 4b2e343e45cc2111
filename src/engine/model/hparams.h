// Hyper-parameters of a decoder-only transformer, read from GGUF metadata with llama.cpp's key
// names (`<arch>.embedding_length`, ...). Shapes of every weight follow from these.
#pragma once
#include <cstdint>
#include <string>

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

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
  // Reads and validates; throws Error naming the file and the key.
  static Hparams from_gguf(const gguf::File& f, RopeType rope_type);
};

}  // namespace ragform::model

// A loaded decoder-only transformer: hyper-parameters plus views of its weights, which stay in the
// GGUF file's image (no copy, except 1-D norm/bias vectors, which are tiny and dequantised to F32
// once, and float matrices, repacked once into the float kernels' panels: packed_weights.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/model/arch.h"
#include "engine/model/engine_options.h"
#include "engine/model/hparams.h"
#include "engine/model/packed_weights.h"
#include "engine/model/tensor_reader.h"
#include "engine/ops/ops.h"

namespace ragform::model {

struct LayerWeights {
  const float* attn_norm = nullptr;       // (n_embd)
  ops::WeightView wq;                     // (n_head*head_dim, n_embd): n_out rows of n_in
  ops::WeightView wk;                     // (n_head_kv*head_dim, n_embd)
  ops::WeightView wv;                     // (n_head_kv*head_dim, n_embd)
  const float* bq = nullptr;              // (n_head*head_dim)     qwen2 only
  const float* bk = nullptr;              // (n_head_kv*head_dim)  qwen2 only
  const float* bv = nullptr;              // (n_head_kv*head_dim)  qwen2 only
  const float* q_norm = nullptr;          // (head_dim)            qwen3, gemma3
  const float* k_norm = nullptr;          // (head_dim)            qwen3, gemma3
  ops::WeightView wo;                     // (n_embd, n_head*head_dim)
  const float* attn_post_norm = nullptr;  // (n_embd)   gemma3: RMSNorm of the attention output
  const float* ffn_post_norm = nullptr;   // (n_embd)   gemma3: RMSNorm of the FFN output
  const float* ffn_norm = nullptr;        // (n_embd)
  ops::WeightView w_gate;                 // (n_ff, n_embd)
  ops::WeightView w_up;                   // (n_ff, n_embd)
  ops::WeightView w_down;                 // (n_embd, n_ff)
};

class Model {
 public:
  // Opens, validates every tensor's presence, type and shape; throws Error naming file and tensor.
  // Every tensor of the file must be one the architecture reads: an unknown tensor is an Error
  // naming it (the engine would otherwise compute without it, silently), except the harmless ones
  // of harmless_tensor() (model.cpp), which add a line to warnings().
  // The options' load mode decides how the file is held, their matmul policy how every weight is
  // multiplied.
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opt = {});
  // Builds a model over an already opened file (which must outlive the Model).
  static std::unique_ptr<Model> from_file(std::shared_ptr<const gguf::File> file,
                                          const LoadOptions& opt = {});

  const Hparams& hp() const { return hp_; }
  const ArchSpec& arch() const { return *arch_; }
  // How this model's weights are multiplied (from the LoadOptions it was loaded with).
  const ops::MatmulPolicy& policy() const { return policy_; }
  // Whose rounding of RoPE angles and GELU the forward pass follows (LoadOptions::numerics).
  Numerics numerics() const { return numerics_; }
  const gguf::File& file() const { return *file_; }
  std::shared_ptr<const gguf::File> file_ptr() const { return file_; }

  ops::WeightView tok_embd;            // (n_vocab, n_embd)
  const float* output_norm = nullptr;  // (n_embd)
  ops::WeightView output;              // (n_vocab, n_embd); == tok_embd when tied
  bool tied_output = false;
  const float* rope_freqs = nullptr;  // (n_rot/2) Llama 3.1 RoPE frequency factors, or null
  std::vector<LayerWeights> layers;

  // Bytes of float weights repacked into panels at load (packed_weights.h); 0 for quantised models.
  size_t packed_bytes() const { return packed_.bytes(); }

  // One line each for what loading accepted but a user should know (ignored metadata, harmless
  // tensors left unread). Front ends print them; library code does not.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::shared_ptr<const gguf::File> file_;
  Hparams hp_;
  const ArchSpec* arch_ = nullptr;
  ops::MatmulPolicy policy_{};
  Numerics numerics_ = Numerics::ggml;
  TensorReader tensors_;  // every tensor read, and the F32 copies of 1-D tensors
  PackedWeights packed_;  // the float matrices in the float kernels' panels
  std::vector<std::string> warnings_;
  void check_all_tensors_used();
  void load_layer(int il);
  const float* vec(const std::string& name, int64_t n, bool required) {
    return tensors_.vec(name, n, required);
  }
  ops::WeightView mat(const std::string& name, int64_t n_in, int64_t n_out) {
    return tensors_.mat(name, n_in, n_out);
  }
};

}  // namespace ragform::model

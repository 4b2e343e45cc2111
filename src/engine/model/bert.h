// A loaded BERT-family encoder (llama.cpp's `bert` architecture: BGE, E5, MiniLM, GTE, and
// cross-encoder rerankers / NLI classifiers converted with convert_hf_to_gguf.py): hyper-parameters
// plus views of the weights in the memory-mapped GGUF file. Matrices stay in the file; 1-D
// vectors (norms, biases) and the small position / token-type tables are dequantised to F32 once.
//
// The block is BERT's (Devlin et al. 2019, after "Attention Is All You Need"): embeddings =
// LayerNorm(token + token_type + position), then per layer post-LayerNorm attention and GELU FFN,
// both with biases; attention is bidirectional. The forward pass is runtime/encoder.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/model/engine_options.h"
#include "engine/model/packed_weights.h"
#include "engine/model/tensor_reader.h"
#include "engine/ops/ops.h"

namespace ragform::model {

// How token states become the output (llama.cpp's enum llama_pooling_type, stored as
// `bert.pooling_type`): none = every token's final state; mean over tokens; cls = the first
// token's; last = the last token's; rank = the classification head on the CLS token.
enum class Pooling { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };

const char* pooling_name(Pooling p);
// "none|mean|cls|last|rank"; throws Error("pooling", ...) otherwise.
Pooling parse_pooling(const std::string& name);

struct BertHparams {
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int head_dim = 0;
  int n_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;    // rows of position_embd: the longest input
  int n_token_types = 0;  // rows of token_types (0 = no table)
  float norm_eps = 1e-12f;
  Pooling pooling = Pooling::None;  // the file's bert.pooling_type
};

struct BertLayer {
  ops::WeightView wq, wk, wv, wo;  // (n_embd, n_embd): n_out rows of n_in
  const float* bq = nullptr;
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* bo = nullptr;
  const float* attn_norm_w = nullptr;  // attn_output_norm: after the attention residual
  const float* attn_norm_b = nullptr;
  ops::WeightView w_up;  // (n_ff, n_embd)
  const float* b_up = nullptr;
  ops::WeightView w_down;  // (n_embd, n_ff)
  const float* b_down = nullptr;
  const float* out_norm_w = nullptr;  // layer_output_norm: after the FFN residual
  const float* out_norm_b = nullptr;
};

class BertModel {
 public:
  // Opens and validates every tensor's presence, type and shape; throws Error naming the file and
  // the tensor. Architectures other than `bert` are refused with the list of decoder commands.
  // opt: the load mode and the kernel policy of every weight (engine_options.h); the pool is
  // the Encoder's.
  static std::unique_ptr<BertModel> load(const std::string& path, const LoadOptions& opt = {});
  static std::unique_ptr<BertModel> from_file(std::shared_ptr<const gguf::File> file,
                                              const LoadOptions& opt = {});

  const BertHparams& hp() const { return hp_; }
  const gguf::File& file() const { return *file_; }
  std::shared_ptr<const gguf::File> file_ptr() const { return file_; }

  ops::WeightView tok_embd;      // (n_vocab, n_embd), any weight type
  std::vector<float> type_embd;  // [n_token_types][n_embd]
  std::vector<float> pos_embd;   // [n_ctx_train][n_embd]
  const float* embd_norm_w = nullptr;
  const float* embd_norm_b = nullptr;
  std::vector<BertLayer> layers;

  // Classification head (pooling rank): optional dense + tanh `cls` (BERT's pooler), then
  // `cls.output` to n_labels() raw scores.
  bool has_cls = false;
  ops::WeightView cls;  // (n_embd, n_embd)
  const float* cls_b = nullptr;
  bool has_cls_out = false;
  ops::WeightView cls_out;  // (n_labels, n_embd)
  const float* cls_out_b = nullptr;
  // bert.classifier.output_labels, else "LABEL_0".. (HF's default names); empty without a head.
  std::vector<std::string> labels;
  int n_labels() const { return int(labels.size()); }
  const ops::MatmulPolicy& policy() const { return policy_; }
  // Whose GELU the encoder computes (LoadOptions::numerics): ggml's tanh table, or transformers'
  // erf form (model::gelu_erf), the only place the two differ in a BERT forward pass.
  Numerics numerics() const { return numerics_; }

 private:
  std::shared_ptr<const gguf::File> file_;
  BertHparams hp_;
  ops::MatmulPolicy policy_;
  Numerics numerics_ = Numerics::ggml;
  TensorReader tensors_;
  PackedWeights packed_;  // the float matrices in the float kernels' panels
  const float* vec(const std::string& name, int64_t n, bool required) {
    return tensors_.vec(name, n, required);
  }
  ops::WeightView mat(const std::string& name, int64_t n_in, int64_t n_out) {
    return tensors_.mat(name, n_in, n_out);
  }
  std::vector<float> table(const std::string& name, int64_t n_in, int64_t* rows);
  // from_file's steps: the embedding tables, one block's tensors, the classification heads.
  void load_embeddings();
  BertLayer load_layer(int il);
  void load_heads();
};

// LayerNorm as ggml_norm then ggml_mul / ggml_add compute it: mean and variance summed in double,
// out[i] = (x[i] - mean) * (1 / sqrt(var + eps)) * w[i] + b[i]. w, b may be null. out may alias x.
void layer_norm(const float* x, const float* w, const float* b, int n, float eps, float* out);

// True when `file` holds an encoder architecture this module loads (so front ends can route).
bool is_encoder_file(const gguf::File& file);

}  // namespace ragform::model

// Which type each tensor of a model gets when it is written as a given weight scheme: llama.cpp's
// llama-quantize recipe (llama_tensor_get_type and its helpers in src/llama-quant.cpp, release
// 34af94c), reimplemented. Shared by `ragform quantize` (quantize_model.h), which applies it to a
// file's tensors by name, and `ragform make-test-model` (random_model.h), which applies it to the
// tensors it plans.
//
// The recipe, for a scheme with base type B:
//   1. Only "weights" are converted: tensors of 2 or more dimensions (trailing dimensions of 1 do
//      not count) whose name ends in "weight" and is not a norm ("_norm.weight"), nor one of the
//      small tensors llama.cpp keeps as they are (BERT's position_embd/token_types, expert gates,
//      and a few of architectures the engine does not run). Every other tensor is copied in its
//      own type: norms, biases and rope_freqs stay F32.
//   2. Float schemes (f32, f16, bf16) give every weight B. Plain block types (q4_0 ... q6_k) give
//      every weight B, as `llama-quantize --pure` does.
//   3. The mixtures (q3_k_m, q4_k_s, q4_k_m, q5_k_s, q5_k_m) start from B and bump some tensors:
//      - the output matrix, or token_embd when there is no output.weight (tied embeddings): Q6_K,
//        or Q8_0 when its row length is not a multiple of B's block (256);
//      - attn_v (and the attn_v-like fused attn_qkv), counted in llama.cpp's order as the i-th of
//        n: q4_k_m/q5_k_m Q6_K where use_more_bits(i, n); q4_k_s Q5_K for i < 4; q3_k_m Q5_K for
//        i < 2, else Q4_K; 80-layer llama (GQA) and qwen2 models ("70B") then lift Q3_K/Q4_K
//        attn_v to Q5_K;
//      - ffn_down of layer i of n_layer: q4_k_m/q5_k_m Q6_K where use_more_bits(i, n); q4_k_s Q5_K
//        for i < n/8; q3_k_m Q5_K for i < n/16, else Q4_K;
//      - attn_output: q3_k_m Q4_K.
//      use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2: the first and last
//      eighth of the layers and every third one in between.
//   4. Any block type (2 and 3) then falls back when a row's length is not a multiple of its
//      block: Q2_K/Q3_K -> Q4_0, Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, and F16 when even that
//      does not fit (Gemma 3 270M's 640-long rows make its Q4_K_M file mostly Q5_0 and Q8_0).
// In llama.cpp 34af94c the fused attn_qkv matches the attn_v rule before its own (older releases
// gave it Q5_K in q4_k_m and Q6_K in q5_k_m): we follow 34af94c. Mixtures of mixture-of-experts
// and falcon models have rules of their own, which are not implemented: asking for one is an error.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/gguf/types.h"

namespace ragform::model {

enum class Mixture { Pure, Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M };

struct WeightScheme {
  std::string name;       // as given to --type
  gguf::TensorType base;  // the default type of weights
  Mixture mix = Mixture::Pure;
  uint32_t file_type = 0;  // llama_ftype written to general.file_type
};
// Case-insensitive; throws UsageError "<what>: unknown --type ..." listing the accepted names.
WeightScheme parse_scheme(const std::string& name, const std::string& what = "make-test-model");
std::vector<std::string> scheme_names();

// How llama-quantize categorises a tensor. make-test-model knows its tensors' roles; a file's
// tensors get theirs from their names (role_of_name).
enum class TensorRole {
  TokenEmbd,
  Output,
  AttnQ,
  AttnK,
  AttnV,
  AttnOutput,
  FfnGate,
  FfnUp,
  FfnDown,
  Norm,
  Bias,
  AttnQKV,    // fused q/k/v (phi3)
  RopeFreqs,  // rope_freqs.weight: computed factors, not random
  AttnKvB,    // DeepSeek's attn_kv_b: attn_v-like (no architecture the engine runs has it)
  Other,
};

// llama.cpp's category of a tensor name (substring tests, in its order). Never Norm, Bias or
// RopeFreqs: those are told apart by is_quantizable.
TensorRole role_of_name(std::string_view name);

// Step 1 above: whether llama-quantize converts this tensor at all.
bool is_quantizable(std::string_view name, const std::vector<int64_t>& ne);

// Steps 2-4 for one weight of row length n_in. (i, n): for attn_v-like roles the tensor's rank
// among the model's attn_v-like tensors and their count; for ffn_down its layer and the layer
// count; unused otherwise. tied: the model has no output.weight. lift_attn_v: the "70B" rule.
gguf::TensorType choose_tensor_type(const WeightScheme& w, TensorRole role, int i, int n,
                                    int64_t n_in, bool tied, bool lift_attn_v = false);

// What the recipe reads from a model's metadata.
struct RecipeFacts {
  std::string arch;          // general.architecture
  int n_layer = 0;           // <arch>.block_count (0: counted from the blk.N. names)
  int n_expert = 0;          // <arch>.expert_count
  bool lift_attn_v = false;  // llama.cpp's LLM_TYPE_70B: 80-layer GQA llama, 80-layer qwen2
};
RecipeFacts recipe_facts(const gguf::File& f);

// The target type of every tensor of `tensors` (same order), counting attn_v and ffn_down tensors
// in llama.cpp's order (by layer, then name). Throws UsageError naming the scheme for a mixture
// of a model whose rules are not implemented (mixture of experts, falcon).
std::vector<gguf::TensorType> plan_types(const std::vector<gguf::TensorInfo>& tensors,
                                         const RecipeFacts& facts, const WeightScheme& w,
                                         const std::string& what = "quantize");

}  // namespace ragform::model

// Random-weight models of real shapes (`ragform make-test-model`): benchmarks and memory tests need
// a Qwen2.5-0.5B-sized Q4_K_M file without downloading one. The file is a complete llama.cpp
// model: full `<arch>.*` hyper-parameters, `general.file_type`, a tokenizer, and per-tensor types
// chosen as llama-quantize chooses them.
//
// Weights (as the llama.cpp reference models were made): matrices W ~ N(0, 1/fan_in) with fan_in =
// ne[0]; norm weights 1 + N(0, 0.1^2); qwen2 q/k/v biases N(0, 0.5^2); token embeddings N(0, 1)
// when the output matrix is separate, N(0, (2.4/sqrt(n_embd))^2) when tied (0.15 at n_embd 256, as
// tinyq-qwen2), so logits stay O(1). Each 64-row chunk of each tensor has its own generator seeded
// from (seed, tensor name, chunk): files are bit-identical for a seed whatever the thread count.
//
// --type (WeightScheme): a plain type (f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k,
// q4_k, q5_k, q6_k) gives every 2-D weight that type, as `llama-quantize --pure`; the mixtures
// (q3_k_m, q4_k_s, q4_k_m, q5_k_s, q5_k_m) follow llama-quantize's per-tensor rules, and a row
// length that is not a multiple of the block falls back (e.g. `--shape qwen2.5-0.5b --type q4_k`
// writes its 896-long rows as Q5_0): the recipe is in quant_recipe.h, shared with `ragform
// quantize`. 1-D tensors (norms, biases) are always F32.
//
// Memory stays bounded: the file is laid out by gguf::StreamWriter, then every tensor is generated,
// quantised and written in batches of rows (a few tens of MB at most).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/gguf/types.h"
#include "engine/model/quant_recipe.h"

namespace ragform::model {

struct ModelShape {
  std::string name;
  std::string arch;  // default architecture of the shape
  int n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0;
  int head_dim = 0;  // 0 = n_embd / n_head (qwen3 sets it explicitly)
  int n_ff = 0, n_vocab = 0, n_ctx = 0;
  float rope_base = 10000.0f, rms_eps = 1e-5f;
  bool tied = false;  // no output.weight: logits use token_embd
  int n_swa = 0;      // gemma3: attention.sliding_window (0 = 512 when written as gemma3)
  // Llama 3.1/3.2: rope_freqs.weight with Meta's frequency factors (llama3_rope_factors) when the
  // model is written as llama.
  bool rope_freqs = false;

  int head_size() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
};

// The named shapes: tiny, small, qwen2.5-0.5b, qwen2.5-1.5b, llama-3.2-1b, qwen3-0.6b, gemma-3-1b,
// phi-3-mini.
const std::vector<ModelShape>& model_shapes();
// Throws UsageError listing the known names.
const ModelShape& find_shape(const std::string& name);

struct TensorPlan {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] = row length
  TensorRole role;
  int layer = -1;
  gguf::TensorType type;
};

// Every tensor of an `arch` model of shape s, in file order, typed by w. The architectures
// make-test-model writes are the rows of kArchPlans (random_model.cpp).
std::vector<TensorPlan> plan_tensors(const ModelShape& s, const std::string& arch,
                                     const WeightScheme& w);

// Architectures plan_tensors knows.
std::vector<std::string> random_model_archs();

// Meta's Llama 3.1 RoPE frequency factors, as the converter writes rope_freqs.weight (n_rot/2
// values): pairs of wavelength below original_ctx/high_freq_factor keep factor 1, above
// original_ctx/low_freq_factor get `factor`, and in between a smooth interpolation
// 1 / ((1 - s)/factor + s), s = (original_ctx/wavelength - low) / (high - low). Llama 3.2 1B uses
// factor 32, low 1, high 4, original context 8192.
std::vector<float> llama3_rope_factors(int n_rot, float base, float factor = 32.0f,
                                       float low_freq_factor = 1.0f, float high_freq_factor = 4.0f,
                                       int original_ctx = 8192);

struct RandomModelOptions {
  std::string shape = "tiny";
  std::string arch;          // empty = the shape's
  std::string type = "f32";  // WeightScheme name
  std::string out;           // output path
  uint64_t seed = 1;
  // Copy every tokenizer.* key from this GGUF (n_vocab becomes its token count); empty = a
  // synthetic SPM vocabulary of the shape's size.
  std::string vocab_from;
  int layers = 0;   // > 0 overrides the shape's layer count
  int threads = 0;  // 0 = all cores
  // Called after each batch with (elements written, total elements); may be empty.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct RandomModelSummary {
  std::string arch;
  ModelShape shape;  // as written (layers and vocabulary size applied)
  int64_t n_params = 0;
  uint64_t file_bytes = 0;
  std::map<std::string, int> type_counts;  // ggml type name -> tensors
};

// Writes the model to o.out (via a temporary file renamed at the end). Throws UsageError for a
// bad option, Error for I/O failures or an unreadable --vocab-from file.
RandomModelSummary write_random_model(const RandomModelOptions& o);

// A synthetic SentencePiece vocabulary of n tokens (n >= 300): <unk>, <s>, </s>, the 256 byte
// tokens <0x00>..<0xFF>, then "▁" and printable ASCII characters, "▁"-prefixed and bare letter
// strings in length order; scores decrease with the index (earlier pieces merge first).
struct SyntheticVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // llama token types: 1 normal, 2 unknown, 3 control, 6 byte
};
SyntheticVocab synthetic_spm_vocab(int n);

}  // namespace ragform::model

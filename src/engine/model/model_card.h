// Model card: a summary of a GGUF model file computed from its metadata and tensor table alone
// (nothing is dequantised, so it is instant even for large files). Used by `ragform info` and,
// later, by the server's model endpoint.
//
// Keys follow llama.cpp (llama-arch.cpp, llama-model.cpp load_hparams, llama-vocab.cpp load):
// `<arch>.embedding_length`, `<arch>.block_count`, `<arch>.attention.head_count(_kv)`,
// `<arch>.feed_forward_length`, `<arch>.context_length`, `<arch>.rope.freq_base`,
// `<arch>.rope.dimension_count`, `<arch>.rope.scaling.*`, `<arch>.attention.layer_norm_rms_epsilon`
// (or `layer_norm_epsilon` for LayerNorm models), `tokenizer.ggml.*`, `tokenizer.chat_template`.
// Defaults where a key is absent are llama.cpp's: head_count_kv = head_count, head_dim =
// n_embd / n_head, rope base 10000, no rope scaling, special-token ids per tokenizer model.
//
// A file with tensors must carry the architecture, embedding_length, block_count, head_count and
// context_length keys (summarize throws ragform::Error naming the missing key). A vocabulary-only
// file (no tensors, like llama.cpp's ggml-vocab-*.gguf) needs only its tokenizer; whatever
// hyper-parameters it has are still reported.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf.h"
#include "engine/tokenizer/chat_template.h"

namespace ragform::model {

struct SpecialToken {
  std::string role;  // "bos", "eos", "eot", "unk", "sep", "pad", "mask", "cls"
  int64_t id = -1;
  std::string text;    // the token's string in tokenizer.ggml.tokens
  std::string source;  // "metadata" (tokenizer.ggml.<role>_token_id), "default" (llama.cpp's
                       // default for the tokenizer model) or "text" (eot found by its text)
};

struct TypeUsage {
  gguf::TensorType type = gguf::TensorType::F32;
  int64_t count = 0;   // tensors of this type
  uint64_t bytes = 0;  // their data bytes
};

struct ModelCard {
  // File
  std::string path;
  std::string name;          // general.name ("" if absent)
  std::string architecture;  // general.architecture
  uint64_t file_size = 0;
  uint32_t gguf_version = 0;
  uint32_t alignment = 0;
  std::optional<int64_t> file_type;  // general.file_type (llama_ftype)
  std::string file_type_name;        // llama.cpp's name, e.g. "Q4_K - Medium"
  bool vocab_only = false;           // no tensors at all

  // Hyper-parameters (nullopt only in vocabulary-only files that lack the key)
  std::optional<int64_t> n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_ctx_train, n_rot;
  std::string rope_type;  // "norm", "neox", "mrope", "none" (llama_model_rope_type), "unknown"
  double rope_freq_base = 10000.0;
  std::string rope_scaling = "none";  // rope.scaling.type: none, linear, yarn, longrope, ...
  double rope_scaling_factor = 1.0;
  std::optional<int64_t> rope_original_ctx;  // rope.scaling.original_context_length
  std::string norm;                          // "rms" or "layer" ("" if neither eps key exists)
  std::optional<double> norm_eps;
  std::optional<bool> tied_output;  // token_embd reused as output (no output.weight); nullopt
                                    // in vocabulary-only files

  // Tensors
  int64_t n_tensors = 0;
  int64_t n_params = 0;                   // sum of tensor elements
  uint64_t tensor_bytes = 0;              // sum of tensor data bytes
  std::vector<TypeUsage> type_histogram;  // by ggml type id

  // Tokenizer
  std::string tokenizer_model;  // tokenizer.ggml.model: llama (SPM), gpt2 (BPE), bert (WPM), ...
  std::string tokenizer_pre;    // tokenizer.ggml.pre ("" if absent)
  int64_t vocab_size = 0;       // entries in tokenizer.ggml.tokens
  int64_t n_merges = 0;         // entries in tokenizer.ggml.merges (BPE)
  std::optional<bool> add_bos, add_eos;  // tokenizer.ggml.add_{bos,eos}_token when present
  std::vector<SpecialToken> special_tokens;
  bool has_chat_template = false;
  std::string chat_family = "none";  // tok::family_name of the detected family

  std::vector<std::string> warnings;  // inconsistencies that do not stop loading
};

// Reads the card from an open file; throws ragform::Error("model card", "<file>: '<key>' ...").
// summarize_file() leaves chat_family at "unknown" when the file has a template; summarize() also
// names the family. (The detection lives in engine/tokenizer, which the ragform_model library
// does not link; keeping this call inline puts the reference in the caller, which does.)
ModelCard summarize_file(const gguf::File& f);
inline ModelCard summarize(const gguf::File& f) {
  ModelCard c = summarize_file(f);
  if (const gguf::Value* t = f.find("tokenizer.chat_template"))
    c.chat_family = tok::family_name(tok::detect_chat_family(t->as_string()));
  return c;
}

// The training context (`<arch>.context_length`) of the model file at `path`, 0 when the header
// does not say or cannot be read (loading the model then reports the real error). Reads only the
// GGUF header (mapped, nothing dequantised). The CLI and the Python module take the smaller of
// 4096 and this as the default context.
int training_context(const std::string& path);

// One JSON object (every field above; absent optionals are null).
nlohmann::json to_json(const ModelCard& card);
// A readable multi-line card for humans.
std::string to_text(const ModelCard& card);

// Names used above, exposed for tests and other front ends.
std::string rope_type_of_arch(const std::string& arch);          // "norm", "neox", "mrope", ...
std::string file_type_name(int64_t llama_ftype);                 // "Q4_K - Medium", "unknown (n)"
std::string tokenizer_kind(const std::string& tokenizer_model);  // "SPM", "BPE", "WPM", ...

}  // namespace ragform::model

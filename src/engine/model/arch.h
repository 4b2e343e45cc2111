// Architectures: one file each (arch_<name>.cpp) describing how the GGUF tensors of that
// architecture map onto the shared transformer block (model.h, runtime/forward.h) and where the
// architecture leaves the pre-norm SwiGLU template: fused projections, post-norms, the gated FFN's
// activation, scaled embeddings, and its own metadata (sliding windows, soft-capping) read by
// `read_hparams`. Adding an architecture is one new file and one line in kArchitectures
// (arch.cpp); the runtime's block steps read these fields, never the architecture's name.
#pragma once
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/model/hparams.h"

namespace ragform::model {

// The gated FFN's activation: act(W_gate h) * (W_up h).
enum class FfnAct {
  Silu,     // SwiGLU (llama, qwen, phi3)
  GeluTanh  // GeGLU with the tanh GELU as llama.cpp's CPU backend computes it (gemma)
};

struct ArchSpec {
  const char* name = "";  // general.architecture
  RopeType rope_type = RopeType::Norm;
  bool qkv_bias = false;            // q/k/v projections have biases (qwen2)
  bool qk_norm = false;             // per-head RMSNorm on q and k before RoPE (qwen3, gemma3)
  bool output_may_be_tied = false;  // no output.weight -> logits use token_embd
  bool fused_qkv = false;           // one attn_qkv matrix: q rows, then k rows, then v rows (phi3)
  bool fused_gate_up = false;       // ffn_up holds 2 n_ff rows, gate first, no ffn_gate (phi3)
  bool post_norms = false;  // RMSNorm of the attention and FFN outputs before each residual add
                            // (post_attention_norm, post_ffw_norm: gemma2/3)
  FfnAct ffn_act = FfnAct::Silu;
  bool scale_embeddings = false;  // token embeddings x sqrt(n_embd) (gemma)
  bool rope_freqs = false;        // may carry rope_freqs.weight (Llama 3.1 frequency factors)
  // Architecture-specific metadata, after the common keys are read (may be null).
  void (*read_hparams)(const gguf::File& f, Hparams& hp,
                       std::vector<std::string>& warnings) = nullptr;
};

const ArchSpec& llama_arch();
const ArchSpec& qwen2_arch();
const ArchSpec& qwen3_arch();
const ArchSpec& gemma3_arch();
const ArchSpec& phi3_arch();

// The spec for `name`; throws Error listing the supported architectures when unknown.
const ArchSpec& find_arch(const std::string& name);
std::vector<std::string> supported_archs();

}  // namespace ragform::model

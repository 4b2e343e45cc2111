// Architectures: one file each (arch_<name>.cpp) describing how the GGUF tensors of that
// architecture map onto the shared transformer block (model.h) and which variant of each building
// block it uses. Adding an architecture is one new file and one line in kArchitectures (arch.cpp).
#pragma once
#include <string>
#include <vector>

#include "engine/model/hparams.h"

namespace ragform::model {

struct ArchSpec {
  const char* name;  // general.architecture
  RopeType rope_type;
  bool qkv_bias;            // q/k/v projections have biases (qwen2)
  bool qk_norm;             // per-head RMSNorm on q and k before RoPE (qwen3)
  bool output_may_be_tied;  // no output.weight -> logits use token_embd
};

const ArchSpec& llama_arch();
const ArchSpec& qwen2_arch();
const ArchSpec& qwen3_arch();

// The spec for `name`; throws Error listing the supported architectures when unknown.
const ArchSpec& find_arch(const std::string& name);
std::vector<std::string> supported_archs();

}  // namespace ragform::model

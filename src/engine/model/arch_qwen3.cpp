// qwen3: as qwen2 without q/k/v biases, with a per-head RMSNorm of q and k (attn_q_norm,
// attn_k_norm, one weight of head_dim) applied before RoPE. head_dim comes from
// attention.key_length (it is not n_embd / n_head in Qwen3).
#include "engine/model/arch.h"

namespace ragform::model {

const ArchSpec& qwen3_arch() {
  static const ArchSpec spec{
      .name = "qwen3", .rope_type = RopeType::Neox, .qk_norm = true, .output_may_be_tied = true};
  return spec;
}

}  // namespace ragform::model

// qwen2: Qwen2 and Qwen2.5. As llama, plus biases on the q/k/v projections, NEOX-style RoPE
// (x[i] with x[i + n_rot/2]) and usually a tied output (token_embd doubles as the output matrix).
#include "engine/model/arch.h"

namespace ragform::model {

const ArchSpec& qwen2_arch() {
  static const ArchSpec spec{
      .name = "qwen2", .rope_type = RopeType::Neox, .qkv_bias = true, .output_may_be_tied = true};
  return spec;
}

}  // namespace ragform::model

// llama: Llama 2/3/3.1/3.2, Mistral, TinyLlama, SmolLM, llama2.c stories. RMSNorm, NORM-style RoPE
// (adjacent pairs), grouped-query attention without biases, SwiGLU FFN, untied or tied output.
// Llama 3.1 and 3.2 files carry rope_freqs.weight: one factor per rotated pair that divides that
// pair's RoPE frequency (llama.cpp passes it to ggml_rope_ext as freq_factors).
#include "engine/model/arch.h"

namespace ragform::model {

const ArchSpec& llama_arch() {
  static const ArchSpec spec{
      .name = "llama", .rope_type = RopeType::Norm, .output_may_be_tied = true, .rope_freqs = true};
  return spec;
}

}  // namespace ragform::model

// llama: Llama 2/3, Mistral, TinyLlama, SmolLM, llama2.c stories. RMSNorm, NORM-style RoPE
// (adjacent pairs), grouped-query attention without biases, SwiGLU FFN, untied or tied output.
#include "engine/model/arch.h"

namespace ragform::model {

const ArchSpec& llama_arch() {
  static const ArchSpec spec{"llama", RopeType::Norm, /*qkv_bias=*/false, /*qk_norm=*/false,
                             /*output_may_be_tied=*/true};
  return spec;
}

}  // namespace ragform::model

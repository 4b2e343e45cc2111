// phi3: Phi-3 and Phi-3.5 mini. Llama's block with fused projections: attn_qkv holds the q rows,
// then the k rows, then the v rows; ffn_up holds 2 n_ff rows, the gate's first, then up's
// (llama.cpp's LLM_FFN_SWIGLU over the split halves). NEOX RoPE, untied output.
//
// Phi-3 files may carry attention.sliding_window; llama.cpp ignores it (its converters wrote wrong
// values, llama.cpp PR 13676) and so does ragform, with a warning. LongRoPE (rope_factors_long /
// rope_factors_short, Phi-3.5 128k) is refused when the model loads (model.cpp).
#include "engine/model/arch.h"

namespace ragform::model {

namespace {
void read_phi3(const gguf::File& f, Hparams& hp, std::vector<std::string>& warnings) {
  const std::string key = hp.arch + ".attention.sliding_window";
  if (f.has(key) && f.get_int(key) > 0)
    warnings.push_back(f.path() + ": " + key + " = " + std::to_string(f.get_int(key)) +
                       " ignored, as llama.cpp ignores it for phi3 (full attention)");
}
}  // namespace

const ArchSpec& phi3_arch() {
  static const ArchSpec spec{.name = "phi3",
                             .rope_type = RopeType::Neox,
                             .output_may_be_tied = true,
                             .fused_qkv = true,
                             .fused_gate_up = true,
                             .read_hparams = &read_phi3};
  return spec;
}

}  // namespace ragform::model

// gemma3: Gemma 3 text models. Token embeddings x sqrt(n_embd); pre-norm blocks whose attention and
// FFN outputs are RMS-normalised again before the residual add (post_attention_norm,
// post_ffw_norm); per-head RMSNorm of q and k before RoPE; NEOX RoPE; GeGLU FFN (tanh GELU of the
// gate times up); tied output. The converter has already folded Gemma's "1 + w" norm weights into
// the file, so norms use the stored weights as they are.
//
// Sliding-window attention with llama.cpp's fixed period of 6: layers il % 6 < 5 are local
// (attention.sliding_window keys) and rotate with rope.freq_base_swa, else llama.cpp's built-in
// 10000; every sixth layer is global and uses rope.freq_base. The attention scale is
// 1/sqrt(head_dim), except for the 62-layer 27B model: 1/sqrt(n_embd / n_head) (llama.cpp, after
// gemma_pytorch's config). final_logit_softcapping, when the key is present, caps the logits.
#include <cmath>

#include "base/error.h"
#include "engine/model/arch.h"

namespace ragform::model {

namespace {
void read_gemma3(const gguf::File& f, Hparams& hp, std::vector<std::string>&) {
  const std::string a = hp.arch + ".";
  if (!f.has(a + "attention.sliding_window"))
    throw Error("model", f.path() + ": missing metadata key '" + a + "attention.sliding_window'");
  const int64_t w = f.get_int(a + "attention.sliding_window");
  if (w <= 0 || w > (int64_t(1) << 30))
    throw Error("model", f.path() + ": '" + a + "attention.sliding_window' = " + std::to_string(w) +
                             " is out of range");
  hp.n_swa = int(w);
  constexpr int kPeriod = 6;
  hp.swa_layers.assign(size_t(hp.n_layer), 0);
  for (int il = 0; il < hp.n_layer; ++il) hp.swa_layers[size_t(il)] = il % kPeriod < kPeriod - 1;
  hp.rope_base_swa = float(f.get_float(a + "rope.freq_base_swa", 10000.0));
  hp.final_softcap = float(f.get_float(a + "final_logit_softcapping", 0.0));
  if (hp.n_layer == 62) hp.attn_scale = 1.0f / std::sqrt(float(hp.n_embd / hp.n_head));
}
}  // namespace

const ArchSpec& gemma3_arch() {
  static const ArchSpec spec{.name = "gemma3",
                             .rope_type = RopeType::Neox,
                             .qk_norm = true,
                             .output_may_be_tied = true,
                             .post_norms = true,
                             .ffn_act = FfnAct::GeluTanh,
                             .scale_embeddings = true,
                             .read_hparams = &read_gemma3};
  return spec;
}

}  // namespace ragform::model

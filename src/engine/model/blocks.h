// The shared building blocks of the transformer, written to reproduce ggml's CPU numerics
// (the reference outputs are llama.cpp CPU runs). Each has a plain scalar form; they are cheap next
// to the matmuls, which live in ops/.
#pragma once
#include <cstdint>

#include "engine/model/hparams.h"

namespace ragform::model {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]   (ggml_rms_norm: sum of squares in double)
// w may be null (no scale). out may alias x.
void rms_norm(const float* x, const float* w, int n, float eps, float* out);

// Rotary position embedding of one token's heads in place: x = [n_heads][head_dim], the first
// n_rot dims of each head rotated; pair i by the angle theta_i = freq_scale * (pos *
// base^(-2i/n_rot) / ff[i]), as ggml's rope computes it: pos * base^(-2i/n_rot) advanced by
// repeated float multiplication with theta_scale = base^(-2/n_rot), divided by the pair's frequency
// factor ff[i] (Llama 3.1's rope_freqs; 1 when there are none), then multiplied by freq_scale (1 /
// the linear scaling factor). NORM pairs (2i, 2i+1); NEOX pairs (i, i + n_rot/2).
struct RopeCache {
  // cos/sin for one position: [n_rot/2] each. freq_factors: [n_rot/2] or null.
  void compute(int pos, int n_rot, float base, float freq_scale,
               const float* freq_factors = nullptr);
  // The same angles as Hugging Face transformers rounds them (Numerics::transformers):
  // float(pos) * inv_freq[i], inv_freq[i] = 1 / powf(base, 2i / n_rot) (divided by the factor,
  // times freq_scale, where those are not 1), one float rounding each instead of i products.
  void compute_transformers(int pos, int n_rot, float base, float freq_scale,
                            const float* freq_factors = nullptr);
  float cos[512], sin[512];
};
void rope(float* x, int n_heads, int head_dim, int n_rot, const RopeCache& rc, RopeType type);

// SwiGLU: out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)). out may alias gate.
void swiglu(const float* gate, const float* up, int n, float* out);

// GELU in its tanh form, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as llama.cpp's CPU
// backend computes it (ggml's GELU table): for -10 < x < 10 the input is rounded to F16 and the
// result read from a 65536-entry table of F16 values (GELU of every half, rounded to half);
// x <= -10 gives 0 and x >= 10 gives x. out may alias x. gelu_exact is the unrounded tanh form,
// the reference the table is built from; gelu_tanh applies it to n values (Numerics::transformers:
// transformers' gelu_pytorch_tanh). out may alias x.
void gelu(const float* x, int n, float* out);
// gelu's table as floats, indexed by the half bits of x (65,536 entries, built once): the
// vectorised GEGLU (runtime/elementwise.h) gathers from it.
const float* gelu_table_f32();
float gelu_exact(float x);
void gelu_tanh(const float* x, int n, float* out);
// GELU in its erf form, 0.5 x (1 + erf(x / sqrt 2)), in float: transformers' "gelu" (torch's
// nn.GELU()), BERT's activation there, where llama.cpp's BERT reads the tanh table (gelu).
// out may alias x.
void gelu_erf(const float* x, int n, float* out);

// In-place softmax of x[0..n) (max-subtracted, sum in double as ggml_vec_soft_max_f32).
void softmax(float* x, int n);

}  // namespace ragform::model

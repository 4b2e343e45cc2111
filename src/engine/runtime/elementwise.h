// Vectorised elementwise ops of the forward pass that show up in a prefill profile next to the
// matmuls: SwiGLU's silu(gate) * up (one exp per FFN element, n_ff = 4864 per token for
// Qwen2.5-0.5B). Same SIMD tiers and runtime dispatch as attention.h; the scalar tier is
// model::swiglu. ggml also evaluates silu with a vectorised expf (ggml_v_silu), so the AVX tiers
// differ from the scalar one only in the last bits of exp.
#pragma once
#include <cstdint>

#include "engine/runtime/attention.h"

namespace ragform::runtime {

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + e^-x) (Shazeer 2020, "GLU Variants Improve
// Transformer", eq. 5 with Swish_1). out may alias gate. Every element is computed by the same
// formula of its level whatever n and its index (a short tail too), so results do not depend on
// how the caller splits an array.
void swiglu(const float* gate, const float* up, int64_t n, float* out,
            SimdLevel level = cpu_simd_level());

// out[i] = gelu(gate[i]) * up[i] with model::gelu's F16 table (ggml's geglu: the gate rounded to
// half, the table's GELU of that half, 0 below -10, the gate itself from 10). The SIMD tiers
// round with vcvtps2ph (nearest even, as ops::fp32_to_fp16) and gather from the table as floats,
// so every tier gives the scalar form's bits. out may alias gate.
void geglu(const float* gate, const float* up, int64_t n, float* out,
           SimdLevel level = cpu_simd_level());

}  // namespace ragform::runtime

// Reference weight quantisers: F32 rows -> every weight type ragform reads (F32, F16, BF16, Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K). They follow ggml's
// `quantize_row_*_ref` arithmetic operation for operation (ggml-quants.c), which is what
// llama-quantize runs when no importance matrix is given, so a tensor quantised here has the same
// bytes as llama-quantize's output for it (checked against the tinyq fixtures). Used to write
// random-weight test models (engine/model/random_model.h) and to test the dequantisers.
//
// The scale searches, in brief (ggml names):
//   Q4_0/Q5_0: d = max/-8 (/-16) with max the signed largest-magnitude element, q = trunc(x/d+8.5);
//   Q4_1/Q5_1: d = (max-min)/15 (/31), m = min, q = trunc((x-min)/d + 0.5);
//   Q8_0:      d = amax/127, q = roundf(x/d) (half away from zero);
//   Q2_K/Q4_K/Q5_K: per sub-block scale and min from make_qkx2_quants (a weighted least-squares
//              search over nstep trial scales), then 4-/6-bit super-block quantisation of those;
//   Q3_K/Q6_K: signed per sub-block scales from make_q3_quants / make_qx_quants (rmse_type 1),
//              then 6-/8-bit super-block quantisation and a final re-quantisation of the values.
// F16 and BF16 round to nearest even (ops/fp16.h). Inputs must be finite: a NaN or infinity
// throws Error("quantize", ...) naming the element, since ggml would silently write garbage.
#pragma once
#include <cstdint>

#include "base/thread_pool.h"
#include "engine/gguf/types.h"

namespace ragform::ops {

// Quantises n elements of x (n a multiple of t's block size) into dst, which must hold
// gguf::row_bytes(t, n) bytes. Throws Error for a type without a quantiser (Q8_1, Q8_K are
// activation types: see ops.h) or a length that is not a multiple of the block.
void quantize_row(gguf::TensorType t, const float* x, void* dst, int64_t n);

// n_rows rows of n_per_row elements, rows split across the pool's threads (bit-identical for any
// thread count: every row is quantised independently).
void quantize_rows(gguf::TensorType t, const float* x, void* dst, int64_t n_rows, int64_t n_per_row,
                   ThreadPool& pool);

}  // namespace ragform::ops

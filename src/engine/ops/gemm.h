// Internal to ops/: the matrix kernels behind matmul() that are faster than one vec_dot per
// output (see matmul.cpp for the dispatch). Each returns exactly what the vec_dot path returns
// where the integer sums and the float operations per block are the same (documented per
// kernel), so the fixture tolerances of the reference path carry over unchanged.
#pragma once
#include <cstdint>

#include "base/thread_pool.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/ops.h"

namespace ragform::ops {

// Int8 GEMM with AVX512-VNNI for weights whose vec_dot type is Q8_0 (Q8_0, Q5_0, Q4_0).
// Activations are quantised per token exactly as convert_activations does, repacked into
// panels of 16 tokens, and each 4-row weight tile is multiplied against 32 tokens at a time
// (vpdpbusd, weights reused across tokens). Bit-identical to the vec_dot path: per block the
// exact integer dot, then sumf += (d_w * d_x) * float(isum) in block order, no FMA.
bool gemm_q8_supported(TensorType t, CpuTier tier);
void gemm_q8(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// The same GEMM for Q4_K, Q5_K and Q6_K weights against Q8_K activations (gemm_k.cpp): every
// type in one form of 16-element sub-blocks with integer scales, bsums terms through vpdpwssd.
// Bit-identical to the vec_dot path (same integer sums, same float operations per block).
bool gemm_k_supported(TensorType t, CpuTier tier);
void gemm_k(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// F16 and BF16 weights, exact (gemm_f16.cpp): one kernel for any number of tokens over weights in
// panels (float_panels.h; w.panels, or packed a group at a time when null), with AVX-512 or AVX2
// (`tier`, clamped to the CPU; matmul uses it on both, where gemm_f16_supported is true).
// Bit-identical to the vec_dot path for any number of tokens, any tiling and any thread count
// (every F16 output one fused multiply-add chain along k, as dot_f16 sums; every BF16 output the
// chain of pairs of vdpbf16ps, as dot_bf16 sums: bf16_dot.h), so a row's result never depends on
// the batch.
// BF16 on AVX-512 has two kernels with the same bits: `dot` steps a pair with one vdpbf16ps
// (AVX512-BF16), `fma` with two FMAs under MXCSR FTZ/DAZ. Which is faster depends on the core:
// vdpbf16ps retires twice the fp32 FMA flops on the AMD Zen 5 VM and half of them on the Intel
// Xeon VM (docs/performance.md, "BF16 in the dot instruction's order"), so `automatic` (matmul's
// choice) takes `dot` on AMD CPUs with AVX512-BF16 and `fma` elsewhere; tests and benchmarks ask
// for each (`dot` without AVX512-BF16 runs `fma`). AVX2 always runs the FMA form.
enum class Bf16Kernel : uint8_t { automatic, dot, fma };
bool gemm_f16_supported(TensorType t, CpuTier tier);
void gemm_f16(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
              CpuTier tier = CpuTier::Avx512, Bf16Kernel bf16 = Bf16Kernel::automatic);
// The BF16 kernel `automatic` runs on AVX-512 on this CPU (dot or fma).
Bf16Kernel bf16_kernel_here();

// F32 weights on AVX-512 (gemm_f32.cpp): dot_f32's 16-lane order, bit-identical to the vec_dot
// path for any number of tokens (inner-product tiles of 4 rows x 6 tokens straight from the rows).
bool gemm_f32_supported(TensorType t, CpuTier tier);
void gemm_f32(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// F16 prefill on int16 dot products (gemm_f16_int16.cpp, AVX512-VNNI vpdpwssd at twice the fp32
// FMA rate), only when the weight's policy asks for it (approximate; not batch-invariant: fewer
// than kF16Int16MinTokens tokens take the exact path, so a row's bits depend on how many tokens
// share the product): weights rounded to 14-bit integers with one scale per row, activations with
// one scale per token and block of 32, exact int32 sums per block. Not bit-identical to vec_dot:
// the rounding is of the order of ggml's F16 rounding of activations (the F16 fixtures stay within
// 0.0021 of llama.cpp, tolerance 0.005). Taken for F16 rows that are a multiple of 32 long and
// at least kF16Int16MinTokens tokens (fewer, and quantising the weights would cost more than the
// products), and only when the weight's policy asks for it (MatmulPolicy::f16 == int16;
// F16Gemm::exact, the default, keeps every F16 product exact).
// gemm_f16_int16_reference is the scalar form, bit-identical to the kernel.
constexpr int64_t kF16Int16MinTokens = 16;
bool gemm_f16_int16_supported(const WeightView& w, int64_t n_tokens, CpuTier tier);
void gemm_f16_int16(const WeightView& w, const float* x, int64_t n_tokens, float* y,
                    ThreadPool& pool);
void gemm_f16_int16_reference(const WeightView& w, const float* x, int64_t n_tokens, float* y);

// Decode GEMV with AVX512-VNNI for the same types: memory-bound, rows split over the pool. The
// integer block sums are exact and the float operations per block are vec_dot's in its block
// order, so it is bit-identical to vec_dot and to gemm_q8 (batch-invariant). Several tokens (the
// decode step of several sequences): each weight row is read once and dotted with every token
// while it is in L1, so up to kGemvQ8MaxTokens tokens cost about one token's DRAM traffic plus
// their arithmetic, where gemm_q8 computes a whole 16-token panel whatever the count. The GEMV's
// arithmetic per token is dearer than the GEMM's, so past a few tokens the panel wins again
// (bench --parallel on the 0.5B shape: 2 and 4 sequences faster through the GEMV, 8 about even
// for Q8_0 and slower for the Q4_K_M mixture).
constexpr int64_t kGemvQ8MaxTokens = 4;
void gemv_q8(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
void gemv_q8(const WeightView& w, const float* x, float* y, ThreadPool& pool);

// Decode GEMV for Q4_K and Q6_K (gemv_k.cpp): per block the exact integers via vpmaddubsw +
// vpdpwssd (scales applied in int16 pairs; Q4_K four rows per tile), combined with vec_dot's float
// operations in its block order, so bit-identical to it.
// Several tokens as gemv_q8: each row tile read once, for up to kGemvKMaxTokens tokens.
constexpr int64_t kGemvKMaxTokens = 4;
bool gemv_k_supported(TensorType t, CpuTier tier);
void gemv_k(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
void gemv_k(const WeightView& w, const float* x, float* y, ThreadPool& pool);

}  // namespace ragform::ops

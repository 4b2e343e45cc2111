// Weight-type numerics of the engine: dequantisation, activation conversion, dot products and a
// multithreaded matmul that reproduce llama.cpp/ggml's CPU results (including how ggml converts
// a matmul's activation operand to the weight type's dot-product type).
//
// How ggml multiplies a weight row W (type T) by an F32 activation row x, and so how we do:
//   1. x is converted once per token to T's "vec_dot type" (activation_type(T)):
//        F32 -> F32 as is; F16 -> rounded to F16; BF16 -> rounded to BF16;
//        Q4_0, Q5_0, Q8_0 -> Q8_0 blocks; Q4_1, Q5_1 -> Q8_1 blocks; Q2_K..Q6_K -> Q8_K blocks.
//      Q8_0/Q8_1 round like ggml's AVX path (x * (127/amax), round half to even); Q8_K like
//      quantize_row_q8_K_ref (iscale = -127/max with max the signed largest-magnitude element,
//      nearest_int = round half to even, d = 1/iscale).
//   2. y = vec_dot(W row, converted x): per block an exact integer dot product of the quants,
//      scaled by the block's float scales (K-quants: sub-block scales folded in as integers,
//      minimums through the Q8_K bsums), summed over blocks in float in block order.
// F16/BF16 activations are kept as floats holding the rounded values (identical numerics to
// ggml's half storage, and cheaper to read). Errors throw ragform::Error("<op>", "<why>").
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/gguf/types.h"
#include "engine/ops/cpu_features.h"

namespace ragform::ops {

using gguf::TensorType;

// Throws Error(where, ...) unless n is a non-negative multiple of t's block size.
void check_row_length(TensorType t, int64_t n, const char* where);

// True for the types that can be matmul weights (F32, F16, BF16, Q4_0..Q8_0, Q2_K..Q6_K).
bool is_weight_type(TensorType t);

// ggml's vec_dot_type: the type activations are converted to before a dot with weight type t.
TensorType activation_type(TensorType t);

// Dequantises n elements (a multiple of the block size) of type t from src into dst.
// Also accepts the activation-only types Q8_1 and Q8_K.
void dequantize_row(TensorType t, const void* src, float* dst, int64_t n);

// Bytes of one converted activation row of n elements for weight type w (F16/BF16: n floats).
size_t activation_row_bytes(TensorType w, int64_t n);
// Converts one F32 activation row for a dot with weights of type w; dst holds
// activation_row_bytes(w, n) bytes. `tier` caps the quantisers' instructions (the same bytes at
// every tier; a cap below AVX-512 keeps AVX-512 out of the process, as RAGFORM_CPU promises).
void convert_activations(TensorType w, const float* x, int64_t n, void* dst,
                         CpuTier tier = CpuTier::Avx512);
// The values a converted activation row stands for (dequantised), for tests and diagnostics.
void activations_to_float(TensorType w, const void* act, int64_t n, float* dst);

// The individual quantisers (ggml quantize_row_q8_0 / q8_1 / q8_K); n a multiple of the block.
// Q8_0 and Q8_K take an AVX-512 (F, BW) body where the CPU has one; it gives the bytes of the
// scalar reference below (max |x| is order-free, the products and rounding are per element).
// `tier` below Avx512 takes the scalar body.
void quantize_row_q8_0(const float* x, void* dst, int64_t n, CpuTier tier = CpuTier::Avx512);
void quantize_row_q8_1(const float* x, void* dst, int64_t n);
void quantize_row_q8_K(const float* x, void* dst, int64_t n, CpuTier tier = CpuTier::Avx512);
// The scalar references of the two, for tests.
void quantize_row_q8_0_ref(const float* x, void* dst, int64_t n);
void quantize_row_q8_K_ref(const float* x, void* dst, int64_t n);

// Dot product of one weight row (type w, n elements) with a converted activation row.
float vec_dot(TensorType w, int64_t n, const void* w_row, const void* act_row);

// How F16 weights are multiplied in prefill (gemm.h): `exact` (the default) sums the exact fp32
// products of the F16 values in vec_dot's order, the same bits for any number of tokens; `int16`
// rounds weights and activations to 14-bit integers for VNNI int16 products on AVX512-VNNI CPUs
// (approximate: faster prefill, results that depend on how many tokens share the product).
enum class F16Gemm : uint8_t { exact, int16 };
// "exact" / "int16"; parse_f16_gemm throws UsageError(where, ...) for anything else ("fp32" is
// accepted as the old name of exact).
const char* f16_gemm_name(F16Gemm g);
F16Gemm parse_f16_gemm(const std::string& name, const char* where);

// The engine options that decide which kernel multiplies a weight, carried with the weight so
// that every matmul of a model follows the options it was loaded with (EngineOptions): `tier`
// caps the CPU tier (clamp_tier lowers it to what the CPU has), `f16` picks the F16 prefill path.
struct MatmulPolicy {
  CpuTier tier = CpuTier::Avx512;
  F16Gemm f16 = F16Gemm::exact;
};

// A 2-D weight as stored in GGUF: n_out rows of n_in elements (ggml ne = [n_in, n_out]).
struct WeightView {
  TensorType type = TensorType::F32;
  const uint8_t* data = nullptr;
  int64_t n_in = 0;   // row length (ne[0])
  int64_t n_out = 0;  // number of rows (ne[1])
  MatmulPolicy policy{};
  // The same weights in the panel layout of the exact float kernels (float_panels.h), when the
  // model packed them at load (F16/BF16 only); null otherwise, and the kernel packs a group
  // of panels at a time from `data`. `data` stays the row layout every other reader uses.
  const uint8_t* panels = nullptr;

  size_t row_bytes() const { return gguf::row_bytes(type, n_in); }
};

// y[t][r] = sum_i W[r][i] * x[t][i]: x = [n_tokens][n_in] F32, y = [n_tokens][n_out] F32.
// Activations are converted once per token into a per-thread reusable scratch; output rows are
// split across the pool's threads. Bit-identical for any thread count, and batch-invariant: row
// t of y is the same bits whatever n_tokens is (every kernel returns the vec_dot path's bits),
// except on the approximate int16 path that w.policy.f16 == int16 asks for.
// x and y must not overlap. Uses the fastest kernel of clamp_tier(w.policy.tier) for w's type: on
// AVX-512 with VNNI, Q8_0/Q5_0/Q4_0 weights go through an int8 GEMM for several tokens and a GEMV
// for one token, Q4_K/Q5_K/Q6_K through a GEMM for several tokens and (Q4_K, Q6_K) a GEMV for
// one; on AVX2 and AVX-512, F16/BF16 through one fp32 kernel over row panels in vec_dot's order
// (w.panels, float_panels.h), or int16 products when w.policy.f16 asks for them (AVX512-VNNI,
// 16+ tokens); on AVX-512, F32 through a GEMM in dot_f32's order. See gemm.h.
void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
// matmul with the kernels of clamp_tier(tier) (tests and benchmarks compare tiers with it).
void matmul_tier(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
                 CpuTier tier);

// Dequantises rows ids[0..n_ids) of w into out = [n_ids][n_in] (token embeddings). An id outside
// [0, n_out) throws naming it.
void get_rows(const WeightView& w, const int32_t* ids, int64_t n_ids, float* out);

// The whole tensor dequantised, [n_out][n_in].
std::vector<float> dequantize_tensor(const WeightView& w);

}  // namespace ragform::ops

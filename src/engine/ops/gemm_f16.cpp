// Exact F16 and BF16 weights: one kernel for prefill, decode
// and the decode of several sequences, returning vec_dot's bits for every output, so a row's
// logits do not depend on the company it keeps (batch size, prompt length, prefill or decode,
// sequences decoded together, thread count).
//
// Form (docs/performance.md, "Exact float weights in one chain"). vec_dot sums a row as one chain
// along k, so the kernel is an outer product: weights in groups of 4 panels of 16 rows
// interleaved along k (float_panels.h, packed once at load), lanes = rows, each token's activation
// broadcast. A micro-tile of 4 panels x 6 tokens (24 zmm accumulators) reads one stretch of weights
// per step (F16: 128 bytes per k, vcvtph2ps; BF16: 256 bytes per pair of k) and 6 broadcasts for 24
// FMAs or dot instructions; one token (decode) takes the same 64 rows in flight, reading each
// weight once. On the project's Zen 5 VM, 4 x 6 measured faster than 2 x 14 (fewer broadcasts per
// FMA beat fewer conversions) and than widening a group's weights to fp32 once per chunk of k.
// F16 products are exact in fp32 and an FMA adds each with one rounding, as vec_dot's
// multiply-then-add does: acc = fma(w[k], a[k], acc) along k.
// BF16 follows AVX512-BF16's vdpbf16ps (bf16_dot.h, docs/performance.md "BF16 in the dot
// instruction's order"): pairs (2j, 2j + 1) along k, the odd element's fused step first, subnormal
// inputs read as zero and tiny results flushed. Two kernels give those bits: one vdpbf16ps steps 16
// rows by a pair (kBF16Dot), or two FMAs run under MXCSR FTZ/DAZ (kBF16: AVX2, AVX-512 without
// AVX512-BF16, and Intel's cores, where vdpbf16ps retires half the FMAs' flops: measured on the
// Xeon VM, 1 per 2 cycles at a latency of 8 against 2 FMAs per cycle). On AMD's Zen 5 the
// instruction retires twice the FMAs' flops, and matmul takes it there (bf16_kernel_here).
// (F32 weights keep vec_dot's 16-lane order: gemm_f32.cpp.)
//
// The body is written once (gemm_f16_body.inc) over GCC vector types and compiled for AVX-512, for
// AVX-512 with AVX512-BF16 and for AVX2: the same bits, and the AVX2 build is what tests check on
// any x86-64 with AVX2. matmul takes it on both tiers; the scalar tier is vec_dot, the same chain
// one row at a time.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
// 64-byte vectors passed between the AVX2 build's internal (inlined) functions: no ABI crosses.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/ops/float_panels.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/simd_target.h"

namespace ragform::ops {

namespace {
typedef float v16f __attribute__((vector_size(64)));
// F16 weights; BF16 weights with FMAs under FTZ/DAZ; BF16 weights with vdpbf16ps.
enum { kF16, kBF16, kBF16Dot };
// Tokens per tile: prefill runs 6-token tiles (4 panels x 6 = 24 accumulators); a decode of N <= 6
// sequences is one tile of N, more sequences whole tiles and a partial one.
constexpr int kTileTokens = 6;
}  // namespace

RAGFORM_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl")
namespace avx512_f16 {
namespace {
#define RAGFORM_F16_WIDE 1
#define RAGFORM_F16_BF16DOT 0
#include "engine/ops/gemm_f16_body.inc"
#undef RAGFORM_F16_BF16DOT
#undef RAGFORM_F16_WIDE
}  // namespace
void run(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (w.type == TensorType::F16)
    gemm_rounded<kF16>(w, x, n_tokens, y, pool);
  else
    gemm_rounded<kBF16>(w, x, n_tokens, y, pool);
}
}  // namespace avx512_f16
RAGFORM_TARGET_END

RAGFORM_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16")
namespace avx512bf16_f16 {
namespace {
#define RAGFORM_F16_WIDE 1
#define RAGFORM_F16_BF16DOT 1
#include "engine/ops/gemm_f16_body.inc"
#undef RAGFORM_F16_BF16DOT
#undef RAGFORM_F16_WIDE
}  // namespace
void run(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  gemm_rounded<kBF16Dot>(w, x, n_tokens, y, pool);
}
}  // namespace avx512bf16_f16
RAGFORM_TARGET_END

RAGFORM_TARGET_BEGIN("avx2,fma,f16c")
namespace avx2_f16 {
namespace {
#define RAGFORM_F16_WIDE 0
#define RAGFORM_F16_BF16DOT 0
#include "engine/ops/gemm_f16_body.inc"
#undef RAGFORM_F16_BF16DOT
#undef RAGFORM_F16_WIDE
}  // namespace
void run(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  if (w.type == TensorType::F16)
    gemm_rounded<kF16>(w, x, n_tokens, y, pool);
  else
    gemm_rounded<kBF16>(w, x, n_tokens, y, pool);
}
}  // namespace avx2_f16
RAGFORM_TARGET_END

bool gemm_f16_supported(TensorType t, CpuTier tier) { return matmul_uses_panels(t, tier); }

Bf16Kernel bf16_kernel_here() {
  const CpuFeatures& f = cpu_features();
  return f.avx512bf16 && f.amd ? Bf16Kernel::dot : Bf16Kernel::fma;
}

void gemm_f16(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
              CpuTier tier, Bf16Kernel bf16) {
  if (!has_panel_layout(w.type))
    throw Error("gemm_f16", std::string("type ") + gguf::type_name(w.type) + " is not F16/BF16");
  tier = clamp_tier(tier);
  if (tier < CpuTier::Avx2) throw Error("gemm_f16", "this CPU lacks AVX2/FMA/F16C");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  if (bf16 == Bf16Kernel::automatic) bf16 = bf16_kernel_here();
  if (tier == CpuTier::Avx512 && w.type == TensorType::BF16 && bf16 == Bf16Kernel::dot &&
      cpu_features().avx512bf16)
    avx512bf16_f16::run(w, x, n_tokens, y, pool);
  else if (tier == CpuTier::Avx512)
    avx512_f16::run(w, x, n_tokens, y, pool);
  else
    avx2_f16::run(w, x, n_tokens, y, pool);
}

}  // namespace ragform::ops

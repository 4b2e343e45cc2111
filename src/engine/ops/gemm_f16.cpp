// Float weights (F16/BF16, and F32 through the same body), exact products (gemm.h): a GEMM for
// prefill and a GEMV for decode that both
// return vec_dot's bits for every output, so a row's logits do not depend on the company it keeps
// (batch size, prompt length, prefill or decode, thread count).
//
// Form. The order of vec_dot (16 lanes over k, then a fixed tree) needs one 16-float accumulator
// per output, so the GEMM is an inner-product kernel: a micro-tile of 4 weight rows x 6 tokens
// (24 zmm accumulators) loads per 16 k four rows of widened weights and six tokens' activations,
// 24 FMAs (10 loads per 24 FMAs, as the outer-product kernel this replaced had 11), and ends each
// output with a 4-step reduction tree. Activations are rounded once per token (F16: to half; BF16:
// to bf16, ggml's vec_dot operand) into rows of n_in padded to 16; a token block's rows (~256 KB)
// stay in L2 while each 4-row weight tile is widened to fp32 once per block. The GEMV widens
// weights on the fly, four rows in flight.
//
// The body is written once (gemm_f16_body.inc) over GCC vector types and compiled for AVX-512 and
// for AVX2: the two give the same bits, and the AVX2 build is what tests can check on any x86-64
// machine with AVX2. matmul takes it on the AVX-512 tier only: on AVX2 (a v16f is two ymm, the
// tile 2 x 2, F16 products as multiply and add) it measured no faster than the vec_dot path
// (pp512 2.29 vs 2.39 t/s in one alternated pair on a loaded machine), which gives the same bits.
// BF16 weights no longer use vdpbf16ps (it flushes subnormals and adds a pair per lane, another
// order than vec_dot's).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
// 64-byte vectors passed between the AVX2 build's internal (inlined) functions: no ABI crosses.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/simd_target.h"

namespace ragform::ops {

namespace {
typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));
// A token block's rounded activations: sized to stay in a 1 MB L2 beside the weight tile.
constexpr size_t kActBlockBytes = 256 * 1024;
}  // namespace

RAGFORM_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512vl")
namespace avx512_f16 {
namespace {
constexpr int kTileRows = 4, kTileTokens = 6, kGemvRows = 4;  // 24 + 4 + 1 of 32 zmm
#define RAGFORM_F16_WIDE 1
#include "engine/ops/gemm_f16_body.inc"
#undef RAGFORM_F16_WIDE
}  // namespace
void run(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  gemm(w, x, n_tokens, y, pool);
}
}  // namespace avx512_f16
RAGFORM_TARGET_END

RAGFORM_TARGET_BEGIN("avx2,fma,f16c")
namespace avx2_f16 {
namespace {
constexpr int kTileRows = 2, kTileTokens = 2, kGemvRows = 4;  // a v16f is two of the 16 ymm
#define RAGFORM_F16_WIDE 0
#include "engine/ops/gemm_f16_body.inc"
#undef RAGFORM_F16_WIDE
}  // namespace
void run(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  gemm(w, x, n_tokens, y, pool);
}
}  // namespace avx2_f16
RAGFORM_TARGET_END

bool gemm_f16_supported(TensorType t, CpuTier tier) {
  return (t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16) &&
         tier == CpuTier::Avx512;
}

void gemm_f16(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
              CpuTier tier) {
  if (w.type != TensorType::F32 && w.type != TensorType::F16 && w.type != TensorType::BF16)
    throw Error("gemm_f16",
                std::string("type ") + gguf::type_name(w.type) + " is not F32/F16/BF16");
  tier = clamp_tier(tier);
  if (tier < CpuTier::Avx2) throw Error("gemm_f16", "this CPU lacks AVX2/FMA/F16C");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  if (tier == CpuTier::Avx512)
    avx512_f16::run(w, x, n_tokens, y, pool);
  else
    avx2_f16::run(w, x, n_tokens, y, pool);
}

}  // namespace ragform::ops

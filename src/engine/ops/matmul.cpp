// Multithreaded matmul over any weight type, plus get_rows / dequantize_tensor. The math per
// output element is one vec_dot (vec_dot.cpp) of a weight row with the token's activations
// converted once to the weight type's vec_dot type (quantize_act.cpp) — ggml's mul_mat scheme.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops/float_panels.h"
#include "engine/ops/gemm.h"
#include "engine/ops/kernels.h"
#include "engine/ops/ops.h"

namespace ragform::ops {

namespace {

void check_weight(const WeightView& w, const char* where) {
  if (!is_weight_type(w.type))
    throw Error(where, std::string("type ") + gguf::type_name(w.type) + " is not a weight type");
  if (w.n_in <= 0 || w.n_out < 0)
    throw Error(where, "bad weight shape [" + std::to_string(w.n_in) + ", " +
                           std::to_string(w.n_out) + "]");
  check_row_length(w.type, w.n_in, where);
  if (w.data == nullptr && w.n_out > 0) throw Error(where, "weight has no data");
}

// Rows handed to one thread at a time are multiples of this (keeps chunk edges cache-friendly).
constexpr size_t kRowGrain = 4;
// Weight bytes per row tile (see matmul).
constexpr size_t kTileBytes = 32 * 1024;

}  // namespace

const char* f16_gemm_name(F16Gemm g) { return g == F16Gemm::int16 ? "int16" : "exact"; }

F16Gemm parse_f16_gemm(const std::string& name, const char* where) {
  if (name == "exact" || name == "fp32") return F16Gemm::exact;
  if (name == "int16") return F16Gemm::int16;
  throw UsageError(where, "expected exact or int16, got '" + name + "'");
}

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  matmul_tier(w, x, n_tokens, y, pool, w.policy.tier);
}

void matmul_tier(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
                 CpuTier tier) {
  check_weight(w, "matmul");
  if (n_tokens < 0) throw Error("matmul", "negative token count " + std::to_string(n_tokens));
  if (n_tokens == 0 || w.n_out == 0) return;
  tier = clamp_tier(tier);
  if (gemm_q8_supported(w.type, tier)) {
    if (n_tokens <= kGemvQ8MaxTokens) return gemv_q8(w, x, n_tokens, y, pool);
    return gemm_q8(w, x, n_tokens, y, pool);
  }
  // A few tokens (one, or one per sequence decoded together): the 16-token GEMM would waste most
  // of its lanes; a GEMV reading each row once where there is one.
  if (n_tokens <= kGemvKMaxTokens && gemv_k_supported(w.type, tier))
    return gemv_k(w, x, n_tokens, y, pool);
  if (n_tokens > 1 && gemm_k_supported(w.type, tier)) return gemm_k(w, x, n_tokens, y, pool);
  if (gemm_f16_int16_supported(w, n_tokens, tier)) return gemm_f16_int16(w, x, n_tokens, y, pool);
  if (gemm_f16_supported(w.type, tier)) return gemm_f16(w, x, n_tokens, y, pool, tier);
  if (gemm_f32_supported(w.type, tier)) return gemm_f32(w, x, n_tokens, y, pool);

  const DotFn dot = dot_function(w.type);
  const size_t act_bytes = activation_row_bytes(w.type, w.n_in);
  const size_t w_bytes = w.row_bytes();

  // Converted activations, [n_tokens][act_bytes]; reused across calls on this thread.
  thread_local std::vector<uint8_t> scratch;
  if (scratch.size() < act_bytes * size_t(n_tokens)) scratch.resize(act_bytes * size_t(n_tokens));
  uint8_t* act = scratch.data();

  if (n_tokens == 1) {
    convert_activations(w.type, x, w.n_in, act, tier);
  } else {
    pool.parallel_for(size_t(n_tokens), [&](size_t b, size_t e, int) {
      for (size_t t = b; t < e; ++t)
        convert_activations(w.type, x + t * size_t(w.n_in), w.n_in, act + t * act_bytes, tier);
    });
  }

  const int64_t n_out = w.n_out;
  // Rows are processed in tiles of about kTileBytes of weights; within a tile, tokens are the
  // outer loop, so one token's activations stay in L1 while the tile's rows (in L1/L2) pass
  // under it. Every output is still one independent vec_dot, so tiling never changes the bits.
  const size_t tile_rows = std::max<size_t>(1, kTileBytes / std::max<size_t>(1, w_bytes));
  pool.parallel_for(
      size_t(n_out),
      [&](size_t b, size_t e, int) {
        for (size_t r0 = b; r0 < e; r0 += tile_rows) {
          const size_t r1 = std::min(e, r0 + tile_rows);
          for (int64_t t = 0; t < n_tokens; ++t) {
            const uint8_t* a = act + size_t(t) * act_bytes;
            float* yt = y + size_t(t) * size_t(n_out);
            for (size_t r = r0; r < r1; ++r) yt[r] = dot(w.n_in, w.data + r * w_bytes, a);
          }
        }
      },
      kRowGrain);
}

void get_rows(const WeightView& w, const int32_t* ids, int64_t n_ids, float* out) {
  check_weight(w, "get_rows");
  const size_t w_bytes = w.row_bytes();
  for (int64_t i = 0; i < n_ids; ++i) {
    const int32_t id = ids[i];
    if (id < 0 || id >= w.n_out)
      throw Error("get_rows", "row id " + std::to_string(id) + " at index " + std::to_string(i) +
                                  " is outside [0, " + std::to_string(w.n_out) + ")");
    if (w.panels)  // a packed matrix (a tied output's embedding) is read from its panels
      unpack_panel_row(w, id, out + size_t(i) * size_t(w.n_in));
    else
      dequantize_row(w.type, w.data + size_t(id) * w_bytes, out + size_t(i) * size_t(w.n_in),
                     w.n_in);
  }
}

std::vector<float> dequantize_tensor(const WeightView& w) {
  check_weight(w, "dequantize_tensor");
  std::vector<float> out(size_t(w.n_in) * size_t(w.n_out));
  const size_t w_bytes = w.row_bytes();
  for (int64_t r = 0; r < w.n_out; ++r)
    dequantize_row(w.type, w.data + size_t(r) * w_bytes, out.data() + size_t(r) * size_t(w.n_in),
                   w.n_in);
  return out;
}

}  // namespace ragform::ops

// One table of the matrix kernels (issue 41): every kernel family of engine/ops x every weight type
// it takes x every CPU tier it runs on x shapes at the edges of its tiles, each combination against
// the scalar reference the project defines, as llama.cpp's test-backend-ops runs every op x type x
// shape in one harness. Each (family, type, tier) row is one ctest case, so a tier this CPU lacks
// shows as a skipped case ("skipped: no AVX512-VNNI"), never as a pass; KernelTableCoverage prints
// the matrix and fails when the engine accepts a weight type, or a kernel's own predicate (gemm.h,
// float_panels.h) claims a type, that has no row: a type or kernel added without its row is a
// failing test, not a silent gap.
//
// The contract of each family is the one its per-kernel test sets (nothing here is looser):
//   vec_dot       the dequantised weight row times the dequantised converted activations in
//                 double, within 4e-6 of sum |w a| (plus sum |m s| for Q8_1, whose s is rounded to
//                 f16) (vec_dot_test.cpp);
//   matmul and the kernels behind it: vec_dot's bits for every output, whatever the number of
//                 tokens, the tile or the thread count (gemm.h, gemm_test.cpp MatmulTier);
//   gemm_f16_int16  the bits of gemm_f16_int16_reference (approximate by design: its distance to
//                 exact products is gemm_f16_int16_test.cpp's business);
//   quantize_act  the AVX-512 quantisers give the bytes of quantize_row_q8_0_ref / _q8_K_ref;
//   dequant       get_rows (the row layout, and F16/BF16 panels) gives dequantize_row's bits.
// The per-kernel files keep the targeted cases: hand-built blocks, special values, saturation,
// panel layouts, the BF16 flush boundary.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/gguf/types.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/float_panels.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/kernels.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"
#include "random_weights.h"
#include "reference_dot.h"

using namespace ragform;
using namespace ragform::ops;
using namespace ragform::ops::testing;

namespace {

using TT = TensorType;

// ---- The table -----------------------------------------------------------------------------

// The tiers a kernel runs on: matmul's three (cpu_features.h) and the extensions some AVX-512
// kernels need on top (AVX512-VNNI: the int8 and int16 GEMMs and GEMVs; AVX512-BF16: gemm_f16's
// vdpbf16ps kernel, which automatic picks on AMD only, so it has a column of its own).
enum class Tier { Scalar, Avx2, Avx512, Avx512Vnni, Avx512Bf16 };
const Tier kTiers[] = {Tier::Scalar, Tier::Avx2, Tier::Avx512, Tier::Avx512Vnni, Tier::Avx512Bf16};

const char* tier_label(Tier t) {
  switch (t) {
    case Tier::Scalar:
      return "scalar";
    case Tier::Avx2:
      return "avx2";
    case Tier::Avx512:
      return "avx512";
    case Tier::Avx512Vnni:
      return "avx512-vnni";
    case Tier::Avx512Bf16:
      return "avx512-bf16";
  }
  return "?";
}

// Empty when this CPU runs tier t, else what it lacks.
std::string missing(Tier t) {
  const CpuFeatures& f = cpu_features();
  const bool avx512 = best_cpu_tier() == CpuTier::Avx512;
  switch (t) {
    case Tier::Scalar:
      return "";
    case Tier::Avx2:
      return clamp_tier(CpuTier::Avx2) == CpuTier::Avx2 ? "" : "no AVX2/FMA/F16C";
    case Tier::Avx512:
      return avx512 ? "" : "no AVX-512 F/BW/VL";
    case Tier::Avx512Vnni:
      return avx512 && f.avx512vnni ? "" : "no AVX512-VNNI";
    case Tier::Avx512Bf16:
      return avx512 && f.avx512bf16 ? "" : "no AVX512-BF16";
  }
  return "unknown tier";
}

enum class Family {
  VecDot,        // vec_dot per type (vec_dot.cpp; its AVX2 clone, if any, is picked at load)
  Matmul,        // matmul_tier: whatever kernel the dispatch picks for the type, tier and count
  GemvQ8,        // gemv_q8 (gemm_q8.cpp)
  GemmQ8,        // gemm_q8
  GemvK,         // gemv_k (gemv_k.cpp)
  GemmK,         // gemm_k (gemm_k.cpp)
  GemmF16,       // gemm_f16, the exact F16/BF16 panel kernels (gemm_f16.cpp)
  GemmF32,       // gemm_f32 (gemm_f32.cpp)
  GemmF16Int16,  // gemm_f16_int16, and matmul under MatmulPolicy::f16 == int16
  QuantizeAct,   // quantize_row_q8_0 / q8_K (quantize_act.cpp), by activation type
  Dequant,       // get_rows / dequantize_tensor (dequant.cpp, float_panels.cpp)
};

const char* family_name(Family f) {
  switch (f) {
    case Family::VecDot:
      return "vec_dot";
    case Family::Matmul:
      return "matmul";
    case Family::GemvQ8:
      return "gemv_q8";
    case Family::GemmQ8:
      return "gemm_q8";
    case Family::GemvK:
      return "gemv_k";
    case Family::GemmK:
      return "gemm_k";
    case Family::GemmF16:
      return "gemm_f16";
    case Family::GemmF32:
      return "gemm_f32";
    case Family::GemmF16Int16:
      return "gemm_f16_int16";
    case Family::QuantizeAct:
      return "quantize_act";
    case Family::Dequant:
      return "dequant";
  }
  return "?";
}

// The one family compared with a tolerance; every other comparison is of bits (or bytes).
bool bit_exact(Family f) { return f != Family::VecDot; }

const char* contract(Family f) {
  switch (f) {
    case Family::VecDot:
      return "within 4e-6 * (sum|w a| + sum|m s|) of the dequantised dot in double";
    case Family::GemmF16Int16:
      return "bits of gemm_f16_int16_reference (matmul under the int16 policy: that, or vec_dot's "
             "bits where it keeps the exact path)";
    case Family::QuantizeAct:
      return "bytes of quantize_row_q8_0_ref / quantize_row_q8_K_ref";
    case Family::Dequant:
      return "bits of dequantize_row";
    default:
      return "bits of vec_dot (convert_activations, one vec_dot per output)";
  }
}

// One row per (family, tier, type). Types are the weight types, except for quantize_act (the
// activation types its quantisers write).
struct Entry {
  Family family;
  Tier tier;
  std::vector<TT> types;
};

std::vector<TT> all_weight_types() { return {std::begin(kWeightTypes), std::end(kWeightTypes)}; }

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
      // Every weight type: its dot product, matmul under each tier cap, its dequantiser.
      {Family::VecDot, Tier::Scalar, all_weight_types()},
      {Family::Matmul, Tier::Scalar, all_weight_types()},
      {Family::Matmul, Tier::Avx2, all_weight_types()},
      {Family::Matmul, Tier::Avx512, all_weight_types()},
      {Family::Dequant, Tier::Scalar, all_weight_types()},
      // The kernels behind matmul, called directly, on token counts past those matmul sends them.
      {Family::GemvQ8, Tier::Avx512Vnni, {TT::Q8_0, TT::Q5_0, TT::Q4_0}},
      {Family::GemmQ8, Tier::Avx512Vnni, {TT::Q8_0, TT::Q5_0, TT::Q4_0}},
      {Family::GemvK, Tier::Avx512Vnni, {TT::Q4_K, TT::Q6_K}},
      {Family::GemmK, Tier::Avx512Vnni, {TT::Q4_K, TT::Q5_K, TT::Q6_K}},
      {Family::GemmF16, Tier::Avx2, {TT::F16, TT::BF16}},
      {Family::GemmF16, Tier::Avx512, {TT::F16, TT::BF16}},  // BF16: the FMA kernel (FTZ/DAZ)
      {Family::GemmF16, Tier::Avx512Bf16, {TT::BF16}},       // BF16: vdpbf16ps
      {Family::GemmF32, Tier::Avx512, {TT::F32}},
      {Family::GemmF16Int16, Tier::Avx512Vnni, {TT::F16}},
      {Family::QuantizeAct, Tier::Avx512, {TT::Q8_0, TT::Q8_K}},
  };
  return entries;
}

struct Row {
  Family family;
  TT type;
  Tier tier;
};

std::vector<Row> rows() {
  std::vector<Row> out;
  for (const Entry& e : table())
    for (TT t : e.types) out.push_back({e.family, t, e.tier});
  return out;
}

bool has_row(Family f, TT t, Tier tier) {
  for (const Row& r : rows())
    if (r.family == f && r.type == t && r.tier == tier) return true;
  return false;
}

// ---- Shapes ----------------------------------------------------------------------------------

struct Shape {
  int64_t n_in, n_out;
  std::vector<int64_t> tokens;  // token counts to run, ascending
};

// Row lengths of type t, in elements. Quantised: one block; three (an odd count); seven (the
// Q8_0-like GEMV's group of four blocks and three single ones); 4864, the Qwen2.5-0.5B FFN's
// (152 blocks of 32 or 19 of 256: several L2 token blocks in gemm_q8 / gemm_k, 12-token blocks in
// gemm_f32). Float types: 7 (F32: a partial 16-lane step only; BF16: odd, its last pair padded),
// 33 (two steps and one), 300 (18 steps and 12), 4864.
std::vector<int64_t> row_lengths(TT t) {
  const int64_t bs = gguf::type_info(t).block_size;
  if (bs == 1) return {7, 33, 300, 4864};
  return {bs, 3 * bs, 7 * bs, 4864};
}

// Output rows beside each length: 1 and 3 (less than a 4-row tile and a 16-row panel); 4 (one
// whole tile) and 37 (nine tiles and one; two panels and five, in one group of 64 rows); 70
// (seventeen tiles and two; a second group of panels, so two threads share the work); 8 on the
// long rows (whole tiles, half a panel).
const std::vector<int64_t> kRowsBeside[] = {{1, 3}, {4, 37}, {70}, {8}};

// 1, 2, ..., last, then the extras.
std::vector<int64_t> counts(int64_t last, std::vector<int64_t> extras = {}) {
  std::vector<int64_t> out;
  for (int64_t n = 1; n <= last; ++n) out.push_back(n);
  out.insert(out.end(), extras.begin(), extras.end());
  return out;
}

// Token counts: every count up to one past a 16-token panel, then across each kernel's larger
// boundaries. matmul: the GEMVs up to kGemv*MaxTokens (4) and the GEMMs past them, F16/BF16 tiles
// of 6, 16-token panels, the int8 GEMMs' 32-token micro-tiles; the GEMVs: two groups of four
// tokens and one; the int8 GEMMs: partial, whole and two panels, a lone panel after a pair, and
// on the long rows a second L2 token block (100); gemm_f16: tiles of 6 tokens (AVX2's micro-tile
// takes 4, 2 or 1 panels for 1, 2-3 and 4-6 tokens); gemm_f32: the one-token GEMV, tiles of 6,
// and on 4864-long rows token blocks of 12 (41 = three and five).
std::vector<int64_t> token_counts(Family f, bool long_row) {
  switch (f) {
    case Family::Matmul:
      if (long_row) return {1, 4, 5, 16, 17, 100};
      return counts(17, {31, 32, 33});
    case Family::GemvQ8:
    case Family::GemvK:
      return counts(9);
    case Family::GemmQ8:
    case Family::GemmK:
      if (long_row) return {1, 17, 33, 100};
      return counts(17, {31, 32, 33});
    case Family::GemmF16:
      if (long_row) return {1, 6, 7, 33};
      return counts(17, {33});
    case Family::GemmF32:
      if (long_row) return {1, 6, 7, 41};
      return counts(13, {33});
    default:
      return {1};
  }
}

std::vector<Shape> shapes(Family f, TT t) {
  if (f == Family::GemmF16Int16) {
    // One block; three; a 512-k chunk and a one-block tail, with 561 tokens (two token blocks of
    // 528 and 33); ten chunks. 16..49 tokens: one panel, a partial one, the 48-token micro-tile
    // and one past; 15, one short of kF16Int16MinTokens, where matmul keeps the exact path. Rows
    // of 200 are not whole blocks of 32: matmul keeps the exact path under the int16 policy
    // (a direct call is refused).
    return {{32, 1, {15, 16, 17, 47, 48, 49}},
            {96, 3, {15, 16, 17, 47, 48, 49}},
            {544, 13, {15, 16, 17, 48, 49, 561}},
            {4864, 5, {15, 16, 17, 49}},
            {200, 6, {15, 16}}};
  }
  const std::vector<int64_t> lengths = row_lengths(t);
  std::vector<Shape> out;
  for (size_t i = 0; i < lengths.size(); ++i)
    for (int64_t n_out : kRowsBeside[i])
      out.push_back({lengths[i], n_out, token_counts(f, lengths[i] == 4864)});
  if (f == Family::VecDot && gguf::type_info(t).block_size == 1)
    out.insert(out.begin(), Shape{1, 3, {1}});  // a single element
  return out;
}

// ---- References and comparisons --------------------------------------------------------------

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

uint32_t seed_of(const Row& r, const Shape& s) {
  return uint32_t(r.type) * 7919u + uint32_t(r.family) * 104729u + uint32_t(s.n_in) * 31u +
         uint32_t(s.n_out);
}

// The scalar tier's path: y[t][r] = vec_dot(row r, convert_activations(x[t])). Each output is
// independent of the other tokens, so the first n tokens' outputs are any n-token call's.
std::vector<float> vec_dot_outputs(const WeightView& w, const std::vector<float>& x,
                                   int64_t n_tokens) {
  std::vector<float> y(size_t(n_tokens * w.n_out));
  std::vector<uint8_t> act(activation_row_bytes(w.type, w.n_in));
  for (int64_t t = 0; t < n_tokens; ++t) {
    convert_activations(w.type, x.data() + t * w.n_in, w.n_in, act.data());
    for (int64_t r = 0; r < w.n_out; ++r)
      y[size_t(t * w.n_out + r)] =
          vec_dot(w.type, w.n_in, w.data + size_t(r) * w.row_bytes(), act.data());
  }
  return y;
}

// f and its bits, "1.5 (0x3fc00000)".
std::string with_bits(float f) {
  std::ostringstream o;
  o << f << " (0x" << std::hex << bits(f) << ")";
  return o.str();
}

// got against want bit for bit, both [outer][inner] (outputs: [token][row]).
::testing::AssertionResult same_bits(const std::vector<float>& got, const float* want,
                                     int64_t inner, const char* outer_name = "token",
                                     const char* inner_name = "row") {
  for (size_t i = 0; i < got.size(); ++i)
    if (bits(got[i]) != bits(want[i]))
      return ::testing::AssertionFailure()
             << outer_name << " " << int64_t(i) / inner << " " << inner_name << " "
             << int64_t(i) % inner << ": " << with_bits(got[i]) << " vs " << with_bits(want[i]);
  return ::testing::AssertionSuccess();
}

std::string where(const Row& r, const Shape& s, int64_t n_tokens, int threads) {
  std::ostringstream o;
  o << family_name(r.family) << " " << gguf::type_name(r.type) << " " << tier_label(r.tier) << " "
    << s.n_in << "x" << s.n_out << " tokens " << n_tokens << " threads " << threads;
  return o.str();
}

// Pools of 1, 2 and 3 threads, taken in turn by token count: bits must not depend on the split.
struct Pools {
  ThreadPool p[3] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  ThreadPool& for_tokens(int64_t n) { return p[n % 3]; }
};

// F16/BF16 weights packed into panels, as a model packs them at load (float_panels.h).
std::vector<uint8_t> packed(const WeightView& w) {
  std::vector<uint8_t> panels(panels_bytes(w));
  pack_panels(w, 0, panel_count(w.n_out), panels.data());
  return panels;
}

// vec_dot_test.cpp's definition of a dot: the dequantised weight row times the dequantised
// converted activations in double, with ggml's f16-rounded Q8_1 s in place of the exact sum.
// ---- The families ------------------------------------------------------------------------------

void check_vec_dot(const Row& row) {
  for (const Shape& s : shapes(row.family, row.type)) {
    const auto data = random_rows(row.type, s.n_in, s.n_out, seed_of(row, s));
    const auto x = random_activations(s.n_in, seed_of(row, s) + 1);
    std::vector<uint8_t> act(activation_row_bytes(row.type, s.n_in));
    convert_activations(row.type, x.data(), s.n_in, act.data());
    const size_t rb = gguf::row_bytes(row.type, s.n_in);
    for (int64_t r = 0; r < s.n_out; ++r) {
      const uint8_t* w = data.data() + size_t(r) * rb;
      const float got = vec_dot(row.type, s.n_in, w, act.data());
      const ReferenceDot want = reference_dot(row.type, s.n_in, w, act.data());
      ASSERT_NEAR(got, want.dot, 4e-6 * (want.abs_sum + want.s_term))
          << where(row, s, 1, 1) << " row " << r;
    }
  }
}

void check_matmul(const Row& row) {
  Pools pools;
  const CpuTier cap = row.tier == Tier::Avx2     ? CpuTier::Avx2
                      : row.tier == Tier::Avx512 ? CpuTier::Avx512
                                                 : CpuTier::Scalar;
  for (const Shape& s : shapes(row.family, row.type)) {
    const auto data = random_rows(row.type, s.n_in, s.n_out, seed_of(row, s));
    WeightView w{row.type, data.data(), s.n_in, s.n_out};
    w.policy.tier = cap;
    std::vector<uint8_t> panels;
    if (has_panel_layout(row.type)) {  // as a model loads them
      panels = packed(w);
      w.panels = panels.data();
    }
    const int64_t max_tokens = s.tokens.back();
    const auto x = random_activations(s.n_in * max_tokens, seed_of(row, s) + 1);
    const auto want = vec_dot_outputs(w, x, max_tokens);
    for (int64_t n : s.tokens) {
      ThreadPool& pool = pools.for_tokens(n);
      std::vector<float> y(size_t(n * s.n_out), NAN);
      matmul(w, x.data(), n, y.data(), pool);
      ASSERT_TRUE(same_bits(y, want.data(), s.n_out)) << where(row, s, n, pool.size());
    }
  }
}

// A kernel called directly: fn(w, x, n_tokens, y, pool).
template <typename Fn>
void check_kernel(const Row& row, Fn fn) {
  Pools pools;
  for (const Shape& s : shapes(row.family, row.type)) {
    const auto data = random_rows(row.type, s.n_in, s.n_out, seed_of(row, s));
    WeightView w{row.type, data.data(), s.n_in, s.n_out};
    const int64_t max_tokens = s.tokens.back();
    const auto x = random_activations(s.n_in * max_tokens, seed_of(row, s) + 1);
    const auto want = vec_dot_outputs(w, x, max_tokens);
    // F16/BF16: packed by the kernel a group at a time, and packed at load.
    std::vector<uint8_t> panels;
    if (has_panel_layout(row.type)) panels = packed(w);
    for (int pass = 0; pass < (panels.empty() ? 1 : 2); ++pass) {
      w.panels = pass == 0 ? nullptr : panels.data();
      for (int64_t n : s.tokens) {
        ThreadPool& pool = pools.for_tokens(n);
        std::vector<float> y(size_t(n * s.n_out), NAN);
        fn(w, x.data(), n, y.data(), pool);
        ASSERT_TRUE(same_bits(y, want.data(), s.n_out))
            << where(row, s, n, pool.size()) << (w.panels ? " packed" : " unpacked");
      }
    }
  }
}

void check_gemm_f16_int16(const Row& row) {
  Pools pools;
  for (const Shape& s : shapes(row.family, row.type)) {
    const auto data = random_rows(row.type, s.n_in, s.n_out, seed_of(row, s));
    WeightView w{row.type, data.data(), s.n_in, s.n_out};
    w.policy = {CpuTier::Avx512, F16Gemm::int16};
    const int64_t max_tokens = s.tokens.back();
    const auto x = random_activations(s.n_in * max_tokens, seed_of(row, s) + 1);
    const bool blocks = s.n_in % 32 == 0;
    std::vector<float> want16(size_t(max_tokens * s.n_out));
    if (blocks) gemm_f16_int16_reference(w, x.data(), max_tokens, want16.data());
    const auto exact = vec_dot_outputs(w, x, std::min<int64_t>(max_tokens, kF16Int16MinTokens));
    for (int64_t n : s.tokens) {
      ThreadPool& pool = pools.for_tokens(n);
      std::vector<float> y(size_t(n * s.n_out), NAN);
      if (blocks && n >= kF16Int16MinTokens) {
        gemm_f16_int16(w, x.data(), n, y.data(), pool);
        ASSERT_TRUE(same_bits(y, want16.data(), s.n_out)) << where(row, s, n, pool.size());
      }
      // matmul under the int16 policy: the int16 bits from kF16Int16MinTokens tokens on rows of
      // whole blocks, vec_dot's below or on other rows.
      if (n > kF16Int16MinTokens) continue;
      const bool takes = blocks && n >= kF16Int16MinTokens;
      std::fill(y.begin(), y.end(), NAN);
      matmul(w, x.data(), n, y.data(), pool);
      ASSERT_TRUE(same_bits(y, takes ? want16.data() : exact.data(), s.n_out))
          << where(row, s, n, pool.size()) << " through matmul, policy int16";
    }
  }
}

// A row of activations with the values that tell quantisers apart (quantize_act_test.cpp's,
// laid over blocks of bs so that every length of the table holds what fits): ties at amax 4.5,
// a zero block, NaN, infinities, the largest magnitude twice with both signs in both orders (the
// reference takes the first), a block of NaN.
std::vector<float> quantiser_row(int64_t n, int64_t bs, uint32_t seed) {
  std::vector<float> x = random_activations(n, seed);
  for (float& v : x) v *= 2.0f;
  const auto set = [&](int64_t i, float v) {
    if (i < n) x[size_t(i)] = v;
  };
  for (int64_t i = 0; i < 32; ++i) set(i, float(i % 9) - 4.5f);
  for (int64_t i = bs; i < 2 * bs; ++i) set(i, 0.0f);
  set(2 * bs + 3, std::nanf(""));
  set(3 * bs + 1, INFINITY);
  set(4 * bs + 2, -INFINITY);
  set(5 * bs, 50.0f), set(5 * bs + 10, -50.0f);
  set(6 * bs, -50.0f), set(6 * bs + 10, 50.0f);
  for (int64_t i = 9 * bs; i < 10 * bs; ++i) set(i, std::nanf(""));
  return x;
}

void check_quantize_act(const Row& row) {
  const bool q8_0 = row.type == TT::Q8_0;
  ASSERT_TRUE(q8_0 || row.type == TT::Q8_K) << "no quantiser for " << gguf::type_name(row.type);
  const int64_t bs = gguf::type_info(row.type).block_size;
  const size_t block_bytes = size_t(gguf::type_info(row.type).type_size);
  for (int64_t n : {bs, 3 * bs, 7 * bs, int64_t(4864)}) {
    const Shape s{n, 1, {1}};
    const auto x = quantiser_row(n, bs, seed_of(row, s));
    std::vector<uint8_t> got(gguf::row_bytes(row.type, n)), want(got.size());
    if (q8_0) {
      quantize_row_q8_0(x.data(), got.data(), n);
      quantize_row_q8_0_ref(x.data(), want.data(), n);
    } else {
      quantize_row_q8_K(x.data(), got.data(), n);
      quantize_row_q8_K_ref(x.data(), want.data(), n);
    }
    for (size_t b = 0; b < got.size() / block_bytes; ++b)
      ASSERT_EQ(
          std::memcmp(got.data() + b * block_bytes, want.data() + b * block_bytes, block_bytes), 0)
          << where(row, s, 1, 1) << " block " << b;
  }
}

void check_dequant(const Row& row) {
  for (const Shape& s : shapes(row.family, row.type)) {
    const auto data = random_rows(row.type, s.n_in, s.n_out, seed_of(row, s));
    WeightView w{row.type, data.data(), s.n_in, s.n_out};
    std::vector<float> want(size_t(s.n_in * s.n_out));
    for (int64_t r = 0; r < s.n_out; ++r)
      dequantize_row(row.type, data.data() + size_t(r) * w.row_bytes(),
                     want.data() + size_t(r * s.n_in), s.n_in);
    ASSERT_TRUE(same_bits(dequantize_tensor(w), want.data(), s.n_in, "row", "element"))
        << where(row, s, 1, 1) << " dequantize_tensor";
    // Every row, last first, then the first again: ids in any order, repeated.
    std::vector<int32_t> ids;
    for (int64_t r = s.n_out - 1; r >= 0; --r) ids.push_back(int32_t(r));
    ids.push_back(0);
    std::vector<float> wanted(ids.size() * size_t(s.n_in));
    for (size_t i = 0; i < ids.size(); ++i)
      std::memcpy(wanted.data() + i * size_t(s.n_in), want.data() + size_t(ids[i]) * size_t(s.n_in),
                  size_t(s.n_in) * sizeof(float));
    std::vector<uint8_t> panels;
    if (has_panel_layout(row.type)) panels = packed(w);
    for (int pass = 0; pass < (panels.empty() ? 1 : 2); ++pass) {
      w.panels = pass == 0 ? nullptr : panels.data();  // F16/BF16: read back from the panels
      std::vector<float> got(wanted.size(), NAN);
      get_rows(w, ids.data(), int64_t(ids.size()), got.data());
      ASSERT_TRUE(same_bits(got, wanted.data(), s.n_in, "id", "element"))
          << where(row, s, 1, 1) << (w.panels ? " get_rows from panels" : " get_rows");
    }
  }
}

void check_row(const Row& row) {
  switch (row.family) {
    case Family::VecDot:
      return check_vec_dot(row);
    case Family::Matmul:
      return check_matmul(row);
    case Family::GemvQ8:
      return check_kernel(row, [](const WeightView& w, const float* x, int64_t n, float* y,
                                  ThreadPool& pool) { gemv_q8(w, x, n, y, pool); });
    case Family::GemmQ8:
      return check_kernel(row, [](const WeightView& w, const float* x, int64_t n, float* y,
                                  ThreadPool& pool) { gemm_q8(w, x, n, y, pool); });
    case Family::GemvK:
      return check_kernel(row, [](const WeightView& w, const float* x, int64_t n, float* y,
                                  ThreadPool& pool) { gemv_k(w, x, n, y, pool); });
    case Family::GemmK:
      return check_kernel(row, [](const WeightView& w, const float* x, int64_t n, float* y,
                                  ThreadPool& pool) { gemm_k(w, x, n, y, pool); });
    case Family::GemmF16: {
      // Avx2: the AVX2 build; Avx512: the AVX-512 build, BF16 with its FMA kernel (automatic on
      // Intel); Avx512Bf16: BF16 with vdpbf16ps (automatic on AMD).
      const CpuTier cap = row.tier == Tier::Avx2 ? CpuTier::Avx2 : CpuTier::Avx512;
      const Bf16Kernel bf16 = row.tier == Tier::Avx512Bf16 ? Bf16Kernel::dot
                              : row.tier == Tier::Avx512   ? Bf16Kernel::fma
                                                           : Bf16Kernel::automatic;
      return check_kernel(row, [&](const WeightView& w, const float* x, int64_t n, float* y,
                                   ThreadPool& pool) { gemm_f16(w, x, n, y, pool, cap, bf16); });
    }
    case Family::GemmF32:
      return check_kernel(row, [](const WeightView& w, const float* x, int64_t n, float* y,
                                  ThreadPool& pool) { gemm_f32(w, x, n, y, pool); });
    case Family::GemmF16Int16:
      return check_gemm_f16_int16(row);
    case Family::QuantizeAct:
      return check_quantize_act(row);
    case Family::Dequant:
      return check_dequant(row);
  }
  FAIL() << "no check for family " << int(row.family);
}

// How gtest names a row in its messages.
void PrintTo(const Row& r, std::ostream* os) {
  *os << family_name(r.family) << " x " << gguf::type_name(r.type) << " x " << tier_label(r.tier);
}

class KernelTable : public ::testing::TestWithParam<Row> {};

TEST_P(KernelTable, MatchesTheScalarReference) {
  const Row& row = GetParam();
  RecordProperty("contract", contract(row.family));
  const std::string why = missing(row.tier);
  if (!why.empty()) GTEST_SKIP() << "skipped: " << why << " (" << cpu_summary() << ")";
  check_row(row);
}

std::string row_name(const ::testing::TestParamInfo<Row>& info) {
  std::string s = std::string(family_name(info.param.family)) + "_" +
                  gguf::type_name(info.param.type) + "_" + tier_label(info.param.tier);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Table, KernelTable, ::testing::ValuesIn(rows()), row_name);

// ---- Coverage --------------------------------------------------------------------------------

// Every type id the GGUF reader knows (engine/gguf/types.h), in id order.
std::vector<TT> known_types() {
  std::vector<TT> out;
  for (uint32_t id = 0; id < 256; ++id)
    if (const auto info = gguf::type_info(id)) out.push_back(info->type);
  return out;
}

// The kernels matmul picks for weights of type t under a tier cap on this CPU (matmul.cpp's
// order, by the kernels' own predicates), for the matrix: its matmul cells name what they ran.
std::string dispatched(TT t, Tier tier) {
  if (!is_weight_type(t) || !missing(tier).empty()) return "";
  const CpuTier cap = clamp_tier(tier == Tier::Avx2     ? CpuTier::Avx2
                                 : tier == Tier::Scalar ? CpuTier::Scalar
                                                        : CpuTier::Avx512);
  if (gemm_q8_supported(t, cap)) return "gemv_q8 1-4, gemm_q8 5+";
  const bool gemv = gemv_k_supported(t, cap), gemm = gemm_k_supported(t, cap);
  if (gemv && gemm) return "gemv_k 1-4, gemm_k 5+";
  if (gemm) return "vec_dot 1, gemm_k 2+";
  if (gemv) return "gemv_k 1-4, vec_dot 5+";
  if (gemm_f16_supported(t, cap)) {
    if (t != TT::BF16 || cap != CpuTier::Avx512) return "gemm_f16";
    return bf16_kernel_here() == Bf16Kernel::dot ? "gemm_f16 vdpbf16ps" : "gemm_f16 fma";
  }
  if (gemm_f32_supported(t, cap)) return "gemm_f32";
  return "vec_dot";
}

// The matrix: a line per type, a column per tier, in each cell the families with a row there
// ("=" bits, "~" tolerance; matmul with the kernels it dispatched to), "skipped (<why>)" in the
// columns this CPU cannot run.
std::string coverage_matrix() {
  std::ostringstream o;
  o << "kernel table on " << cpu_summary() << " (= bit-exact, ~ tolerance; see contracts)\n"
    << "| type |";
  for (Tier tier : kTiers) o << " " << tier_label(tier) << " |";
  o << "\n";
  int checked = 0, skipped = 0;
  for (TT t : known_types()) {
    o << "| " << gguf::type_name(t) << " |";
    for (Tier tier : kTiers) {
      std::string cell;
      for (const Entry& e : table())
        if (e.tier == tier && std::find(e.types.begin(), e.types.end(), t) != e.types.end()) {
          cell += std::string(cell.empty() ? "" : " ") + family_name(e.family);
          if (e.family == Family::Matmul && !dispatched(t, tier).empty())
            cell += "[" + dispatched(t, tier) + "]";
          cell += bit_exact(e.family) ? "=" : "~";
          if (missing(tier).empty())
            ++checked;
          else
            ++skipped;
        }
      if (cell.empty())
        cell = "-";
      else if (!missing(tier).empty())
        cell = "skipped (" + missing(tier) + "): " + cell;
      o << " " << cell << " |";
    }
    o << "\n";
  }
  o << checked << " rows checked, " << skipped << " skipped on this CPU. vec_dot runs the clone "
    << "the loader picks (target_clones: AVX2 where the CPU has it); quantize_act's rows are "
    << "activation types (q8_1 has one scalar implementation, F16/BF16 rounding is the panel "
    << "kernels'); matmul's columns are tier caps (MatmulPolicy::tier).\n";
  return o.str();
}

TEST(KernelTableCoverage, PrintsTheMatrix) {
  const std::string m = coverage_matrix();
  std::cout << m;
  RecordProperty("coverage", m);
  for (Family f : {Family::VecDot, Family::Matmul, Family::GemvQ8, Family::GemmQ8, Family::GemvK,
                   Family::GemmK, Family::GemmF16, Family::GemmF32, Family::GemmF16Int16,
                   Family::QuantizeAct, Family::Dequant})
    std::cout << "  " << family_name(f) << ": " << contract(f) << "\n";
}

// The types the engine accepts as weights (is_weight_type, and dot_function agreeing with it)
// each have a row for every tier matmul can be capped at, their dot product and their dequantiser;
// a type that is not a weight type has no row there.
TEST(KernelTableCoverage, EveryWeightTypeTheEngineAcceptsHasItsRows) {
  const std::pair<Family, Tier> every_weight_type[] = {{Family::VecDot, Tier::Scalar},
                                                       {Family::Matmul, Tier::Scalar},
                                                       {Family::Matmul, Tier::Avx2},
                                                       {Family::Matmul, Tier::Avx512},
                                                       {Family::Dequant, Tier::Scalar}};
  int accepted = 0;
  for (TT t : known_types()) {
    const bool weight = is_weight_type(t);
    bool has_dot = true;
    try {
      (void)dot_function(t);
    } catch (const Error&) {
      has_dot = false;
    }
    EXPECT_EQ(has_dot, weight) << gguf::type_name(t) << ": dot_function and is_weight_type differ";
    accepted += weight;
    for (const auto& [family, tier] : every_weight_type)
      EXPECT_EQ(has_row(family, t, tier), weight)
          << (weight ? "missing row: " : "row for a type that is not a weight type: ")
          << family_name(family) << " x " << gguf::type_name(t) << " x " << tier_label(tier);
  }
  EXPECT_GT(accepted, 0);
}

// Each kernel's own predicate, asked for every weight type and tier, names the rows the table
// must have: a type added to a kernel (or a kernel to a type) without its row fails here. The
// predicates answer for what this CPU runs, so a tier it lacks cannot be asked (printed).
TEST(KernelTableCoverage, EveryKernelTheDispatchCanPickHasARow) {
  std::vector<Row> wanted;
  for (TT t : known_types()) {
    if (!is_weight_type(t)) continue;
    for (CpuTier cap : {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512}) {
      if (gemm_q8_supported(t, cap)) {
        wanted.push_back({Family::GemvQ8, t, Tier::Avx512Vnni});
        wanted.push_back({Family::GemmQ8, t, Tier::Avx512Vnni});
      }
      if (gemm_k_supported(t, cap)) wanted.push_back({Family::GemmK, t, Tier::Avx512Vnni});
      if (gemv_k_supported(t, cap)) wanted.push_back({Family::GemvK, t, Tier::Avx512Vnni});
      if (matmul_uses_panels(t, cap) && clamp_tier(cap) == cap) {
        wanted.push_back({Family::GemmF16, t, cap == CpuTier::Avx2 ? Tier::Avx2 : Tier::Avx512});
        // gemm_f16's vdpbf16ps kernel (Bf16Kernel::dot) runs where the CPU has the instruction.
        if (t == TT::BF16 && cap == CpuTier::Avx512 && cpu_features().avx512bf16)
          wanted.push_back({Family::GemmF16, t, Tier::Avx512Bf16});
      }
      if (gemm_f32_supported(t, cap) && clamp_tier(cap) == cap)
        wanted.push_back({Family::GemmF32, t, Tier::Avx512});
      WeightView int16{t, nullptr, 32, 1};
      int16.policy = {cap, F16Gemm::int16};
      if (gemm_f16_int16_supported(int16, kF16Int16MinTokens, cap))
        wanted.push_back({Family::GemmF16Int16, t, Tier::Avx512Vnni});
    }
    // The activation quantisers with an AVX-512 body (ops.h); Q8_1 has one implementation only,
    // and F32/F16/BF16 activations are copied or rounded (the panel kernels' rounding is theirs).
    const TT a = activation_type(t);
    if ((a == TT::Q8_0 || a == TT::Q8_K) && missing(Tier::Avx512).empty())
      wanted.push_back({Family::QuantizeAct, a, Tier::Avx512});
  }
  for (const Row& w : wanted)
    EXPECT_TRUE(has_row(w.family, w.type, w.tier))
        << "missing row: " << family_name(w.family) << " x " << gguf::type_name(w.type) << " x "
        << tier_label(w.tier) << " (the engine dispatches it on this CPU)";
  // The converse: a row of a kernel behind matmul names a type its predicate takes (where this
  // CPU can ask), so the table holds no stale combination.
  for (const Row& r : rows()) {
    if (r.family == Family::VecDot || r.family == Family::Matmul || r.family == Family::Dequant ||
        !missing(r.tier).empty())
      continue;
    const bool listed = std::any_of(wanted.begin(), wanted.end(), [&](const Row& w) {
      return w.family == r.family && w.type == r.type && w.tier == r.tier;
    });
    EXPECT_TRUE(listed) << "row the engine never dispatches: " << family_name(r.family) << " x "
                        << gguf::type_name(r.type) << " x " << tier_label(r.tier);
  }
  for (Tier tier : kTiers)
    if (!missing(tier).empty())
      std::cout << "skipped: kernel predicates for " << tier_label(tier) << " (" << missing(tier)
                << ") cannot be asked on this CPU\n";
}

}  // namespace

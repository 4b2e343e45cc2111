// The AVX512-VNNI int8 kernels (gemm.h: Q8_0-like GEMM/GEMV, K-quant GEMM) against the scalar
// reference: one vec_dot per output with convert_activations, the path matmul takes on the scalar
// tier. Every kernel must match it bit for bit (same integer block sums, same float operations in
// the same order), which is what makes a row's result independent of the batch it is in. Shapes are
// odd on purpose: n_out not a multiple of the 4-row tile, 1..17 tokens (partial 16-token panels, a
// lone panel after pairs), and a long row that splits the tokens into several L2 blocks. Every tier
// of matmul_tier is checked the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/float_panels.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/ops.h"
#include "random_weights.h"

using namespace ragform;
using namespace ragform::ops;
using namespace ragform::ops::testing;

namespace {

const TensorType kQ8Types[] = {TensorType::Q8_0, TensorType::Q5_0, TensorType::Q4_0};

struct Reference {
  std::vector<float> y;       // [n_tokens][n_out], vec_dot per output
  std::vector<double> scale;  // sum |w a| per output (tolerance scale)
};

Reference reference(const WeightView& w, const std::vector<float>& x, int64_t n_tokens) {
  Reference ref;
  ref.y.resize(size_t(n_tokens * w.n_out));
  ref.scale.resize(ref.y.size());
  const auto wf = dequantize_tensor(w);
  std::vector<uint8_t> act(activation_row_bytes(w.type, w.n_in));
  std::vector<float> af(size_t(w.n_in));
  for (int64_t t = 0; t < n_tokens; ++t) {
    convert_activations(w.type, x.data() + t * w.n_in, w.n_in, act.data());
    activations_to_float(w.type, act.data(), w.n_in, af.data());
    for (int64_t r = 0; r < w.n_out; ++r) {
      const size_t i = size_t(t * w.n_out + r);
      ref.y[i] = vec_dot(w.type, w.n_in, w.data + size_t(r) * w.row_bytes(), act.data());
      double s = 0;
      for (int64_t k = 0; k < w.n_in; ++k)
        s += std::fabs(double(wf[size_t(r * w.n_in + k)]) * af[size_t(k)]);
      ref.scale[i] = s;
    }
  }
  return ref;
}

bool have_vnni() { return gemm_q8_supported(TensorType::Q8_0, best_cpu_tier()); }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST(GemmQ8, BitIdenticalToVecDotOddShapes) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI: " << cpu_summary();
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  const int64_t n_ins[] = {32, 96, 896};
  const int64_t n_outs[] = {1, 3, 4, 5, 9};
  for (TensorType t : kQ8Types)
    for (int64_t n_in : n_ins)
      for (int64_t n_out : n_outs) {
        const auto data = random_rows(t, n_in, n_out, uint32_t(n_in * 7 + n_out) + uint32_t(t));
        const WeightView w{t, data.data(), n_in, n_out};
        const auto x = random_activations(n_in * 17, uint32_t(n_in + n_out));
        const Reference ref = reference(w, x, 17);
        for (int64_t n_tokens = 1; n_tokens <= 17; ++n_tokens) {
          ThreadPool& pool = pools[n_tokens % 3];
          std::vector<float> y(size_t(n_tokens * n_out), NAN);
          gemm_q8(w, x.data(), n_tokens, y.data(), pool);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_EQ(bits(y[i]), bits(ref.y[i]))
                << gguf::type_name(t) << " " << n_in << "x" << n_out << " tokens " << n_tokens
                << " at " << i << ": " << y[i] << " vs " << ref.y[i];
        }
      }
}

TEST(GemmK, BitIdenticalToVecDotOddShapes) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2)};
  for (TensorType t : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
    for (int64_t n_in : {256, 768})
      for (int64_t n_out : {1, 3, 6}) {
        const auto data = random_rows(t, n_in, n_out, uint32_t(n_in * 5 + n_out) + uint32_t(t));
        const WeightView w{t, data.data(), n_in, n_out};
        const auto x = random_activations(n_in * 17, uint32_t(n_in * 3 + n_out));
        const Reference ref = reference(w, x, 17);
        for (int64_t n_tokens = 1; n_tokens <= 17; ++n_tokens) {
          std::vector<float> y(size_t(n_tokens * n_out), NAN);
          gemm_k(w, x.data(), n_tokens, y.data(), pools[n_tokens % 2]);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_EQ(bits(y[i]), bits(ref.y[i]))
                << gguf::type_name(t) << " " << n_in << "x" << n_out << " tokens " << n_tokens
                << " at " << i << ": " << y[i] << " vs " << ref.y[i];
        }
      }
}

TEST(GemvK, BitIdenticalToVecDot) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(2);
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K})
    for (int64_t n_in : {256, 1024, 4864}) {
      const int64_t n_out = 35;
      const auto data = random_rows(t, n_in, n_out, uint32_t(n_in) + 17 * uint32_t(t));
      const WeightView w{t, data.data(), n_in, n_out};
      const auto x = random_activations(n_in, uint32_t(n_in) * 5 + 1);
      const Reference ref = reference(w, x, 1);
      std::vector<float> y(size_t(n_out), NAN);
      gemv_k(w, x.data(), y.data(), pool);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(bits(y[i]), bits(ref.y[i])) << gguf::type_name(t) << " n_in " << n_in << " row "
                                              << i << ": " << y[i] << " vs " << ref.y[i];
    }
}

TEST(GemmK, SeveralTokenBlocksOnLongRows) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  // 4864 = 19 K-blocks: ~89 KB of packed activations per 16 tokens, so 120 tokens (8 panels)
  // span two token blocks.
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K}) {
    const int64_t n_in = 4864, n_out = 5, n_tokens = 120;
    const auto data = random_rows(t, n_in, n_out, 77 + uint32_t(t));
    const WeightView w{t, data.data(), n_in, n_out};
    const auto x = random_activations(n_in * n_tokens, 6);
    const Reference ref = reference(w, x, n_tokens);
    ThreadPool pool(2);
    std::vector<float> y(size_t(n_tokens * n_out), NAN);
    gemm_k(w, x.data(), n_tokens, y.data(), pool);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(bits(y[i]), bits(ref.y[i])) << gguf::type_name(t) << " at " << i;
  }
}

TEST(GemmQ8, SeveralTokenBlocksOnLongRows) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  // n_in 4864 (the FFN down projection): ~87 KB of packed activations per 16 tokens, so 100
  // tokens (7 panels) span two L2 token blocks and end in a lone panel.
  const int64_t n_in = 4864, n_out = 6, n_tokens = 100;
  const auto data = random_rows(TensorType::Q8_0, n_in, n_out, 99);
  const WeightView w{TensorType::Q8_0, data.data(), n_in, n_out};
  const auto x = random_activations(n_in * n_tokens, 5);
  const Reference ref = reference(w, x, n_tokens);
  ThreadPool pool(2);
  std::vector<float> y(size_t(n_tokens * n_out), NAN);
  gemm_q8(w, x.data(), n_tokens, y.data(), pool);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(bits(y[i]), bits(ref.y[i])) << "at " << i;
}

// The exact float kernels return vec_dot's bits for every output, whatever the number of tokens
// (F16/BF16: one tile of 1..14 tokens or 14-token tiles and a partial one; F32: the GEMV, 6-token
// tiles, token blocks), the tile an output falls in and the thread count, with F16/BF16 weights
// packed at load or packed by the kernel, BF16 with each of its AVX-512 kernels: a row's result
// never depends on the batch.
TEST(GemmF16, BitIdenticalToVecDotOddShapesAnyBatch) {
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  std::vector<CpuTier> tiers = {CpuTier::Avx2};
  if (best_cpu_tier() == CpuTier::Avx512) tiers.push_back(CpuTier::Avx512);
  if (best_cpu_tier() == CpuTier::Scalar) GTEST_SKIP() << "CPU lacks AVX2: " << cpu_summary();
  // n_in 7: only a partial step for F32; 300: 18 steps and a tail of 12; 4864: several token
  // blocks of F32 activations. n_out 1, 5, 13, 37: partial panels and row tiles.
  for (CpuTier tier : tiers)
    for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16})
      for (int64_t n_in : {7, 16, 300, 4864})
        for (int64_t n_out : {1, 5, 13, 37}) {
          if (t == TensorType::F32 && !gemm_f32_supported(t, tier)) continue;
          const auto data = random_rows(t, n_in, n_out, uint32_t(n_in * 3 + n_out) + uint32_t(t));
          WeightView w{t, data.data(), n_in, n_out};
          std::vector<uint8_t> panels;
          if (t != TensorType::F32 && n_out != 5) {  // n_out 5: packed by the kernel
            panels.resize(panels_bytes(w));
            pack_panels(w, 0, panel_count(n_out), panels.data());
            w.panels = panels.data();
          }
          const int64_t max_tokens = n_in == 4864 ? 41 : 19;
          const auto x = random_activations(n_in * max_tokens, uint32_t(n_in + 7 * n_out));
          const Reference ref = reference(w, x, max_tokens);
          // BF16 on AVX-512: both kernels (FMAs under FTZ/DAZ; vdpbf16ps where the CPU has it).
          std::vector<Bf16Kernel> kernels = {Bf16Kernel::automatic};
          if (t == TensorType::BF16 && tier == CpuTier::Avx512) {
            kernels = {Bf16Kernel::fma};
            if (cpu_features().avx512bf16) kernels.push_back(Bf16Kernel::dot);
          }
          for (Bf16Kernel kernel : kernels) {
            const auto run = [&](const float* xs, int64_t n_tokens, float* y, ThreadPool& pool) {
              if (t == TensorType::F32)
                gemm_f32(w, xs, n_tokens, y, pool);
              else
                gemm_f16(w, xs, n_tokens, y, pool, tier, kernel);
            };
            const char* kname = kernel == Bf16Kernel::dot ? " vdpbf16ps" : "";
            for (int64_t n_tokens : {int64_t(1), int64_t(2), int64_t(6), int64_t(7), int64_t(14),
                                     int64_t(15), max_tokens}) {
              std::vector<float> y(size_t(n_tokens * n_out), NAN);
              run(x.data(), n_tokens, y.data(), pools[n_tokens % 3]);
              for (size_t i = 0; i < y.size(); ++i)
                ASSERT_EQ(bits(y[i]), bits(ref.y[i]))
                    << tier_name(tier) << kname << " " << gguf::type_name(t) << " " << n_in << "x"
                    << n_out << " tokens " << n_tokens << " at " << i;
            }
            // The last token alone (decode) gives its row of the batch, bit for bit.
            std::vector<float> one(static_cast<size_t>(n_out));
            run(x.data() + (max_tokens - 1) * n_in, 1, one.data(), pools[1]);
            for (int64_t r = 0; r < n_out; ++r)
              ASSERT_EQ(bits(one[size_t(r)]), bits(ref.y[size_t((max_tokens - 1) * n_out + r)]))
                  << tier_name(tier) << kname << " " << gguf::type_name(t);
          }
        }
}

TEST(GemmF16, ActivationRoundingMatchesConvertActivationsOnSpecialValues) {
  if (best_cpu_tier() == CpuTier::Scalar) GTEST_SKIP() << "CPU lacks AVX2";
  // Identity weights (16 x 16) against 16 tokens whose rows are rotations of values with ties,
  // subnormals and near-overflow: y[t][j] = rounded x[t][j] exactly, so the vectorised
  // rounding is compared bit for bit with convert_activations. (No infinities: 0 * inf.)
  const float values[16] = {1.0f + 0x1p-11f,
                            1.0f + 3 * 0x1p-11f,
                            1.0f + 0x1p-8f,
                            65519.0f,
                            65504.0f,
                            1e-7f,
                            -3e-8f,
                            2.9e-8f,
                            1e30f,
                            -1.5e-5f,
                            0.1f,
                            -123.456f,
                            0x1p-24f,
                            0x1.8p-25f,
                            1.0f + 0x1p-12f,
                            -7.0e4f};
  for (TensorType t : {TensorType::F16, TensorType::BF16}) {
    std::vector<uint16_t> eye(16 * 16, 0);
    for (int j = 0; j < 16; ++j)
      eye[size_t(17 * j)] = t == TensorType::F16 ? fp32_to_fp16(1.0f) : fp32_to_bf16(1.0f);
    std::vector<float> x(16 * 16);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        float v = values[(i + j) % 16];
        if (t == TensorType::F16 && std::fabs(v) > 65519.0f) v = 0.5f;  // would overflow to inf
        x[size_t(16 * i + j)] = v;
      }
    std::vector<float> want(16 * 16);
    for (int i = 0; i < 16; ++i)
      convert_activations(t, &x[size_t(16 * i)], 16, &want[size_t(16 * i)]);
    ThreadPool pool(1);
    for (CpuTier tier : {CpuTier::Avx2, CpuTier::Avx512}) {
      if (clamp_tier(tier) != tier) continue;
      std::vector<float> y(16 * 16);
      gemm_f16({t, reinterpret_cast<const uint8_t*>(eye.data()), 16, 16}, x.data(), 16, y.data(),
               pool, tier);
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_EQ(bits(y[i]), bits(want[i]))
            << gguf::type_name(t) << " " << tier_name(tier) << " value " << x[i];
    }
  }
}

TEST(GemvQ8, BitIdenticalToVecDot) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(2);
  for (TensorType t : kQ8Types)
    for (int64_t n_in : {32, 64, 96, 224, 896, 4864}) {  // 224: 4 paired blocks + 3 single
      const int64_t n_out = 37;
      const auto data = random_rows(t, n_in, n_out, uint32_t(n_in) + 3 * uint32_t(t));
      const WeightView w{t, data.data(), n_in, n_out};
      const auto x = random_activations(n_in, uint32_t(n_in) * 11);
      const Reference ref = reference(w, x, 1);
      std::vector<float> y(size_t(n_out), NAN);
      gemv_q8(w, x.data(), y.data(), pool);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(bits(y[i]), bits(ref.y[i]))
            << gguf::type_name(t) << " n_in " << n_in << " row " << i;
    }
}

// The decode step of several sequences: every token's outputs are the reference's bits, whatever
// the number of tokens sharing the pass (each weight row is read once for all of them).
TEST(GemvQ8, SeveralTokensBitIdenticalToVecDot) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(2);
  for (TensorType t : kQ8Types)
    for (int64_t n_in : {32, 224, 896})
      for (int64_t n_tokens : {int64_t(2), int64_t(3), int64_t(5), kGemvQ8MaxTokens}) {
        const int64_t n_out = 37;
        const auto data = random_rows(t, n_in, n_out, uint32_t(n_in) + 5 * uint32_t(t));
        const WeightView w{t, data.data(), n_in, n_out};
        const auto x = random_activations(n_in * n_tokens, uint32_t(n_in * n_tokens));
        const Reference ref = reference(w, x, n_tokens);
        std::vector<float> y(size_t(n_out * n_tokens), NAN), one(static_cast<size_t>(n_out), NAN);
        gemv_q8(w, x.data(), n_tokens, y.data(), pool);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(bits(y[i]), bits(ref.y[i]))
              << gguf::type_name(t) << " n_in " << n_in << " tokens " << n_tokens << " at " << i;
        // The last token alone: the same bits as in company.
        gemv_q8(w, x.data() + size_t((n_tokens - 1) * n_in), one.data(), pool);
        for (size_t i = 0; i < one.size(); ++i)
          ASSERT_EQ(bits(one[i]), bits(y[size_t((n_tokens - 1) * n_out) + i]));
      }
}

TEST(MatmulTier, EveryTierMatchesTheScalarReference) {
  ThreadPool pool(2);
  const CpuTier tiers[] = {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512};
  for (TensorType t : kWeightTypes)
    for (int64_t n_tokens : {1, 2, 5, 16, 17}) {
      const int64_t n_in = 512, n_out = 7;
      const auto data = random_rows(t, n_in, n_out, uint32_t(t) * 13 + uint32_t(n_tokens));
      const WeightView w{t, data.data(), n_in, n_out};
      const auto x = random_activations(n_in * n_tokens, uint32_t(n_tokens));
      const Reference ref = reference(w, x, n_tokens);
      for (CpuTier tier : tiers) {
        std::vector<float> y(size_t(n_tokens * n_out), NAN);
        matmul_tier(w, x.data(), n_tokens, y.data(), pool, tier);
        // Every kernel but the int16 one is bit-identical to the vec_dot path, for any number
        // of tokens (batch invariance).
        if (gemm_f16_int16_supported(w, n_tokens, clamp_tier(tier))) {
          // F16 prefill on int16 products: its own reference (gemm_f16_int16_test.cpp).
          std::vector<float> want(y.size());
          gemm_f16_int16_reference(w, x.data(), n_tokens, want.data());
          for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(bits(y[i]), bits(want[i])) << i;
          continue;
        }
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(bits(y[i]), bits(ref.y[i])) << gguf::type_name(t) << " tier " << tier_name(tier)
                                                << " tokens " << n_tokens << " at " << i;
      }
    }
}

TEST(GemmQ8, RejectsTypesItDoesNotCover) {
  if (!have_vnni()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(1);
  std::vector<uint8_t> data(4096);
  std::vector<float> x(256), y(4);
  EXPECT_THROW(gemm_q8({TensorType::Q4_K, data.data(), 256, 2}, x.data(), 1, y.data(), pool),
               Error);
  EXPECT_THROW(gemm_q8({TensorType::Q8_0, data.data(), 40, 2}, x.data(), 1, y.data(), pool), Error);
  EXPECT_FALSE(gemm_q8_supported(TensorType::Q8_0, CpuTier::Avx2));
  EXPECT_FALSE(gemm_q8_supported(TensorType::F16, CpuTier::Avx512));
  EXPECT_THROW(gemm_k({TensorType::Q8_0, data.data(), 256, 2}, x.data(), 1, y.data(), pool), Error);
  EXPECT_THROW(gemm_k({TensorType::Q4_K, data.data(), 128, 2}, x.data(), 1, y.data(), pool), Error);
  EXPECT_FALSE(gemm_k_supported(TensorType::Q3_K, CpuTier::Avx512));
  EXPECT_THROW(gemv_k({TensorType::Q5_K, data.data(), 256, 2}, x.data(), y.data(), pool), Error);
}

TEST(CpuFeatures, TierNamesClampAndParse) {
  EXPECT_EQ(parse_tier("scalar", "t"), CpuTier::Scalar);
  EXPECT_EQ(parse_tier("avx2", "t"), CpuTier::Avx2);
  EXPECT_EQ(parse_tier("avx512", "t"), CpuTier::Avx512);
  EXPECT_THROW(parse_tier("sse9", "t"), UsageError);
  for (CpuTier t : {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512})
    EXPECT_EQ(parse_tier(tier_name(t), "t"), t);
  EXPECT_EQ(clamp_tier(CpuTier::Scalar), CpuTier::Scalar);
  EXPECT_LE(int(clamp_tier(CpuTier::Avx512)), int(best_cpu_tier()));
  const CpuFeatures& f = cpu_features();
  // AVX-512 implies AVX2 on every CPU made; the tier must follow the flags.
  if (best_cpu_tier() == CpuTier::Avx512) {
    EXPECT_TRUE(f.avx512f && f.avx512bw && f.avx2);
  }
  if (f.avx512vnni) {
    EXPECT_TRUE(f.avx512f);
  }
  EXPECT_NE(cpu_summary().find(tier_name(best_cpu_tier())), std::string::npos);
}

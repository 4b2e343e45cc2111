// F16 prefill on int16 products (gemm.h, gemm_f16_int16.cpp): the AVX512-VNNI kernel is bit for
// bit its scalar reference on odd shapes (rows not a multiple of the 4-row tile, partial panels,
// k chunks with a tail, two token blocks); both agree with exact products within the rounding
// bound of 14-bit integers; non-finite inputs show in the outputs they touch and nowhere else;
// the largest block sum does not overflow; and matmul takes the path only where it should.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/ops.h"
#include "random_weights.h"

using namespace ragform;
using namespace ragform::ops;
using namespace ragform::ops::testing;

namespace {

bool have_kernel() { return best_cpu_tier() == CpuTier::Avx512 && cpu_features().avx512vnni; }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<uint8_t> f16_rows(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = fp32_to_fp16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

TEST(GemmF16Int16, KernelIsItsReferenceBitForBit) {
  if (!have_kernel()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2)};
  // n_in 32: one block; 544: a 512-k chunk and a one-block tail; 4864: ten chunks (Qwen2.5's
  // FFN). n_out 1, 3, 13: tiles of 1..4 rows. 561 tokens: two token blocks (528 + 33).
  for (int64_t n_in : {32, 96, 544, 4864})
    for (int64_t n_out : {1, 3, 13}) {
      const auto data = random_rows(TensorType::F16, n_in, n_out, uint32_t(n_in * 5 + n_out));
      const WeightView w{TensorType::F16, data.data(), n_in, n_out};
      const int64_t max_tokens = n_in >= 544 ? 561 : 49;
      const auto x = random_activations(n_in * max_tokens, uint32_t(n_in + 3 * n_out));
      std::vector<float> want(size_t(max_tokens * n_out));
      gemm_f16_int16_reference(w, x.data(), max_tokens, want.data());
      for (int64_t n_tokens : {int64_t(16), int64_t(17), int64_t(47), int64_t(48), max_tokens}) {
        std::vector<float> y(size_t(n_tokens * n_out), NAN);
        gemm_f16_int16(w, x.data(), n_tokens, y.data(), pools[n_tokens % 2]);
        // The reference of n tokens is the first n rows of the reference of more: each token is
        // quantised on its own.
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(bits(y[i]), bits(want[i])) << n_in << "x" << n_out << " tokens " << n_tokens
                                               << " at " << i << ": " << y[i] << " vs " << want[i];
      }
    }
}

TEST(GemmF16Int16, WithinTheRoundingBoundOfExactProducts) {
  // Weights rounded to steps of max|row| / 8191, activations to steps of max|block| / 8191:
  // |error| <= sum_k (|x_k| max|row| + |w_k| max|block(k)|) / 16382, plus float rounding.
  const int64_t n_in = 896, n_out = 9, n_tokens = 20;
  const auto data = random_rows(TensorType::F16, n_in, n_out, 7);
  auto x = random_activations(n_in * n_tokens, 8);
  for (int64_t k = 0; k < n_in; k += 37) x[size_t(k)] *= 50.0f;  // outlier channels
  const WeightView w{TensorType::F16, data.data(), n_in, n_out};
  std::vector<float> y(size_t(n_out * n_tokens));
  gemm_f16_int16_reference(w, x.data(), n_tokens, y.data());
  const auto wf = dequantize_tensor(w);
  double worst = 0;
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < n_out; ++r) {
      const float* xr = x.data() + t * n_in;
      const float* wr = wf.data() + r * n_in;
      double row_max = 0, exact = 0, bound = 0, mag = 0;
      for (int64_t k = 0; k < n_in; ++k) row_max = std::max(row_max, std::fabs(double(wr[k])));
      for (int64_t b = 0; b < n_in / 32; ++b) {
        double block_max = 0;
        for (int k = 0; k < 32; ++k)
          block_max = std::max(block_max, std::fabs(double(xr[b * 32 + k])));
        for (int k = 0; k < 32; ++k) {
          const double wk = wr[b * 32 + k], xk = xr[b * 32 + k];
          exact += wk * xk;
          mag += std::fabs(wk * xk);
          bound += (std::fabs(xk) * row_max + std::fabs(wk) * block_max) / 16382.0;
        }
      }
      bound += 1e-6 * mag;
      const double err = std::fabs(double(y[size_t(t * n_out + r)]) - exact);
      ASSERT_LE(err, bound) << "token " << t << " row " << r;
      worst = std::max(worst, err / bound);
    }
  // Not vacuous: the bound is within an order of magnitude of the errors seen.
  EXPECT_GT(worst, 0.01);
}

TEST(GemmF16Int16, NonFiniteValuesShowOnlyWhereTheyAreUsed) {
  const int64_t n_in = 64, n_out = 4, n_tokens = 16;
  std::vector<float> wv(size_t(n_in * n_out), 0.25f);
  wv[size_t(2 * n_in + 5)] = std::numeric_limits<float>::infinity();  // row 2
  const auto data = f16_rows(wv);
  const WeightView w{TensorType::F16, data.data(), n_in, n_out};
  std::vector<float> x(size_t(n_in * n_tokens), 1.0f);
  x[size_t(3 * n_in + 40)] = NAN;                                     // token 3
  x[size_t(7 * n_in + 1)] = -std::numeric_limits<float>::infinity();  // token 7
  std::vector<float> y(size_t(n_out * n_tokens)), want(y.size());
  gemm_f16_int16_reference(w, x.data(), n_tokens, want.data());
  if (have_kernel()) {
    ThreadPool pool(2);
    gemm_f16_int16(w, x.data(), n_tokens, y.data(), pool);
  } else {
    y = want;
  }
  for (const auto* out : {&y, &want})
    for (int64_t t = 0; t < n_tokens; ++t)
      for (int64_t r = 0; r < n_out; ++r) {
        const float v = (*out)[size_t(t * n_out + r)];
        if (r == 2 || t == 3 || t == 7)
          EXPECT_FALSE(std::isfinite(v)) << "token " << t << " row " << r;
        else
          EXPECT_FLOAT_EQ(v, 0.25f * float(n_in)) << "token " << t << " row " << r;
      }
}

TEST(GemmF16Int16, LargestBlockSumDoesNotOverflowAndZerosStayZero) {
  // Every weight and activation at its row / block maximum, all positive: each block sums
  // 32 x 8191^2, the largest an int32 has to hold. A zero row and a zero token give exact zeros.
  const int64_t n_in = 128, n_out = 2, n_tokens = 17;
  std::vector<float> wv(size_t(n_in * n_out), 3.0f);
  for (int64_t k = 0; k < n_in; ++k) wv[size_t(n_in + k)] = 0.0f;
  const auto data = f16_rows(wv);
  const WeightView w{TensorType::F16, data.data(), n_in, n_out};
  std::vector<float> x(size_t(n_in * n_tokens), 1000.0f);
  for (int64_t k = 0; k < n_in; ++k) x[size_t(5 * n_in + k)] = 0.0f;
  std::vector<float> y(size_t(n_out * n_tokens), NAN);
  if (have_kernel()) {
    ThreadPool pool(1);
    gemm_f16_int16(w, x.data(), n_tokens, y.data(), pool);
  } else {
    gemm_f16_int16_reference(w, x.data(), n_tokens, y.data());
  }
  for (int64_t t = 0; t < n_tokens; ++t) {
    EXPECT_NEAR(y[size_t(t * n_out)], t == 5 ? 0.0 : 3000.0 * n_in, 1e-3) << t;
    EXPECT_EQ(y[size_t(t * n_out + 1)], 0.0f) << t;
  }
}

TEST(GemmF16Int16, MatmulTakesItForLongPromptsOnly) {
  if (!have_kernel()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(2);
  for (int64_t n_in : {int64_t(256), int64_t(200)}) {  // 200: not a multiple of 32
    const int64_t n_out = 6;
    const auto data = random_rows(TensorType::F16, n_in, n_out, uint32_t(n_in));
    // The int16 path is taken only when the policy asks for it (the default is exact).
    WeightView w{TensorType::F16, data.data(), n_in, n_out};
    w.policy.f16 = F16Gemm::int16;
    for (int64_t n_tokens : {int64_t(kF16Int16MinTokens - 1), kF16Int16MinTokens}) {
      const auto x = random_activations(n_in * n_tokens, uint32_t(n_tokens));
      std::vector<float> y(size_t(n_out * n_tokens)), fp32(y.size()), int16(y.size());
      gemm_f16(w, x.data(), n_tokens, fp32.data(), pool);
      const bool takes = n_in % 32 == 0 && n_tokens >= kF16Int16MinTokens;
      EXPECT_EQ(gemm_f16_int16_supported(w, n_tokens, CpuTier::Avx512), takes);
      EXPECT_FALSE(gemm_f16_int16_supported(w, n_tokens, CpuTier::Avx2));
      if (takes) gemm_f16_int16_reference(w, x.data(), n_tokens, int16.data());
      matmul_tier(w, x.data(), n_tokens, y.data(), pool, CpuTier::Avx512);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(bits(y[i]), bits(takes ? int16[i] : fp32[i])) << n_in << " " << n_tokens;
      // A policy of F16Gemm::exact keeps every F16 product on fp32 FMA.
      WeightView exact = w;
      exact.policy.f16 = F16Gemm::exact;
      EXPECT_FALSE(gemm_f16_int16_supported(exact, n_tokens, CpuTier::Avx512));
      matmul_tier(exact, x.data(), n_tokens, y.data(), pool, CpuTier::Avx512);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(bits(y[i]), bits(fp32[i]));
      matmul(exact, x.data(), n_tokens, y.data(), pool);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(bits(y[i]), bits(fp32[i]));
    }
  }
  // Not F16, or rows not a multiple of 32: refused.
  const WeightView bf16{TensorType::BF16, nullptr, 64, 0};
  EXPECT_FALSE(gemm_f16_int16_supported(bf16, 64, CpuTier::Avx512));
  std::vector<uint8_t> data(200 * 2 * 2);
  std::vector<float> x(200 * 16), y(2 * 16);
  EXPECT_THROW(gemm_f16_int16({TensorType::F16, data.data(), 200, 2}, x.data(), 16, y.data(), pool),
               Error);
  EXPECT_THROW(
      gemm_f16_int16_reference({TensorType::BF16, data.data(), 64, 2}, x.data(), 16, y.data()),
      Error);
}

}  // namespace

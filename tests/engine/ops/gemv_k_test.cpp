// gemv_k (gemm.h: the one-token Q4_K / Q6_K GEMV with AVX512-VNNI) against the scalar reference,
// one vec_dot per row with the Q8_K activations of convert_activations. The kernel claims bit
// identity, so every output is compared bit for bit. Shapes are odd on purpose: row lengths of 1,
// 3, 7 and 19 blocks (not multiples of 1024), row counts that leave 1..3 rows after the 4-row
// tiles and that split unevenly over 2 threads, and 1 and 2 threads. A saturation case puts every
// quant, scale and activation at its extreme.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/gemm.h"
#include "engine/ops/ops.h"
#include "random_weights.h"

using namespace ragform;
using namespace ragform::ops;
using namespace ragform::ops::testing;

namespace {

bool have_kernel() { return gemv_k_supported(TensorType::Q4_K, best_cpu_tier()); }

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<float> reference(const WeightView& w, const std::vector<float>& x) {
  std::vector<uint8_t> act(activation_row_bytes(w.type, w.n_in));
  convert_activations(w.type, x.data(), w.n_in, act.data());
  std::vector<float> y(size_t(w.n_out));
  for (int64_t r = 0; r < w.n_out; ++r)
    y[size_t(r)] = vec_dot(w.type, w.n_in, w.data + size_t(r) * w.row_bytes(), act.data());
  return y;
}

void expect_bit_identical(const WeightView& w, const std::vector<float>& x, ThreadPool& pool) {
  const auto want = reference(w, x);
  std::vector<float> y(size_t(w.n_out) + 1, NAN);
  gemv_k(w, x.data(), y.data(), pool);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(bits(y[i]), bits(want[i]))
        << gguf::type_name(w.type) << " " << w.n_in << "x" << w.n_out << " threads " << pool.size()
        << " row " << i << ": " << y[i] << " vs " << want[i];
  EXPECT_TRUE(std::isnan(y[want.size()])) << "wrote past the last row";
}

}  // namespace

TEST(GemvK, BitIdenticalToVecDotOnOddShapes) {
  if (!have_kernel()) GTEST_SKIP() << "CPU lacks AVX512-VNNI: " << cpu_summary();
  ThreadPool one(1), two(2);
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K})
    for (int64_t n_in : {256, 768, 1792, 4864})
      for (int64_t n_out : {1, 2, 3, 4, 5, 18, 37, 71}) {
        const uint32_t seed = uint32_t(n_in * 131 + n_out * 7) + 17 * uint32_t(t);
        const auto data = random_rows(t, n_in, n_out, seed);
        const WeightView w{t, data.data(), n_in, n_out};
        const auto x = random_activations(n_in, seed + 1);
        expect_bit_identical(w, x, one);
        expect_bit_identical(w, x, two);
      }
}

TEST(GemvK, ExtremeQuantsScalesAndActivations) {
  if (!have_kernel()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(2);
  const int64_t n_in = 512, n_out = 9;
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K})
    for (float sign : {1.0f, -1.0f}) {
      // All bits set: quants 15 / 63, Q4_K scales and mins 63, Q6_K scales -1; every activation
      // equal, so all quantise to -128 (sign +1) or 127 (sign -1): the largest pair products.
      std::vector<uint8_t> data(gguf::row_bytes(t, n_in) * size_t(n_out), 0xFF);
      const size_t bsz = size_t(gguf::type_info(t).type_size);
      for (size_t b = 0; b < data.size() / bsz; ++b)
        for (int off : half_fields(t)) {
          const uint16_t h = fp32_to_fp16(0.01f * float(1 + b % 5));
          std::memcpy(data.data() + b * bsz + size_t(off), &h, 2);
        }
      const WeightView w{t, data.data(), n_in, n_out};
      expect_bit_identical(w, std::vector<float>(size_t(n_in), 3.0f * sign), pool);
    }
}

TEST(GemvK, MatmulUsesItForOneTokenAndAgrees) {
  if (!have_kernel()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(2);
  const int64_t n_in = 1280, n_out = 23;
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K}) {
    const auto data = random_rows(t, n_in, n_out, 99 + uint32_t(t));
    const WeightView w{t, data.data(), n_in, n_out};
    const auto x = random_activations(n_in, 5);
    std::vector<float> fast(static_cast<size_t>(n_out)), scalar(fast.size());
    matmul_tier(w, x.data(), 1, fast.data(), pool, CpuTier::Avx512);
    matmul_tier(w, x.data(), 1, scalar.data(), pool, CpuTier::Scalar);
    for (size_t i = 0; i < fast.size(); ++i) ASSERT_EQ(bits(fast[i]), bits(scalar[i])) << i;
  }
}

// The decode step of several sequences: each token's outputs are the reference's bits (the same
// as the token alone), the rows of a token at y + token * n_out; and matmul takes this path for
// a few tokens of Q4_K/Q6_K, still bit-identical to the scalar tier.
TEST(GemvK, SeveralTokensBitIdenticalToVecDot) {
  if (!have_kernel()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(2);
  for (TensorType t : {TensorType::Q4_K, TensorType::Q6_K})
    for (int64_t n_in : {256, 4864})
      for (int64_t n_tokens : {int64_t(2), int64_t(3), kGemvKMaxTokens}) {
        const int64_t n_out = 37;
        const uint32_t seed = uint32_t(n_in + n_tokens) * 7 + uint32_t(t);
        const auto data = random_rows(t, n_in, n_out, seed);
        const WeightView w{t, data.data(), n_in, n_out};
        const auto x = random_activations(n_in * n_tokens, seed + 1);
        std::vector<float> y(size_t(n_out * n_tokens), NAN), scalar(y.size());
        gemv_k(w, x.data(), n_tokens, y.data(), pool);
        for (int64_t k = 0; k < n_tokens; ++k) {
          const std::vector<float> xk(x.begin() + k * n_in, x.begin() + (k + 1) * n_in);
          const auto want = reference(w, xk);
          for (size_t i = 0; i < want.size(); ++i)
            ASSERT_EQ(bits(y[size_t(k * n_out) + i]), bits(want[i]))
                << gguf::type_name(t) << " n_in " << n_in << " tokens " << n_tokens << " token "
                << k << " row " << i;
        }
        matmul_tier(w, x.data(), n_tokens, y.data(), pool, CpuTier::Avx512);
        matmul_tier(w, x.data(), n_tokens, scalar.data(), pool, CpuTier::Scalar);
        for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(bits(y[i]), bits(scalar[i])) << i;
      }
}

TEST(GemvK, RejectsOtherTypesAndBadRows) {
  if (!have_kernel()) GTEST_SKIP() << "CPU lacks AVX512-VNNI";
  ThreadPool pool(1);
  std::vector<uint8_t> data(4096);
  std::vector<float> x(512), y(2);
  EXPECT_THROW(gemv_k({TensorType::Q5_K, data.data(), 256, 2}, x.data(), y.data(), pool), Error);
  EXPECT_THROW(gemv_k({TensorType::Q4_K, data.data(), 100, 2}, x.data(), y.data(), pool), Error);
}

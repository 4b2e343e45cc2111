// vec_dot against its definition: dequantise the weight row and the converted activation row,
// then a double-precision dot. The only differences allowed are float rounding of the per-block
// scale products and of the running sum (and, for Q8_1, ggml's f16 rounding of s = d * sum(q)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"
#include "random_weights.h"
#include "reference_dot.h"

using namespace ragform;
using namespace ragform::ops;
using namespace ragform::ops::testing;

TEST(VecDot, MatchesDequantisedDotForEveryType) {
  for (TensorType t : kWeightTypes) {
    for (int64_t n : {256, 768, 4864}) {
      auto w = random_rows(t, n, 1, uint32_t(n) * 7 + uint32_t(t));
      auto x = random_activations(n, uint32_t(n) + 99);
      std::vector<uint8_t> act(activation_row_bytes(t, n));
      convert_activations(t, x.data(), n, act.data());
      const float got = vec_dot(t, n, w.data(), act.data());
      const ReferenceDot ref = reference_dot(t, n, w.data(), act.data());
      // Per-element float products and a float running sum: a few ulp of sum |w a|.
      const double tol = 4e-6 * (ref.abs_sum + ref.s_term);
      EXPECT_NEAR(got, ref.dot, tol) << gguf::type_name(t) << " n=" << n;
      EXPECT_GT(ref.abs_sum, 1.0) << gguf::type_name(t);  // not a vacuous all-zero row
    }
  }
}

TEST(VecDot, QuantisedActivationsStayCloseToFloatDot) {
  // The activation rounding itself: |dot(W, q(x)) - dot(W, x)| is bounded by the quantisation
  // step, sum |w_i| * d_block / 2 (8-bit: d = amax/127), which for N(0,1) data is ~0.5% of
  // sum |w_i x_i|. This catches a wrong scale, sign or ordering of the activation blocks.
  for (TensorType t : kWeightTypes) {
    const int64_t n = 1024;
    auto w = random_rows(t, n, 1, 5 + uint32_t(t));
    auto x = random_activations(n, 17);
    std::vector<float> wf(static_cast<size_t>(n));
    dequantize_row(t, w.data(), wf.data(), n);
    double exact = 0, abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      exact += double(wf[size_t(i)]) * x[size_t(i)];
      abs_sum += std::fabs(double(wf[size_t(i)]) * x[size_t(i)]);
    }
    std::vector<uint8_t> act(activation_row_bytes(t, n));
    convert_activations(t, x.data(), n, act.data());
    const float got = vec_dot(t, n, w.data(), act.data());
    double bound = 1e-5 * abs_sum;
    const TensorType a = activation_type(t);
    if (a == TensorType::Q8_0 || a == TensorType::Q8_1 || a == TensorType::Q8_K) {
      double wsum = 0, amax = 0;
      for (int64_t i = 0; i < n; ++i) {
        wsum += std::fabs(wf[size_t(i)]);
        amax = std::max(amax, double(std::fabs(x[size_t(i)])));
      }
      // half a step, plus the f16 rounding of d (Q8_0/Q8_1): 127 * d * 2^-11 = amax * 2^-11.
      bound = wsum * amax * (0.5 / 127.0 + 0x1p-11) + 1e-5 * abs_sum;
    } else if (t == TensorType::F16) {
      bound = abs_sum * 0x1p-11 + 1e-5 * abs_sum;
    } else if (t == TensorType::BF16) {
      bound = abs_sum * 0x1p-8 + 1e-5 * abs_sum;
    }
    EXPECT_NEAR(got, exact, bound) << gguf::type_name(t);
  }
}

TEST(VecDot, F16KernelConvertsEveryHalfExactly) {
  // The F16 kernel's branch-free half -> float conversion against the reference conversion, for
  // every half value (subnormals, infinities and NaNs included): a one-hot activation picks out
  // one weight, so the dot must equal that weight converted.
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t w[16] = {};
    float a[16] = {};
    const int k = int(h % 16);
    w[k] = uint16_t(h);
    a[k] = 1.0f;
    const float got = vec_dot(TensorType::F16, 16, w, a);
    const float want = fp16_to_fp32(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(got, want) << "half 0x" << std::hex << h;
    }
  }
}

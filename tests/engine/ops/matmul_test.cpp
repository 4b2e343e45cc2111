// matmul against a naive reference (dequantised weights times dequantised converted activations,
// in double) for every weight type, several shapes and thread counts; results must also be
// bit-identical across thread counts, since each output element is one independent vec_dot.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/ops/ops.h"
#include "random_weights.h"

using namespace ragform;
using namespace ragform::ops;
using namespace ragform::ops::testing;

namespace {

struct Shape {
  int64_t n_in, n_out, n_tokens;
};

// y_ref[t][r] = sum_i deq(W)[r][i] * deq(convert(x[t]))[i], and the scale sum |w a| per output.
void naive(const WeightView& w, const std::vector<float>& x, int64_t n_tokens,
           std::vector<double>& y, std::vector<double>& scale) {
  const auto wf = dequantize_tensor(w);
  y.assign(size_t(n_tokens * w.n_out), 0.0);
  scale.assign(y.size(), 0.0);
  std::vector<uint8_t> act(activation_row_bytes(w.type, w.n_in));
  std::vector<float> af(static_cast<size_t>(w.n_in));
  for (int64_t t = 0; t < n_tokens; ++t) {
    convert_activations(w.type, x.data() + t * w.n_in, w.n_in, act.data());
    activations_to_float(w.type, act.data(), w.n_in, af.data());
    for (int64_t r = 0; r < w.n_out; ++r) {
      double s = 0, a = 0;
      for (int64_t i = 0; i < w.n_in; ++i) {
        const double p = double(wf[size_t(r * w.n_in + i)]) * af[size_t(i)];
        s += p;
        a += std::fabs(p);
      }
      y[size_t(t * w.n_out + r)] = s;
      scale[size_t(t * w.n_out + r)] = a;
    }
  }
}

}  // namespace

TEST(Matmul, MatchesNaiveReferenceAllTypesShapesThreads) {
  const Shape shapes[] = {{256, 1, 1}, {256, 7, 3}, {512, 33, 5}, {768, 64, 2}};
  ThreadPool pools[] = {ThreadPool(1), ThreadPool(2), ThreadPool(3)};
  for (TensorType t : kWeightTypes) {
    for (const Shape& s : shapes) {
      const auto data = random_rows(t, s.n_in, s.n_out, uint32_t(s.n_out) * 31 + uint32_t(t));
      const WeightView w{t, data.data(), s.n_in, s.n_out};
      const auto x = random_activations(s.n_in * s.n_tokens, uint32_t(s.n_in + s.n_tokens));
      std::vector<double> ref, scale;
      naive(w, x, s.n_tokens, ref, scale);
      std::vector<float> first;
      for (auto& pool : pools) {
        std::vector<float> y(size_t(s.n_tokens * s.n_out), NAN);
        matmul(w, x.data(), s.n_tokens, y.data(), pool);
        for (size_t i = 0; i < y.size(); ++i) {
          // The Q8_1 s = f16(d * sum q) term is the one deviation from the dequantised reference;
          // it is below 2^-11 * |m s| per block, bounded here by 1e-3 of the row's |w a| sum.
          const double tol = (activation_type(t) == TensorType::Q8_1 ? 1e-3 : 4e-6) * scale[i];
          ASSERT_NEAR(y[i], ref[i], tol)
              << gguf::type_name(t) << " shape " << s.n_in << "x" << s.n_out << " tokens "
              << s.n_tokens << " threads " << pool.size() << " at " << i;
        }
        if (first.empty()) {
          first = y;
        } else {
          ASSERT_EQ(std::memcmp(first.data(), y.data(), y.size() * sizeof(float)), 0)
              << gguf::type_name(t) << ": thread count changed the bits";
        }
      }
    }
  }
}

TEST(Matmul, RejectsBadShapesAndTypes) {
  ThreadPool pool(2);
  std::vector<uint8_t> data(4096);
  std::vector<float> x(512), y(512);
  EXPECT_THROW(matmul({TensorType::Q4_K, data.data(), 100, 2}, x.data(), 1, y.data(), pool), Error);
  EXPECT_THROW(matmul({TensorType::Q8_K, data.data(), 256, 1}, x.data(), 1, y.data(), pool), Error);
  EXPECT_THROW(matmul({TensorType::F32, nullptr, 4, 2}, x.data(), 1, y.data(), pool), Error);
  EXPECT_THROW(matmul({TensorType::F32, data.data(), 4, 2}, x.data(), -1, y.data(), pool), Error);
  // Zero tokens is a no-op.
  y[0] = 42.0f;
  matmul({TensorType::F32, data.data(), 4, 2}, x.data(), 0, y.data(), pool);
  EXPECT_EQ(y[0], 42.0f);
}

TEST(Matmul, HandComputedF32) {
  // W = [[1, 2], [3, 4], [-1, 0.5]], x = [[1, 1], [2, -1]] -> y = [[3, 7, -0.5], [0, 2, -2.5]].
  const float wdata[6] = {1, 2, 3, 4, -1, 0.5f};
  const float x[4] = {1, 1, 2, -1};
  float y[6];
  ThreadPool pool(2);
  matmul({TensorType::F32, reinterpret_cast<const uint8_t*>(wdata), 2, 3}, x, 2, y, pool);
  const float want[6] = {3, 7, -0.5f, 0, 2, -2.5f};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]) << i;
}

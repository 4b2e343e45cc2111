// Ops on real llama-quantize output: ../shared/fixtures/models/tinyq-<type>.gguf were quantised
// from tinyq-f32.gguf (tinyq-qwen2-* from tinyq-qwen2-f32.gguf), so every dequantised 2-D weight
// must reproduce the F32 original within its type's quantisation error, and vec_dot on those
// real blocks must equal the dequantised dot.
//
// Bounds on the relative RMS error ||deq(W) - W|| / ||W|| (W ~ N(0, 1/fan_in), i.e. Gaussian):
// an optimal b-bit scalar quantiser of a Gaussian has relative RMS error about 0.34 (2 bits),
// 0.19 (3), 0.10 (4), 0.05 (5), 0.025 (6) and 0.006 (8; Lloyd-Max / Panter-Dite). Block-scaled
// ggml types come close to that; the bounds are ~1.5x those figures, far below what any layout
// bug gives (a wrong element order or scale makes the error ~1.4). F16 and BF16 must be the F32
// values rounded to nearest even, bit for bit (llama-quantize converts with RNE).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"
#include "random_weights.h"
#include "support/test_support.h"

using namespace ragform;
using namespace ragform::ops;

namespace {

double rel_rms_bound(TensorType t) {
  switch (t) {
    case TensorType::Q8_0:
      return 0.01;
    case TensorType::Q6_K:
      return 0.04;
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q5_K:
      return 0.075;
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q4_K:
      return 0.15;
    case TensorType::Q3_K:
      return 0.28;
    case TensorType::Q2_K:
      return 0.5;
    default:
      return 0.0;  // F32/F16/BF16: checked bit-exactly
  }
}

WeightView view_of(const gguf::TensorInfo& ti) {
  return WeightView{ti.type, ti.data, ti.ne[0], ti.rows()};
}

struct Case {
  const char* file;
  const char* base;
};
const Case kCases[] = {
    {"tinyq-f16.gguf", "tinyq-f32.gguf"},
    {"tinyq-bf16.gguf", "tinyq-f32.gguf"},
    {"tinyq-q8_0.gguf", "tinyq-f32.gguf"},
    {"tinyq-q4_0.gguf", "tinyq-f32.gguf"},
    {"tinyq-q4_1.gguf", "tinyq-f32.gguf"},
    {"tinyq-q5_0.gguf", "tinyq-f32.gguf"},
    {"tinyq-q5_1.gguf", "tinyq-f32.gguf"},
    {"tinyq-q2_k.gguf", "tinyq-f32.gguf"},
    {"tinyq-q3_k_s.gguf", "tinyq-f32.gguf"},
    {"tinyq-q4_k_s.gguf", "tinyq-f32.gguf"},
    {"tinyq-q5_k_s.gguf", "tinyq-f32.gguf"},
    {"tinyq-q6_k.gguf", "tinyq-f32.gguf"},
    {"tinyq-q4_k_m.gguf", "tinyq-f32.gguf"},
    {"tinyq-qwen2-q8_0.gguf", "tinyq-qwen2-f32.gguf"},
    {"tinyq-qwen2-q4_k_m.gguf", "tinyq-qwen2-f32.gguf"},
};

}  // namespace

TEST(OpsFixture, DequantisedTensorsMatchF32Originals) {
  std::map<TensorType, int> seen;
  for (const Case& c : kCases) {
    REQUIRE_SHARED(qpath, std::string("fixtures/models/") + c.file);
    REQUIRE_SHARED(fpath, std::string("fixtures/models/") + c.base);
    const auto q = gguf::File::open(qpath.string());
    const auto f = gguf::File::open(fpath.string());
    for (const auto& ti : q->tensors()) {
      if (ti.ne.size() < 2 || ti.type == TensorType::F32) continue;
      const auto& orig = f->tensor(ti.name);
      ASSERT_EQ(orig.type, TensorType::F32) << ti.name;
      ASSERT_EQ(orig.ne, ti.ne) << ti.name;
      const auto deq = dequantize_tensor(view_of(ti));
      const auto* ref = reinterpret_cast<const float*>(orig.data);
      ++seen[ti.type];
      if (ti.type == TensorType::F16 || ti.type == TensorType::BF16) {
        for (size_t i = 0; i < deq.size(); ++i) {
          const float want = ti.type == TensorType::F16 ? round_fp16(ref[i]) : round_bf16(ref[i]);
          ASSERT_EQ(deq[i], want) << c.file << " " << ti.name << " element " << i;
        }
        continue;
      }
      double err = 0, norm = 0;
      for (size_t i = 0; i < deq.size(); ++i) {
        err += (double(deq[i]) - ref[i]) * (double(deq[i]) - ref[i]);
        norm += double(ref[i]) * ref[i];
      }
      const double rel = std::sqrt(err / norm);
      EXPECT_LT(rel, rel_rms_bound(ti.type))
          << c.file << " " << ti.name << " (" << gguf::type_name(ti.type) << ")";
      EXPECT_GT(rel, 0.0) << c.file << " " << ti.name;
    }
  }
  // Every weight type the fixtures ship was exercised.
  for (TensorType t : {TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
                       TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q2_K,
                       TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
    EXPECT_GT(seen[t], 0) << gguf::type_name(t);
}

TEST(OpsFixture, VecDotOnRealBlocksMatchesDequantisedDot) {
  for (const Case& c : kCases) {
    REQUIRE_SHARED(qpath, std::string("fixtures/models/") + c.file);
    const auto q = gguf::File::open(qpath.string());
    for (const auto& ti : q->tensors()) {
      if (ti.ne.size() < 2) continue;
      const WeightView w = view_of(ti);
      // Activations of the size of real hidden states (RMS-normed: ~N(0,1)).
      const auto x = ops::testing::random_activations(w.n_in, uint32_t(w.n_out));
      std::vector<uint8_t> act(activation_row_bytes(w.type, w.n_in));
      convert_activations(w.type, x.data(), w.n_in, act.data());
      std::vector<float> af(static_cast<size_t>(w.n_in)), wf(static_cast<size_t>(w.n_in));
      activations_to_float(w.type, act.data(), w.n_in, af.data());
      for (int64_t r = 0; r < w.n_out; r += std::max<int64_t>(1, w.n_out / 16)) {
        const uint8_t* row = w.data + size_t(r) * w.row_bytes();
        dequantize_row(w.type, row, wf.data(), w.n_in);
        double want = 0, scale = 0;
        for (int64_t i = 0; i < w.n_in; ++i) {
          want += double(wf[size_t(i)]) * af[size_t(i)];
          scale += std::fabs(double(wf[size_t(i)]) * af[size_t(i)]);
        }
        const float got = vec_dot(w.type, w.n_in, row, act.data());
        // Q4_1/Q5_1 use ggml's f16-rounded s = d * sum(q) for the minimum term (2^-11 relative).
        const double tol = (activation_type(w.type) == TensorType::Q8_1 ? 1e-3 : 4e-6) * scale;
        ASSERT_NEAR(got, want, tol) << c.file << " " << ti.name << " row " << r;
      }
    }
  }
}

// The quantisers against llama-quantize itself: every tinyq-<type>.gguf fixture was made from
// tinyq-f32.gguf by `llama-quantize --pure` (FORMAT.md), which runs ggml's quantize_row_*_ref when
// there is no importance matrix. Quantising the F32 originals here must give the same bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/ops/ops.h"
#include "engine/ops/quantize_weights.h"
#include "support/test_support.h"

namespace ragform::ops {
namespace {

using gguf::TensorType;

// Quantises every tensor of `src` (F32) to the type the same tensor has in `dst` and counts
// byte-identical tensors; returns the number compared.
int compare_file(const gguf::File& src, const gguf::File& dst, int& identical,
                 std::string& first_mismatch) {
  int compared = 0;
  identical = 0;
  for (const auto& t : dst.tensors()) {
    if (t.ne.size() < 2) continue;  // 1-D tensors stay F32
    const auto& s = src.tensor(t.name);
    EXPECT_EQ(s.type, TensorType::F32) << t.name;
    std::vector<uint8_t> out(t.n_bytes);
    quantize_row(t.type, reinterpret_cast<const float*>(s.data), out.data(), s.n_elements());
    ++compared;
    if (std::memcmp(out.data(), t.data, t.n_bytes) == 0) {
      ++identical;
    } else if (first_mismatch.empty()) {
      size_t i = 0;
      while (out[i] == t.data[i]) ++i;
      first_mismatch = t.name + " (" + gguf::type_name(t.type) + ") byte " + std::to_string(i);
    }
  }
  return compared;
}

TEST(QuantizeWeightsFixture, ReproducesLlamaQuantizeBytes) {
  REQUIRE_SHARED(f32_path, "fixtures/models/tinyq-f32.gguf");
  auto src = gguf::File::open(f32_path.string());
  const char* files[] = {"f16",  "bf16",   "q8_0",   "q4_0",   "q4_1", "q5_0",  "q5_1",
                         "q2_k", "q3_k_s", "q4_k_s", "q5_k_s", "q6_k", "q4_k_m"};
  for (const char* name : files) {
    REQUIRE_SHARED(path, std::string("fixtures/models/tinyq-") + name + ".gguf");
    auto dst = gguf::File::open(path.string());
    int identical = 0;
    std::string mismatch;
    const int n = compare_file(*src, *dst, identical, mismatch);
    EXPECT_EQ(n, 16) << name;
    EXPECT_EQ(identical, n) << name << ": first mismatch in " << mismatch;
    std::printf("tinyq-%-7s %d/%d tensors byte-identical\n", name, identical, n);
  }
}

TEST(QuantizeWeightsFixture, Qwen2FixturesToo) {
  REQUIRE_SHARED(f32_path, "fixtures/models/tinyq-qwen2-f32.gguf");
  auto src = gguf::File::open(f32_path.string());
  for (const char* name : {"q8_0", "q4_k_m"}) {
    REQUIRE_SHARED(path, std::string("fixtures/models/tinyq-qwen2-") + name + ".gguf");
    auto dst = gguf::File::open(path.string());
    int identical = 0;
    std::string mismatch;
    const int n = compare_file(*src, *dst, identical, mismatch);
    EXPECT_EQ(n, 15) << name;  // tied: no output.weight
    EXPECT_EQ(identical, n) << name << ": first mismatch in " << mismatch;
  }
}

// Dequantise a fixture tensor and quantise it again: for Q8_0 and Q4_0 the grid is recovered
// exactly (the block's extreme element lands exactly on -127*d / -8*d again, so d and every q
// come back) -- a check that needs no F32 original.
TEST(QuantizeWeightsFixture, RequantisingDequantisedTensorsIsStable) {
  for (const char* name : {"q8_0", "q4_0"}) {
    REQUIRE_SHARED(path, std::string("fixtures/models/tinyq-") + name + ".gguf");
    auto f = gguf::File::open(path.string());
    int identical = 0, compared = 0;
    for (const auto& t : f->tensors()) {
      if (t.ne.size() < 2) continue;
      std::vector<float> x(size_t(t.n_elements()));
      dequantize_row(t.type, t.data, x.data(), t.n_elements());
      std::vector<uint8_t> out(t.n_bytes);
      quantize_row(t.type, x.data(), out.data(), t.n_elements());
      ++compared;
      identical += std::memcmp(out.data(), t.data, t.n_bytes) == 0;
    }
    std::printf("tinyq-%s: %d/%d tensors re-quantise to the same bytes\n", name, identical,
                compared);
    EXPECT_EQ(identical, compared) << name;
  }
}

}  // namespace
}  // namespace ragform::ops

// Test helper: random weight rows of any type. Quant bytes are uniformly random (so every bit of
// every nibble, high-bit plane and packed scale is exercised); the f16 scale fields are then
// overwritten with finite values of a realistic size so rows are meaningful numbers.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/gguf/types.h"
#include "engine/ops/fp16.h"

namespace ragform::ops::testing {

// Byte offsets of the f16 scale fields inside one block of t.
inline std::vector<int> half_fields(gguf::TensorType t) {
  using T = gguf::TensorType;
  switch (t) {
    case T::Q4_0:
    case T::Q5_0:
    case T::Q8_0:
      return {0};
    case T::Q4_1:
    case T::Q5_1:
    case T::Q4_K:
    case T::Q5_K:
      return {0, 2};
    case T::Q2_K:
      return {80, 82};
    case T::Q3_K:
      return {108};
    case T::Q6_K:
      return {208};
    default:
      return {};
  }
}

inline std::vector<uint8_t> random_rows(gguf::TensorType t, int64_t n_in, int64_t n_out,
                                        uint32_t seed) {
  using T = gguf::TensorType;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  const size_t bytes = gguf::row_bytes(t, n_in) * size_t(n_out);
  std::vector<uint8_t> out(bytes);
  const int64_t n = n_in * n_out;
  if (t == T::F32) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return out;
  }
  if (t == T::F16 || t == T::BF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t h = t == T::F16 ? fp32_to_fp16(normal(rng)) : fp32_to_bf16(normal(rng));
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return out;
  }
  for (auto& b : out) b = uint8_t(rng());
  const auto& ti = gguf::type_info(t);
  for (size_t blk = 0; blk < bytes / size_t(ti.type_size); ++blk)
    for (int off : half_fields(t)) {
      const uint16_t h = fp32_to_fp16(scale(rng));
      std::memcpy(out.data() + blk * size_t(ti.type_size) + size_t(off), &h, 2);
    }
  return out;
}

inline std::vector<float> random_activations(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = normal(rng);
  return x;
}

inline const gguf::TensorType kWeightTypes[] = {
    gguf::TensorType::F32,  gguf::TensorType::F16,  gguf::TensorType::BF16, gguf::TensorType::Q4_0,
    gguf::TensorType::Q4_1, gguf::TensorType::Q5_0, gguf::TensorType::Q5_1, gguf::TensorType::Q8_0,
    gguf::TensorType::Q2_K, gguf::TensorType::Q3_K, gguf::TensorType::Q4_K, gguf::TensorType::Q5_K,
    gguf::TensorType::Q6_K};

}  // namespace ragform::ops::testing

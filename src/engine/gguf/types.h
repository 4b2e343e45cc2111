// ggml tensor types as stored in GGUF files: ids, names, and block geometry. Pure data, shared by
// the GGUF reader (to bounds-check tensor sizes) and ops/ (to dequantise and multiply).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ragform::gguf {

// ggml_type ids (ggml.h). Only the types ragform reads are named; others are rejected on load.
enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,  // activation-only type (never in files we accept as weights, but a valid id)
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,  // activation-only
  BF16 = 30,
};

struct TypeInfo {
  TensorType type;
  const char* name;  // "q4_K" etc., as ggml spells it
  int block_size;    // elements per block
  int type_size;     // bytes per block
};

// Geometry of a known type id, or nullopt for an id ragform does not support.
std::optional<TypeInfo> type_info(uint32_t id);
const TypeInfo& type_info(TensorType t);
const char* type_name(TensorType t);
// Parses a ggml type name ("f32", "q4_K", case-insensitive); nullopt if unknown.
std::optional<TensorType> type_from_name(std::string_view name);
// Bytes of one row of n elements; n must be a multiple of the block size (caller checks).
inline size_t row_bytes(TensorType t, int64_t n) {
  const TypeInfo& ti = type_info(t);
  return size_t(n / ti.block_size) * size_t(ti.type_size);
}

}  // namespace ragform::gguf

#include "engine/gguf/types.h"

#include <array>
#include <cctype>

#include "base/error.h"

namespace ragform::gguf {

namespace {
// Block sizes and bytes from ggml-common.h (QK_K = 256).
constexpr std::array<TypeInfo, 15> kTypes = {{
    {TensorType::F32, "f32", 1, 4},
    {TensorType::F16, "f16", 1, 2},
    {TensorType::Q4_0, "q4_0", 32, 18},
    {TensorType::Q4_1, "q4_1", 32, 20},
    {TensorType::Q5_0, "q5_0", 32, 22},
    {TensorType::Q5_1, "q5_1", 32, 24},
    {TensorType::Q8_0, "q8_0", 32, 34},
    {TensorType::Q8_1, "q8_1", 32, 36},
    {TensorType::Q2_K, "q2_K", 256, 84},
    {TensorType::Q3_K, "q3_K", 256, 110},
    {TensorType::Q4_K, "q4_K", 256, 144},
    {TensorType::Q5_K, "q5_K", 256, 176},
    {TensorType::Q6_K, "q6_K", 256, 210},
    {TensorType::Q8_K, "q8_K", 256, 292},
    {TensorType::BF16, "bf16", 1, 2},
}};
}  // namespace

std::optional<TypeInfo> type_info(uint32_t id) {
  for (const auto& t : kTypes)
    if (uint32_t(t.type) == id) return t;
  return std::nullopt;
}

const TypeInfo& type_info(TensorType t) {
  for (const auto& ti : kTypes)
    if (ti.type == t) return ti;
  throw Error("ggml type", "unknown type id " + std::to_string(uint32_t(t)));
}

const char* type_name(TensorType t) { return type_info(t).name; }

std::optional<TensorType> type_from_name(std::string_view name) {
  for (const auto& t : kTypes) {
    std::string_view n = t.name;
    if (n.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < n.size(); ++i)
      if (std::tolower((unsigned char)n[i]) != std::tolower((unsigned char)name[i])) eq = false;
    if (eq) return t.type;
  }
  return std::nullopt;
}

}  // namespace ragform::gguf

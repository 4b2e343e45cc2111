// Test helper: vec_dot's definition, the dequantised weight row times the dequantised converted
// activation row in double, with the error scales a test compares it within. Shared by
// vec_dot_test.cpp and the kernel table (kernel_table_test.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/gguf/types.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"

namespace ragform::ops::testing {

struct ReferenceDot {
  double dot = 0;
  double abs_sum = 0;  // sum |w_i * a_i|: scale of the float rounding error
  double s_term = 0;   // Q8_1: sum |m * s| over blocks (s carries an f16 rounding)
};

inline ReferenceDot reference_dot(gguf::TensorType t, int64_t n, const uint8_t* w,
                                  const void* act) {
  std::vector<float> wf(static_cast<size_t>(n)), af(static_cast<size_t>(n));
  dequantize_row(t, w, wf.data(), n);
  activations_to_float(t, act, n, af.data());
  ReferenceDot r;
  for (int64_t i = 0; i < n; ++i) {
    r.dot += double(wf[size_t(i)]) * double(af[size_t(i)]);
    r.abs_sum += std::fabs(double(wf[size_t(i)]) * double(af[size_t(i)]));
  }
  if (activation_type(t) == gguf::TensorType::Q8_1) {
    // The dot uses m * s where s = f16(d * sum q): replace the exact sum by it.
    const auto* y = static_cast<const BlockQ8_1*>(act);
    const size_t bs = gguf::type_info(t).type_size;
    for (int64_t b = 0; b < n / QK8_1; ++b) {
      uint16_t m;
      std::memcpy(&m, w + size_t(b) * bs + 2, 2);  // Q4_1/Q5_1: m follows d
      double exact_s = 0;
      for (int j = 0; j < QK8_1; ++j) exact_s += double(y[b].qs[j]) * fp16_to_fp32(y[b].d);
      r.dot += double(fp16_to_fp32(m)) * (double(fp16_to_fp32(y[b].s)) - exact_s);
      r.s_term += std::fabs(double(fp16_to_fp32(m)) * fp16_to_fp32(y[b].s));
    }
  }
  return r;
}

}  // namespace ragform::ops::testing

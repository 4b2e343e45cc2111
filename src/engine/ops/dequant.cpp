// Scalar reference dequantisers: the same arithmetic, in the same order, as ggml's
// `dequantize_row_*` in ggml-quants.c, so `get_rows` gives llama.cpp's embedding rows bit for bit
// (up to FMA contraction, which ggml's -march=native build may apply to `d * q - m`).
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"

namespace ragform::ops {

const float* fp16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; ++i) t[i] = fp16_to_fp32(uint16_t(i));
    return t;
  }();
  return table.data();
}

namespace {

inline float h2f(uint16_t h) { return fp16_to_fp32(h); }

void deq_q4_0(const BlockQ4_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK4_0) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      y[j] = float((x[i].qs[j] & 0x0F) - 8) * d;
      y[j + QK4_0 / 2] = float((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void deq_q4_1(const BlockQ4_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK4_1) {
    const float d = h2f(x[i].d), m = h2f(x[i].m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      y[j] = float(x[i].qs[j] & 0x0F) * d + m;
      y[j + QK4_1 / 2] = float(x[i].qs[j] >> 4) * d + m;
    }
  }
}

void deq_q5_0(const BlockQ5_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK5_0) {
    const float d = h2f(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const int xh0 = int(((qh >> j) << 4) & 0x10);
      const int xh1 = int((qh >> (j + 12)) & 0x10);
      y[j] = float(((x[i].qs[j] & 0x0F) | xh0) - 16) * d;
      y[j + QK5_0 / 2] = float(((x[i].qs[j] >> 4) | xh1) - 16) * d;
    }
  }
}

void deq_q5_1(const BlockQ5_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK5_1) {
    const float d = h2f(x[i].d), m = h2f(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, 4);
    for (int j = 0; j < QK5_1 / 2; ++j) {
      const int xh0 = int(((qh >> j) << 4) & 0x10);
      const int xh1 = int((qh >> (j + 12)) & 0x10);
      y[j] = float((x[i].qs[j] & 0x0F) | xh0) * d + m;
      y[j + QK5_1 / 2] = float((x[i].qs[j] >> 4) | xh1) * d + m;
    }
  }
}

void deq_q8_0(const BlockQ8_0* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK8_0) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < QK8_0; ++j) y[j] = float(x[i].qs[j]) * d;
  }
}

void deq_q2_k(const BlockQ2_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = x[i].scales[is++];
          const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * float((q[l + 16 * half] >> shift) & 3) - ml;
        }
        shift += 2;
      }
      q += 32;
    }
  }
}

void deq_q3_k(const BlockQ3_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = h2f(x[i].d);
    int8_t scales[16];
    unpack_q3_k_scales(x[i].scales, scales);
    const uint8_t* q = x[i].qs;
    const uint8_t* hm = x[i].hmask;
    uint8_t m = 1;
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d_all * float(scales[is++]);
          for (int l = 16 * half; l < 16 * half + 16; ++l)
            *y++ = dl * float(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        }
        shift += 2;
        m = uint8_t(m << 1);
      }
      q += 32;
    }
  }
}

void deq_q4_k(const BlockQ4_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    const uint8_t* q = x[i].qs;
    int is = 0;
    for (int j = 0; j < QK_K; j += 64) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, x[i].scales, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      get_scale_min_k4(is + 1, x[i].scales, sc, m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

void deq_q5_k(const BlockQ5_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
    const uint8_t* ql = x[i].qs;
    const uint8_t* qh = x[i].qh;
    int is = 0;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < QK_K; j += 64) {
      uint8_t sc, m;
      get_scale_min_k4(is + 0, x[i].scales, sc, m);
      const float d1 = d * float(sc), m1 = dmin * float(m);
      get_scale_min_k4(is + 1, x[i].scales, sc, m);
      const float d2 = d * float(sc), m2 = dmin * float(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * float((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * float((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
      ql += 32;
      is += 2;
      u1 = uint8_t(u1 << 2);
      u2 = uint8_t(u2 << 2);
    }
  }
}

void deq_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = h2f(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* sc = x[i].scales;
    for (int n = 0; n < QK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = int((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = int((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        // ggml evaluates d * sc * q left to right: (d * sc) * q.
        y[l + 0] = d * float(sc[is + 0]) * float(q1);
        y[l + 32] = d * float(sc[is + 2]) * float(q2);
        y[l + 64] = d * float(sc[is + 4]) * float(q3);
        y[l + 96] = d * float(sc[is + 6]) * float(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void deq_q8_k(const BlockQ8_K* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK_K)
    for (int j = 0; j < QK_K; ++j) y[j] = x[i].d * float(x[i].qs[j]);
}

void deq_q8_1(const BlockQ8_1* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += QK8_1) {
    const float d = h2f(x[i].d);
    for (int j = 0; j < QK8_1; ++j) y[j] = float(x[i].qs[j]) * d;
  }
}

}  // namespace

void check_row_length(TensorType t, int64_t n, const char* where) {
  const int bs = gguf::type_info(t).block_size;
  if (n < 0 || n % bs != 0)
    throw Error(where, std::string("row length ") + std::to_string(n) + " is not a multiple of " +
                           gguf::type_name(t) + "'s block size " + std::to_string(bs));
}

void dequantize_row(TensorType t, const void* src, float* dst, int64_t n) {
  check_row_length(t, n, "dequantize_row");
  const int64_t nb = n / gguf::type_info(t).block_size;
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, src, size_t(n) * sizeof(float));
      return;
    case TensorType::F16: {
      const auto* h = static_cast<const uint16_t*>(src);
      const float* table = fp16_table();
      for (int64_t i = 0; i < n; ++i) dst[i] = table[h[i]];
      return;
    }
    case TensorType::BF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case TensorType::Q4_0:
      return deq_q4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
    case TensorType::Q4_1:
      return deq_q4_1(static_cast<const BlockQ4_1*>(src), dst, nb);
    case TensorType::Q5_0:
      return deq_q5_0(static_cast<const BlockQ5_0*>(src), dst, nb);
    case TensorType::Q5_1:
      return deq_q5_1(static_cast<const BlockQ5_1*>(src), dst, nb);
    case TensorType::Q8_0:
      return deq_q8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
    case TensorType::Q8_1:
      return deq_q8_1(static_cast<const BlockQ8_1*>(src), dst, nb);
    case TensorType::Q2_K:
      return deq_q2_k(static_cast<const BlockQ2_K*>(src), dst, nb);
    case TensorType::Q3_K:
      return deq_q3_k(static_cast<const BlockQ3_K*>(src), dst, nb);
    case TensorType::Q4_K:
      return deq_q4_k(static_cast<const BlockQ4_K*>(src), dst, nb);
    case TensorType::Q5_K:
      return deq_q5_k(static_cast<const BlockQ5_K*>(src), dst, nb);
    case TensorType::Q6_K:
      return deq_q6_k(static_cast<const BlockQ6_K*>(src), dst, nb);
    case TensorType::Q8_K:
      return deq_q8_k(static_cast<const BlockQ8_K*>(src), dst, nb);
  }
  throw Error("dequantize_row", "unsupported tensor type id " + std::to_string(uint32_t(t)));
}

}  // namespace ragform::ops

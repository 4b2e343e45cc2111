// Dot products of one weight row with one converted activation row, per weight type. The
// quantised kernels compute what ggml's ggml_vec_dot_<w>_q8_<a> compute: per block an exact
// integer dot of the quants, times the block's float scale(s).
//
// Float summation order (documented because it is the one place we differ from ggml by design):
// blocks are summed in order into one float accumulator (`sumf += d * float(isum)`), while
// ggml's AVX kernels keep 8 float lanes per block and add them at the end. The two orders agree
// to a few float ulps of the row sum, far below the fixtures' tolerances.
// F16 rows are one fused multiply-add chain along k (see dot_f16), where ggml's F16 kernels keep 32
// lanes; BF16 rows the chain of pairs of the vdpbf16ps instruction (dot_bf16, bf16_dot.h); F32
// rows 16 interleaved float accumulators, combined pairwise at the end.
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "engine/ops/bf16_dot.h"
#include "engine/ops/fp16.h"
#include "engine/ops/kernels.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"

// The kernels are plain C++ written to auto-vectorise. On x86-64 each is also compiled for AVX2
// and picked at load time (GCC/Clang function multiversioning): only integer and
// lane-structured float code, and no FMA contraction (neither clone's target has FMA), so every
// clone returns the same bits as the baseline.
// Not under ASan or TSan: the clones' ifunc resolvers run while the dynamic loader relocates the
// binary, before the sanitizer runtime is up, and crash in instrumented code.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define RAGFORM_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define RAGFORM_KERNEL
#endif

namespace ragform::ops {

namespace {

constexpr int kLanes = 16;

// Sum of a[i] * b[i] over i < N, exact in int (N * 127 * 127 < 2^31).
template <int N, typename A>
inline int dot_i8(const A* a, const int8_t* b) {
  int s = 0;
  for (int i = 0; i < N; ++i) s += int(a[i]) * int(b[i]);
  return s;
}

// F32 rows: 16 interleaved float accumulators (lane j sums k = j mod 16, multiply then add),
// combined pairwise at the end; the AVX-512 F32 kernel (gemm_f32.cpp) follows it. F32 keeps the
// lanes (a sum closer to ggml's 64 lanes than one chain; the F32 fixture models rely on it).
RAGFORM_KERNEL float dot_f32(int64_t n, const void* wv, const void* av) {
  const auto* w = static_cast<const float*>(wv);
  const auto* a = static_cast<const float*>(av);
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += w[i + k] * a[i + k];
  for (int k = 0; i < n; ++i, ++k) acc[k] += w[i] * a[i];
  for (int w2 = kLanes / 2; w2 > 0; w2 /= 2)
    for (int k = 0; k < w2; ++k) acc[k] += acc[k + w2];
  return acc[0];
}

// F16 rows: one fused multiply-add chain along k, acc = fma(w[k], a[k], acc) for k ascending
// from +0. This is the order the panel kernels (gemm_f16.cpp) follow with 16 rows in the lanes of
// a vector, so this loop is their scalar reference: the same bits for every output. The chain is
// latency-bound one row at a time, which only the scalar tier pays.
// F16 weights; activations are floats already rounded to F16 (ggml's F16 vec_dot operand). The
// product of two halves is exact in fp32 (22 significand bits, exponents far inside fp32's
// range), so multiply-then-add rounds once, exactly as the kernels' FMA does.
RAGFORM_KERNEL float dot_f16(int64_t n, const void* wv, const void* av) {
  const auto* w = static_cast<const uint16_t*>(wv);
  const auto* a = static_cast<const float*>(av);
  const float* table = fp16_table();
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc += table[w[i]] * a[i];
  return acc;
}

// BF16 weights; activations are floats already rounded to BF16. The order of AVX512-BF16's
// vdpbf16ps (bf16_dot.h): pairs (2j, 2j + 1) in ascending j from +0, the odd element's product
// first, each step one fused rounding with subnormal inputs read as zero and tiny results flushed;
// an odd last element is paired with +0. The panel kernels (gemm_f16.cpp) return these bits on
// every tier, with the instruction or with FMAs under FTZ/DAZ; this loop is their reference.
RAGFORM_KERNEL float dot_bf16(int64_t n, const void* wv, const void* av) {
  const auto* w = static_cast<const uint16_t*>(wv);
  const auto* a = static_cast<const float*>(av);
  float acc = 0.0f;
  int64_t i = 0;
  for (; i + 1 < n; i += 2)
    acc = bf16_pair_step(acc, bf16_to_fp32(w[i]), a[i], bf16_to_fp32(w[i + 1]), a[i + 1]);
  if (i < n) acc = bf16_pair_step(acc, bf16_to_fp32(w[i]), a[i], 0.0f, 0.0f);
  return acc;
}

// Q4_0/Q4_1 stay baseline-only: their decode-then-dot form is fastest as SSE2 code and GCC's
// AVX2 version of it is several times slower.
float dot_q4_0(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ4_0*>(wv);
  const auto* y = static_cast<const BlockQ8_0*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t ib = 0; ib < n / QK8_0; ++ib) {
    int8_t q[QK8_0];
    for (int j = 0; j < 16; ++j) {
      q[j] = int8_t((x[ib].qs[j] & 0x0F) - 8);
      q[j + 16] = int8_t((x[ib].qs[j] >> 4) - 8);
    }
    const int sumi = dot_i8<QK8_0>(q, y[ib].qs);
    sumf += h[x[ib].d] * h[y[ib].d] * float(sumi);
  }
  return sumf;
}

// Q4_1 x Q8_1: sum d_x d_y sumi + m_x s_y, the minimum term through Q8_1's s (ggml adds the
// m*s terms in a separate accumulator, as here).
float dot_q4_1(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ4_1*>(wv);
  const auto* y = static_cast<const BlockQ8_1*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f, summs = 0.0f;
  for (int64_t ib = 0; ib < n / QK8_1; ++ib) {
    uint8_t q[QK8_1];
    for (int j = 0; j < 16; ++j) {
      q[j] = uint8_t(x[ib].qs[j] & 0x0F);
      q[j + 16] = uint8_t(x[ib].qs[j] >> 4);
    }
    const int sumi = dot_i8<QK8_1>(q, y[ib].qs);
    sumf += h[x[ib].d] * h[y[ib].d] * float(sumi);
    summs += h[x[ib].m] * h[y[ib].s];
  }
  return sumf + summs;
}

// Q5 x Q8: element j (0..15) is the low nibble of qs[j] plus bit j of qh as 16, element j+16
// the high nibble plus bit j+16. Written as one direct integer sum (this form vectorises well).
template <int kOffset>
inline int q5_block_dot(const uint8_t* qs, const uint8_t* qh_bytes, const int8_t* y) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  int sumi = 0;
  for (int j = 0; j < 16; ++j) {
    const int h0 = int((qh >> j) & 1u) << 4, h1 = int((qh >> (j + 16)) & 1u) << 4;
    sumi +=
        ((int(qs[j] & 0xF) | h0) - kOffset) * y[j] + ((int(qs[j] >> 4) | h1) - kOffset) * y[j + 16];
  }
  return sumi;
}

RAGFORM_KERNEL float dot_q5_0(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ5_0*>(wv);
  const auto* y = static_cast<const BlockQ8_0*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t ib = 0; ib < n / QK8_0; ++ib)
    sumf += h[x[ib].d] * h[y[ib].d] * float(q5_block_dot<16>(x[ib].qs, x[ib].qh, y[ib].qs));
  return sumf;
}

RAGFORM_KERNEL float dot_q5_1(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ5_1*>(wv);
  const auto* y = static_cast<const BlockQ8_1*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f, summs = 0.0f;
  for (int64_t ib = 0; ib < n / QK8_1; ++ib) {
    sumf += h[x[ib].d] * h[y[ib].d] * float(q5_block_dot<0>(x[ib].qs, x[ib].qh, y[ib].qs));
    summs += h[x[ib].m] * h[y[ib].s];
  }
  return sumf + summs;
}

RAGFORM_KERNEL float dot_q8_0(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ8_0*>(wv);
  const auto* y = static_cast<const BlockQ8_0*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t ib = 0; ib < n / QK8_0; ++ib)
    sumf += h[x[ib].d] * h[y[ib].d] * float(dot_i8<QK8_0>(x[ib].qs, y[ib].qs));
  return sumf;
}

// Q2_K x Q8_K: d*y.d * sum_k sc_k (q.q8)_k - dmin*y.d * sum_k m_k bsums_k (ggml_vec_dot_q2_K_q8_K).
RAGFORM_KERNEL float dot_q2_k(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ2_K*>(wv);
  const auto* y = static_cast<const BlockQ8_K*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    uint8_t q[QK_K];  // element order as in dequant.cpp deq_q2_k
    for (int g = 0; g < 2; ++g)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l)
          q[128 * g + 32 * j + l] = uint8_t((x[i].qs[32 * g + l] >> (2 * j)) & 3);
    int isum = 0, summs = 0;
    for (int k = 0; k < 16; ++k) {
      isum += (x[i].scales[k] & 0xF) * dot_i8<16>(q + 16 * k, y[i].qs + 16 * k);
      summs += (x[i].scales[k] >> 4) * y[i].bsums[k];
    }
    const float dall = y[i].d * h[x[i].d];
    const float dmin = y[i].d * h[x[i].dmin];
    sumf += dall * float(isum) - dmin * float(summs);
  }
  return sumf;
}

RAGFORM_KERNEL float dot_q3_k(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ3_K*>(wv);
  const auto* y = static_cast<const BlockQ8_K*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    int8_t q[QK_K];
    for (int g = 0; g < 2; ++g)
      for (int j = 0; j < 4; ++j) {
        const uint8_t m = uint8_t(1u << (4 * g + j));
        for (int l = 0; l < 32; ++l)
          q[128 * g + 32 * j + l] =
              int8_t(((x[i].qs[32 * g + l] >> (2 * j)) & 3) - ((x[i].hmask[l] & m) ? 0 : 4));
      }
    int8_t sc[16];
    unpack_q3_k_scales(x[i].scales, sc);
    int isum = 0;
    for (int k = 0; k < 16; ++k) isum += sc[k] * dot_i8<16>(q + 16 * k, y[i].qs + 16 * k);
    sumf += h[x[i].d] * y[i].d * float(isum);
  }
  return sumf;
}

// Shared by Q4_K and Q5_K: q holds the 256 unsigned quants in element order.
inline float k4_block(const uint8_t* q, const uint8_t* scales, uint16_t d16, uint16_t dmin16,
                      const BlockQ8_K& y, const float* h) {
  int isum = 0, summs = 0;
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, scales, sc, m);
    isum += sc * dot_i8<32>(q + 32 * j, y.qs + 32 * j);
    summs += m * (y.bsums[2 * j] + y.bsums[2 * j + 1]);
  }
  return h[d16] * y.d * float(isum) - h[dmin16] * y.d * float(summs);
}

RAGFORM_KERNEL float dot_q4_k(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ4_K*>(wv);
  const auto* y = static_cast<const BlockQ8_K*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    uint8_t q[QK_K];
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        q[64 * g + l] = uint8_t(x[i].qs[32 * g + l] & 0xF);
        q[64 * g + 32 + l] = uint8_t(x[i].qs[32 * g + l] >> 4);
      }
    sumf += k4_block(q, x[i].scales, x[i].d, x[i].dmin, y[i], h);
  }
  return sumf;
}

RAGFORM_KERNEL float dot_q5_k(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ5_K*>(wv);
  const auto* y = static_cast<const BlockQ8_K*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    uint8_t q[QK_K];
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l) {
        const uint8_t b = x[i].qs[32 * g + l], hb = x[i].qh[l];
        q[64 * g + l] = uint8_t((b & 0xF) | (((hb >> (2 * g)) & 1) << 4));
        q[64 * g + 32 + l] = uint8_t((b >> 4) | (((hb >> (2 * g + 1)) & 1) << 4));
      }
    sumf += k4_block(q, x[i].scales, x[i].d, x[i].dmin, y[i], h);
  }
  return sumf;
}

RAGFORM_KERNEL float dot_q6_k(int64_t n, const void* wv, const void* av) {
  const auto* x = static_cast<const BlockQ6_K*>(wv);
  const auto* y = static_cast<const BlockQ8_K*>(av);
  const float* h = fp16_table();
  float sumf = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    // Per 128-group g and 16-element half: four interleaved sub-blocks (elements l, l+32, l+64,
    // l+96) with scales sc[half], sc[half+2], sc[half+4], sc[half+6] (dequant.cpp deq_q6_k).
    int isum = 0;
    for (int g = 0; g < 2; ++g) {
      const uint8_t* ql = x[i].ql + 64 * g;
      const uint8_t* qh = x[i].qh + 32 * g;
      const int8_t* q8 = y[i].qs + 128 * g;
      const int8_t* sc = x[i].scales + 8 * g;
      for (int half = 0; half < 2; ++half) {
        int s1 = 0, s2 = 0, s3 = 0, s4 = 0;
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          s1 += (int((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32) * q8[l];
          s2 += (int((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32) * q8[l + 32];
          s3 += (int((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * q8[l + 64];
          s4 += (int((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * q8[l + 96];
        }
        isum += sc[half] * s1 + sc[half + 2] * s2 + sc[half + 4] * s3 + sc[half + 6] * s4;
      }
    }
    sumf += h[x[i].d] * y[i].d * float(isum);
  }
  return sumf;
}

}  // namespace

DotFn dot_function(TensorType t) {
  switch (t) {
    case TensorType::F32:
      return dot_f32;
    case TensorType::F16:
      return dot_f16;
    case TensorType::BF16:
      return dot_bf16;
    case TensorType::Q4_0:
      return dot_q4_0;
    case TensorType::Q4_1:
      return dot_q4_1;
    case TensorType::Q5_0:
      return dot_q5_0;
    case TensorType::Q5_1:
      return dot_q5_1;
    case TensorType::Q8_0:
      return dot_q8_0;
    case TensorType::Q2_K:
      return dot_q2_k;
    case TensorType::Q3_K:
      return dot_q3_k;
    case TensorType::Q4_K:
      return dot_q4_k;
    case TensorType::Q5_K:
      return dot_q5_k;
    case TensorType::Q6_K:
      return dot_q6_k;
    default:
      break;
  }
  throw Error("vec_dot", std::string("type ") + gguf::type_name(t) + " is not a weight type");
}

float vec_dot(TensorType w, int64_t n, const void* w_row, const void* act_row) {
  check_row_length(w, n, "vec_dot");
  return dot_function(w)(n, w_row, act_row);
}

}  // namespace ragform::ops

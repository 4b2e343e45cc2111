// Reference weight quantisers (see quantize_weights.h). Every expression keeps ggml's operand
// order and float (not double) arithmetic so results are bit-identical with
// `quantize_row_*_ref`; fused multiply-add contraction is switched off for the same reason (ggml
// is compiled as ISO C, where GCC does not contract). Clang ignores GCC's optimize pragma and
// contracts within an expression by default, so it gets its own spelling.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine/ops/quantize_weights.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"

namespace ragform::ops {
namespace {

using gguf::TensorType;

constexpr float kGroupMaxEps = 1e-15f;  // ggml GROUP_MAX_EPS: a group this small is all zero

// Round to nearest, ties to even, for |f| < 2^22 (ggml nearest_int: adding 1.5 * 2^23 leaves the
// rounded integer in the low mantissa bits).
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  const int32_t i = std::bit_cast<int32_t>(v);
  return (i & 0x007fffff) - 0x00400000;
}

// ---- scale searches (ggml-quants.c helpers) ----

// Symmetric quantisation of n values to [-nmax, nmax-1] (stored +nmax in L). rmse_type 1 weights
// each value by x^2 and refines the scale over 18 trial inverse scales around nmax/max.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, size_t(n));
    return 0.f;
  }
  float iscale = -nmax / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) {
      const int l = nearest_int(iscale * x[i]);
      L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, l)));
    }
    return 1 / iscale;
  }
  auto weight = [&](int i) -> float {
    switch (rmse_type) {
      case 1:
        return x[i] * x[i];
      case 2:
        return 1;
      case 3:
        return std::fabs(x[i]);
      default:
        return std::sqrt(std::fabs(x[i]));
    }
  };
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = int8_t(l + nmax);
    const float w = weight(i);
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = weight(i);
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l) * float(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q3_K's sub-block search: start from nmax/max, then up to 5 rounds of moving single values to
// the level that most improves the x^2-weighted fit. Returns the scale; L holds l + nmax.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::memset(L, 0, size_t(n));
    return 0.f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = int8_t(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      if (slx > 0) {
        float sl2 = suml2 - w * float(L[i]) * float(L[i]);
        int new_l = nearest_int(x[i] * sl2 / slx);
        new_l = std::max(-nmax, std::min(nmax - 1, new_l));
        if (new_l != L[i]) {
          slx += w * x[i] * float(new_l);
          sl2 += w * float(new_l) * float(new_l);
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = int8_t(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric quantisation to [0, nmax] with scale and (non-positive) minimum: value ~ scale*l +
// min. Tries nstep+1 inverse scales (rmin + rdelta*is + nmax)/(max-min), solving the weighted
// least-squares scale and min for each rounding, and keeps the one of least weighted error
// (absolute error when use_mad). Returns the scale; *the_min = -min.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::memset(L, 0, size_t(n));
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = uint8_t(std::max(0, std::min(nmax, l)));
    float diff = scale * float(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * float(Laux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, size_t(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// ---- 32-element block types ----

// Signed largest-magnitude element of a block (the first one on ties).
inline float signed_absmax(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK4_0) {
    const float d = signed_absmax(x, QK4_0) / -8;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      const uint8_t q0 = uint8_t(std::min(15, int(int8_t(x[j] * id + 8.5f))));
      const uint8_t q1 = uint8_t(std::min(15, int(int8_t(x[j + QK4_0 / 2] * id + 8.5f))));
      y[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

void min_max(const float* x, int n, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK4_1) {
    float min, max;
    min_max(x, QK4_1, min, max);
    const float d = (max - min) / 15;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const uint8_t q0 = uint8_t(std::min(15, int(int8_t((x[j] - min) * id + 0.5f))));
      const uint8_t q1 = uint8_t(std::min(15, int(int8_t((x[j + QK4_1 / 2] - min) * id + 0.5f))));
      y[i].qs[j] = uint8_t(q0 | (q1 << 4));
    }
  }
}

// Packs 32 five-bit values: low nibbles into qs (element j low, j+16 high), 5th bits into qh.
void pack_q5(const uint8_t q[32], uint8_t qs[16], uint8_t qh_out[4]) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = uint8_t((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    qh |= uint32_t((q[j] & 0x10u) >> 4) << j;
    qh |= uint32_t((q[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  std::memcpy(qh_out, &qh, 4);
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK5_0) {
    const float d = signed_absmax(x, QK5_0) / -16;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
    pack_q5(q, y[i].qs, y[i].qh);
  }
}

void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK5_1) {
    float min, max;
    min_max(x, QK5_1, min, max);
    const float d = (max - min) / 31;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(min);
    uint8_t q[32];
    for (int j = 0; j < 32; ++j) q[j] = uint8_t((x[j] - min) * id + 0.5f);
    pack_q5(q, y[i].qs, y[i].qh);
  }
}

void quantize_q8_0_ref(const float* x, BlockQ8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += QK8_0) {
    float amax = 0;
    for (int j = 0; j < QK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = int8_t(std::round(x[j] * id));
  }
}

// ---- K-quants (256-element super-blocks) ----

// Packs 2-bit values L[0..255] four to a byte: within each 128-element half, byte l holds
// elements l, l+32, l+64, l+96 at shifts 0, 2, 4, 6 (Q2_K and Q3_K's low bits).
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < QK_K; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] =
          uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

void quantize_q2_k(const float* x, BlockQ2_K* y, int64_t nb) {
  uint8_t L[QK_K], Laux[16];
  float weights[16], mins[QK_K / 16], scales[QK_K / 16];
  const float q4scale = 15.f;
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                   0.1f, 15, true);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < QK_K / 16; ++j) y[i].scales[j] = uint8_t(nearest_int(iscale * scales[j]));
      y[i].d = fp32_to_fp16(max_scale / q4scale);
    } else {
      std::memset(y[i].scales, 0, sizeof y[i].scales);
      y[i].d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < QK_K / 16; ++j)
        y[i].scales[j] = uint8_t(y[i].scales[j] | (nearest_int(iscale * mins[j]) << 4));
      y[i].dmin = fp32_to_fp16(max_min / q4scale);
    } else {
      y[i].dmin = fp32_to_fp16(0.f);
    }
    // Re-quantise every value against the stored (rounded) scales and mins.
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * float(y[i].scales[j] & 0xF);
      if (!d) continue;
      const float dm = fp16_to_fp32(y[i].dmin) * float(y[i].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int((x[16 * j + ii] + dm) / d);
        L[16 * j + ii] = uint8_t(std::max(0, std::min(3, l)));
      }
    }
    pack_2bit(L, y[i].qs);
  }
}

void quantize_q3_k(const float* x, BlockQ3_K* y, int64_t nb) {
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < QK_K / 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    std::memset(y[i].scales, 0, 12);
    if (max_scale) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < QK_K / 16; ++j) {
        int8_t l = int8_t(nearest_int(iscale * scales[j]));
        l = int8_t(std::max(-32, std::min(31, int(l))) + 32);
        if (j < 8)
          y[i].scales[j] = uint8_t(l & 0xF);
        else
          y[i].scales[j - 8] = uint8_t(y[i].scales[j - 8] | ((l & 0xF) << 4));
        l = int8_t(l >> 4);
        y[i].scales[j % 4 + 8] = uint8_t(y[i].scales[j % 4 + 8] | (l << (2 * (j / 4))));
      }
      y[i].d = fp32_to_fp16(1 / iscale);
    } else {
      y[i].d = fp32_to_fp16(0.f);
    }
    int8_t sc[16];
    unpack_q3_k_scales(y[i].scales, sc);
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * float(sc[j]);
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = int8_t(std::max(-4, std::min(3, l)) + 4);
      }
    }
    // The 3rd bit of element j goes to bit (j / 32) of hmask[j % 32].
    std::memset(y[i].hmask, 0, QK_K / 8);
    uint8_t low[QK_K];
    for (int j = 0; j < QK_K; ++j) {
      uint8_t l = uint8_t(L[j]);
      if (l > 3) {
        y[i].hmask[j % 32] = uint8_t(y[i].hmask[j % 32] | (1u << (j / 32)));
        l = uint8_t(l - 4);
      }
      low[j] = l;
    }
    pack_2bit(low, y[i].qs);
  }
}

// Packs eight 6-bit scales and mins into Q4_K/Q5_K's 12 bytes (inverse of get_scale_min_k4).
void pack_scale_min_k4(const uint8_t ls[8], const uint8_t lm[8], uint8_t* s) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = ls[j];
      s[j + 4] = lm[j];
    } else {
      s[j + 4] = uint8_t((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      s[j - 4] = uint8_t(s[j - 4] | ((ls[j] >> 4) << 6));
      s[j] = uint8_t(s[j] | ((lm[j] >> 4) << 6));
    }
  }
}

// The shared part of Q4_K and Q5_K: per 32-element sub-block scale/min search, 6-bit super-block
// quantisation of those, then every value re-quantised to [0, nmax] against the stored scales.
// Writes d, dmin and the 12 scale bytes; returns the levels in L.
template <typename Block>
void quantize_k4_like(const float* x, Block& y, int nmax, float rmin, float rdelta, int nstep,
                      uint8_t L[QK_K]) {
  uint8_t Laux[32];
  float weights[32], mins[QK_K / 32], scales[QK_K / 32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                 rdelta, nstep, false);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < QK_K / 32; ++j) {
    ls[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
    lm[j] = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
  }
  std::memset(y.scales, 0, K_SCALE_SIZE);
  pack_scale_min_k4(ls, lm, y.scales);
  y.d = fp32_to_fp16(max_scale / 63.f);
  y.dmin = fp32_to_fp16(max_min / 63.f);
  for (int j = 0; j < QK_K / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, y.scales, sc, m);
    const float d = fp16_to_fp32(y.d) * float(sc);
    if (!d) continue;
    const float dm = fp16_to_fp32(y.dmin) * float(m);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = uint8_t(std::max(0, std::min(nmax, l)));
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t nb) {
  uint8_t L[QK_K];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    quantize_k4_like(x, y[i], 15, -1.f, 0.1f, 20, L);
    // Each 64-element chunk: byte l holds element l (low nibble) and l+32 (high nibble).
    uint8_t* q = y[i].qs;
    for (int j = 0; j < QK_K; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t nb) {
  uint8_t L[QK_K];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    quantize_k4_like(x, y[i], 31, -0.5f, 0.1f, 15, L);
    // As Q4_K, plus the 5th bit of element n+j (n = 64c) at bit 2c of qh[j], of n+j+32 at 2c+1.
    uint8_t* qh = y[i].qh;
    uint8_t* ql = y[i].qs;
    std::memset(qh, 0, QK_K / 8);
    uint8_t m1 = 1, m2 = 2;
    for (int n = 0; n < QK_K; n += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j], l2 = L[n + j + 32];
        if (l1 > 15) {
          l1 -= 16;
          qh[j] |= m1;
        }
        if (l2 > 15) {
          l2 -= 16;
          qh[j] |= m2;
        }
        ql[j] = uint8_t(l1 | (l2 << 4));
      }
      m1 = uint8_t(m1 << 2);
      m2 = uint8_t(m2 << 2);
    }
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t nb) {
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1);
      scales[ib] = scale;
      if (std::fabs(scale) > max_abs_scale) {
        max_abs_scale = std::fabs(scale);
        max_scale = scale;
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[i], 0, sizeof(BlockQ6_K));
      y[i].d = fp32_to_fp16(0.f);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[i].d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib)
      y[i].scales[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = fp16_to_fp32(y[i].d) * float(y[i].scales[j]);
      if (!d) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = nearest_int(x[16 * j + ii] / d);
        L[16 * j + ii] = int8_t(std::max(-32, std::min(31, l)) + 32);
      }
    }
    // Per 128-element half: ql[l] = elements l | l+64 (nibbles), ql[l+32] = l+32 | l+96, and
    // qh[l] their top two bits at shifts 0, 2, 4, 6.
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = uint8_t((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = uint8_t((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

}  // namespace

void quantize_row(TensorType t, const float* x, void* dst, int64_t n) {
  check_row_length(t, n, "quantize");
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      throw Error("quantize", std::string("element ") + std::to_string(i) + " of a " +
                                  gguf::type_name(t) + " row is not finite (" +
                                  std::to_string(x[i]) + ")");
  const int64_t nb = n / gguf::type_info(t).block_size;
  switch (t) {
    case TensorType::F32:
      std::memcpy(dst, x, size_t(n) * sizeof(float));
      return;
    case TensorType::F16: {
      auto* y = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
      return;
    }
    case TensorType::BF16: {
      auto* y = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
      return;
    }
    case TensorType::Q4_0:
      return quantize_q4_0(x, static_cast<BlockQ4_0*>(dst), nb);
    case TensorType::Q4_1:
      return quantize_q4_1(x, static_cast<BlockQ4_1*>(dst), nb);
    case TensorType::Q5_0:
      return quantize_q5_0(x, static_cast<BlockQ5_0*>(dst), nb);
    case TensorType::Q5_1:
      return quantize_q5_1(x, static_cast<BlockQ5_1*>(dst), nb);
    case TensorType::Q8_0:
      return quantize_q8_0_ref(x, static_cast<BlockQ8_0*>(dst), nb);
    case TensorType::Q2_K:
      return quantize_q2_k(x, static_cast<BlockQ2_K*>(dst), nb);
    case TensorType::Q3_K:
      return quantize_q3_k(x, static_cast<BlockQ3_K*>(dst), nb);
    case TensorType::Q4_K:
      return quantize_q4_k(x, static_cast<BlockQ4_K*>(dst), nb);
    case TensorType::Q5_K:
      return quantize_q5_k(x, static_cast<BlockQ5_K*>(dst), nb);
    case TensorType::Q6_K:
      return quantize_q6_k(x, static_cast<BlockQ6_K*>(dst), nb);
    default:
      throw Error("quantize", std::string("no weight quantiser for type ") + gguf::type_name(t) +
                                  " (Q8_1 and Q8_K are activation types)");
  }
}

void quantize_rows(TensorType t, const float* x, void* dst, int64_t n_rows, int64_t n_per_row,
                   ThreadPool& pool) {
  check_row_length(t, n_per_row, "quantize");
  if (n_rows < 0) throw Error("quantize", "negative row count " + std::to_string(n_rows));
  const size_t rb = gguf::row_bytes(t, n_per_row);
  auto* out = static_cast<uint8_t*>(dst);
  pool.parallel_for(size_t(n_rows), [&](size_t begin, size_t end, int) {
    for (size_t r = begin; r < end; ++r)
      quantize_row(t, x + r * size_t(n_per_row), out + r * rb, n_per_row);
  });
}

}  // namespace ragform::ops

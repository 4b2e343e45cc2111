#include "engine/model/blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/ops/fp16.h"

namespace ragform::model {

void rms_norm(const float* x, const float* w, int n, float eps, float* out) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
  const float mean = float(sum / n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
  } else {
    for (int i = 0; i < n; ++i) out[i] = x[i] * scale;
  }
}

void RopeCache::compute(int pos, int n_rot, float base, float freq_scale,
                        const float* freq_factors) {
  const float theta_scale = std::pow(base, -2.0f / float(n_rot));
  float theta = float(pos);
  for (int i = 0; i < n_rot / 2; ++i) {
    const float ff = freq_factors ? freq_factors[i] : 1.0f;
    const float t = freq_scale * (theta / ff);
    cos[i] = std::cos(t);
    sin[i] = std::sin(t);
    theta *= theta_scale;
  }
}

void RopeCache::compute_transformers(int pos, int n_rot, float base, float freq_scale,
                                     const float* freq_factors) {
  for (int i = 0; i < n_rot / 2; ++i) {
    float inv = 1.0f / std::pow(base, float(2 * i) / float(n_rot));
    if (freq_factors) inv /= freq_factors[i];
    if (freq_scale != 1.0f) inv *= freq_scale;
    const float t = float(pos) * inv;
    cos[i] = std::cos(t);
    sin[i] = std::sin(t);
  }
}

void rope(float* x, int n_heads, int head_dim, int n_rot, const RopeCache& rc, RopeType type) {
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + size_t(h) * head_dim;
    if (type == RopeType::Norm) {
      for (int i = 0; i < n_rot / 2; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * rc.cos[i] - x1 * rc.sin[i];
        v[2 * i + 1] = x0 * rc.sin[i] + x1 * rc.cos[i];
      }
    } else {
      const int half = n_rot / 2;
      for (int i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * rc.cos[i] - x1 * rc.sin[i];
        v[i + half] = x0 * rc.sin[i] + x1 * rc.cos[i];
      }
    }
  }
}

void swiglu(const float* gate, const float* up, int n, float* out) {
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = (g / (1.0f + std::exp(-g))) * up[i];
  }
}

float gelu_exact(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

void gelu_tanh(const float* x, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = gelu_exact(x[i]);
}

void gelu_erf(const float* x, int n, float* out) {
  constexpr float kSqrtHalf = 0.70710678118654752440f;
  for (int i = 0; i < n; ++i) out[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kSqrtHalf));
}

namespace {
// GELU of every half value, stored as half bits (built once; thread-safe static init).
const std::vector<uint16_t>& gelu_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(size_t(1) << 16);
    for (size_t i = 0; i < t.size(); ++i)
      t[i] = ops::fp32_to_fp16(gelu_exact(ops::fp16_to_fp32(uint16_t(i))));
    return t;
  }();
  return table;
}
}  // namespace

const float* gelu_table_f32() {
  static const std::vector<float> table = [] {
    const std::vector<uint16_t>& h = gelu_table();
    std::vector<float> t(h.size());
    for (size_t i = 0; i < h.size(); ++i) t[i] = ops::fp16_to_fp32(h[i]);
    return t;
  }();
  return table.data();
}

void gelu(const float* x, int n, float* out) {
  const uint16_t* table = gelu_table().data();
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    if (v <= -10.0f)
      out[i] = 0.0f;
    else if (v >= 10.0f)
      out[i] = v;
    else
      out[i] = ops::fp16_to_fp32(table[ops::fp32_to_fp16(v)]);
  }
}

void softmax(float* x, int n) {
  float mx = -INFINITY;
  for (int i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    const float e = (x[i] == -INFINITY) ? 0.0f : std::exp(x[i] - mx);
    x[i] = e;
    sum += e;
  }
  const float inv = float(1.0 / sum);
  for (int i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace ragform::model

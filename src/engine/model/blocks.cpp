#include "engine/model/blocks.h"

#include <algorithm>
#include <cmath>

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

void RopeCache::compute(int pos, int n_rot, float base, float freq_scale) {
  const float theta_scale = std::pow(base, -2.0f / float(n_rot));
  float theta = float(pos) * freq_scale;
  for (int i = 0; i < n_rot / 2; ++i) {
    cos[i] = std::cos(theta);
    sin[i] = std::sin(theta);
    theta *= theta_scale;
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

// A plain scalar forward pass of a decoder-only model, written from the formulas (not from the
// engine's kernels) for the drift tests: double-precision matrix products over dequantised
// weights, RoPE angles computed directly as pos * base^(-2i/n_rot) / factor_i / scale, exact tanh
// GELU, softmax over the causal (or sliding) window. Slow (O(T^2) attention, O(T * params)
// matmuls): for the tiny fixture models only.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/model/model.h"
#include "engine/ops/ops.h"
#include "engine/runtime/steering.h"

namespace ragform::testing {

struct ReferenceOutput {
  std::vector<std::vector<double>> final_hidden;  // [T][n_embd]: after the output norm
  std::vector<double> logits_last;                // [n_vocab]
  // For each layer of ReferenceForward::attn_layers (in that order): the last query's attention
  // probabilities [head][key 0..T-1], 0 outside the causal or sliding window.
  std::vector<std::vector<std::vector<double>>> attention_last;
};

class ReferenceForward {
 public:
  // Switches to break the reference on purpose (a drift test shows it would see the difference).
  bool use_rope_freqs = true;
  bool use_window = true;
  // Attention steering (runtime/steering.h), applied to the probabilities of steered layers and
  // heads as the rule is defined; null = none.
  const runtime::Steering* steer = nullptr;
  // Layers whose last-query attention rows run() records (ReferenceOutput::attention_last).
  std::vector<int> attn_layers;
  // Stop after this layer (>= 0): run() then returns only attention_last, for attention checks
  // on big models where the remaining layers and the output would be wasted time.
  int last_layer = -1;

  explicit ReferenceForward(const model::Model& m) : m_(m), hp_(m.hp()) {
    auto deq = [](const ops::WeightView& w) { return ops::dequantize_tensor(w); };
    embd_ = deq(m.tok_embd);
    out_ = deq(m.output);
    for (const auto& L : m.layers)
      layers_.push_back(
          {deq(L.wq), deq(L.wk), deq(L.wv), deq(L.wo), deq(L.w_gate), deq(L.w_up), deq(L.w_down)});
  }

  ReferenceOutput run(const std::vector<int32_t>& tokens) const {
    const int T = int(tokens.size()), E = hp_.n_embd, HD = hp_.head_dim, NH = hp_.n_head,
              NKV = hp_.n_head_kv, Qd = hp_.q_dim(), KVd = hp_.kv_dim();
    using Vec = std::vector<double>;
    ReferenceOutput r;
    r.attention_last.resize(attn_layers.size());
    std::vector<Vec> x(static_cast<size_t>(T));
    const double escale = m_.arch().scale_embeddings ? std::sqrt(double(E)) : 1.0;
    for (int t = 0; t < T; ++t) {
      x[size_t(t)].resize(size_t(E));
      for (int i = 0; i < E; ++i)
        x[size_t(t)][size_t(i)] = embd_[size_t(tokens[size_t(t)]) * E + size_t(i)] * escale;
    }
    const int n_run = last_layer >= 0 ? std::min(last_layer + 1, hp_.n_layer) : hp_.n_layer;
    for (int il = 0; il < n_run; ++il) {
      const auto& L = m_.layers[size_t(il)];
      const auto& W = layers_[size_t(il)];
      std::vector<Vec> q(static_cast<size_t>(T)), k(q), v(q);
      for (int t = 0; t < T; ++t) {
        Vec h = norm(x[size_t(t)], L.attn_norm);
        q[size_t(t)] = matvec(W.wq, h, Qd, L.bq);
        k[size_t(t)] = matvec(W.wk, h, KVd, L.bk);
        v[size_t(t)] = matvec(W.wv, h, KVd, L.bv);
        for (int hh = 0; hh < NH; ++hh) head_prep(q[size_t(t)].data() + hh * HD, L.q_norm, t, il);
        for (int hh = 0; hh < NKV; ++hh) head_prep(k[size_t(t)].data() + hh * HD, L.k_norm, t, il);
      }
      const double scale = hp_.attention_scale();
      for (int t = 0; t < T; ++t) {
        Vec att(static_cast<size_t>(Qd), 0.0);
        const int lo = use_window && hp_.is_swa(il) ? std::max(0, t - hp_.n_swa + 1) : 0;
        for (int hh = 0; hh < NH; ++hh) {
          const int kvh = hh / (NH / NKV);
          Vec s(static_cast<size_t>(t + 1 - lo));
          double mx = -1e300;
          for (int j = lo; j <= t; ++j) {
            double d = 0;
            for (int c = 0; c < HD; ++c)
              d += q[size_t(t)][size_t(hh * HD + c)] * k[size_t(j)][size_t(kvh * HD + c)];
            s[size_t(j - lo)] = d * scale;
            mx = std::max(mx, d * scale);
          }
          double sum = 0;
          for (double& e : s) sum += (e = std::exp(e - mx));
          for (double& e : s) e /= sum;
          if (steer && steer->active() && steer->steers_layer(il) && steer->steers_head(hh))
            steer_probs(s, lo, t);
          if (t == T - 1)
            for (size_t a = 0; a < attn_layers.size(); ++a)
              if (attn_layers[a] == il) {
                Vec row(static_cast<size_t>(T), 0.0);
                std::copy(s.begin(), s.end(), row.begin() + lo);
                r.attention_last[a].push_back(std::move(row));
              }
          for (int j = lo; j <= t; ++j)
            for (int c = 0; c < HD; ++c)
              att[size_t(hh * HD + c)] += s[size_t(j - lo)] * v[size_t(j)][size_t(kvh * HD + c)];
        }
        Vec o = matvec(W.wo, att, E, nullptr);
        if (L.attn_post_norm) o = norm(o, L.attn_post_norm);
        for (int i = 0; i < E; ++i) x[size_t(t)][size_t(i)] += o[size_t(i)];
      }
      for (int t = 0; t < T; ++t) {
        Vec h = norm(x[size_t(t)], L.ffn_norm);
        Vec g = matvec(W.w_gate, h, hp_.n_ff, nullptr), u = matvec(W.w_up, h, hp_.n_ff, nullptr);
        for (size_t i = 0; i < g.size(); ++i) g[i] = act(g[i]) * u[i];
        Vec o = matvec(W.w_down, g, E, nullptr);
        if (L.ffn_post_norm) o = norm(o, L.ffn_post_norm);
        for (int i = 0; i < E; ++i) x[size_t(t)][size_t(i)] += o[size_t(i)];
      }
    }
    if (n_run < hp_.n_layer) return r;
    for (int t = 0; t < T; ++t) r.final_hidden.push_back(norm(x[size_t(t)], m_.output_norm));
    r.logits_last = matvec(out_, r.final_hidden.back(), hp_.n_vocab, nullptr);
    if (hp_.final_softcap > 0)
      for (double& l : r.logits_last) l = hp_.final_softcap * std::tanh(l / hp_.final_softcap);
    return r;
  }

 private:
  struct Dense {
    std::vector<float> wq, wk, wv, wo, w_gate, w_up, w_down;
  };
  const model::Model& m_;
  const model::Hparams& hp_;
  std::vector<float> embd_, out_;
  std::vector<Dense> layers_;

  std::vector<double> norm(const std::vector<double>& x, const float* w) const {
    double ss = 0;
    for (double e : x) ss += e * e;
    const double k = 1.0 / std::sqrt(ss / double(x.size()) + hp_.rms_eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * k * (w ? w[i] : 1.0f);
    return y;
  }
  static std::vector<double> matvec(const std::vector<float>& w, const std::vector<double>& x,
                                    int n_out, const float* bias) {
    std::vector<double> y(static_cast<size_t>(n_out));
    const size_t n_in = x.size();
    for (int r = 0; r < n_out; ++r) {
      double s = bias ? bias[r] : 0.0;
      for (size_t i = 0; i < n_in; ++i) s += double(w[size_t(r) * n_in + i]) * x[i];
      y[size_t(r)] = s;
    }
    return y;
  }
  double act(double g) const {
    if (m_.arch().ffn_act == model::FfnAct::GeluTanh)
      return 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
    return g / (1.0 + std::exp(-g));
  }
  // Per-span shares: span i (ending at or before t) with mass m_i > 0 gets share S_i, the keys in
  // no applicable span what is left.
  // Not inlined: GCC 12 -O3 otherwise reports a bogus free-nonheap-object on `mass` inside run().
  [[gnu::noinline]] void reallocate_each(std::vector<double>& p, int lo, int t) const {
    auto span_of = [&](int j) {
      for (size_t i = 0; i < steer->spans.size(); ++i) {
        const auto& sp = steer->spans[i];
        if (sp.end <= t && j >= sp.begin && j < sp.end) return int(i);
      }
      return -1;
    };
    std::vector<double> mass(steer->spans.size(), 0.0);
    double rest = 0, given = 0;
    bool any = false;
    for (int j = lo; j <= t; ++j) {
      const int i = span_of(j);
      if (i < 0)
        rest += p[size_t(j - lo)];
      else
        mass[size_t(i)] += p[size_t(j - lo)];
    }
    for (size_t i = 0; i < mass.size(); ++i)
      if (mass[i] > 0) given += steer->shares[i], any = true;
    if (rest <= 0 || !any) return;
    for (int j = lo; j <= t; ++j) {
      const int i = span_of(j);
      p[size_t(j - lo)] *= i < 0                 ? std::max(0.0, 1 - given) / rest
                           : mass[size_t(i)] > 0 ? steer->shares[size_t(i)] / mass[size_t(i)]
                                                 : 1.0;
    }
  }
  // Found in the Middle's eq. 5-6: the ended spans' total kept, span i's part W_i / W of it.
  [[gnu::noinline]] void redistribute_each(std::vector<double>& p, int lo, int t) const {
    std::vector<double> mass(steer->spans.size(), 0.0);
    double total = 0, weights = 0;
    for (size_t i = 0; i < steer->spans.size(); ++i) {
      const auto& sp = steer->spans[i];
      if (sp.end > t) continue;
      for (int j = std::max(lo, sp.begin); j < sp.end; ++j) mass[i] += p[size_t(j - lo)];
      total += mass[i];
      if (mass[i] > 0) weights += steer->shares[i];
    }
    if (total <= 0 || weights <= 0) return;
    for (size_t i = 0; i < mass.size(); ++i)
      if (mass[i] > 0)
        for (int j = std::max(lo, steer->spans[i].begin); j < steer->spans[i].end; ++j)
          p[size_t(j - lo)] *= steer->shares[i] / weights * total / mass[i];
  }
  // The steering rule on the probabilities p[j - lo] of keys lo..t of the query at position t.
  // Rescale is PASTA's: every row, the span keys it sees and generated keys (at or past
  // prompt_end) against the prompt's other keys.
  void steer_probs(std::vector<double>& p, int lo, int t) const {
    if (steer->rule == runtime::Steering::Redistribute) return redistribute_each(p, lo, t);
    if (!steer->shares.empty()) return reallocate_each(p, lo, t);
    const bool pasta = steer->rule == runtime::Steering::Rescale;
    auto inside = [&](int j) {
      if (pasta && j >= steer->prompt_end) return true;
      for (const auto& sp : steer->spans)
        if ((pasta || sp.end <= t) && j >= sp.begin && j < sp.end) return true;
      return false;
    };
    double in = 0, rest = 0;
    for (int j = lo; j <= t; ++j) (inside(j) ? in : rest) += p[size_t(j - lo)];
    const double v = steer->value;
    double fin, fout;
    if (pasta) {
      if (in <= 0 || rest <= 0 || rest + v * in <= 0) return;
      fin = v / (rest + v * in);
      fout = 1 / (rest + v * in);
    } else {
      if (in <= 0 || rest <= 0) return;
      fin = v / in;
      fout = (1 - v) / rest;
    }
    for (int j = lo; j <= t; ++j) p[size_t(j - lo)] *= inside(j) ? fin : fout;
  }
  // Per-head q/k norm, then RoPE at position pos.
  void head_prep(double* v, const float* w, int pos, int il) const {
    const int HD = hp_.head_dim, n = hp_.n_rot;
    if (w) {
      std::vector<double> h(v, v + HD);
      h = norm(h, w);
      std::copy(h.begin(), h.end(), v);
    }
    const bool swa = hp_.is_swa(il);
    const double base = swa ? hp_.rope_base_swa : hp_.rope_base;
    const double scale = swa ? 1.0 : hp_.rope_scale;
    for (int i = 0; i < n / 2; ++i) {
      const double ff = use_rope_freqs && m_.rope_freqs ? m_.rope_freqs[i] : 1.0;
      const double theta = pos * std::pow(base, -2.0 * i / n) / ff / scale;
      const int a = hp_.rope_type == model::RopeType::Norm ? 2 * i : i;
      const int b = hp_.rope_type == model::RopeType::Norm ? 2 * i + 1 : i + n / 2;
      const double x0 = v[a], x1 = v[b];
      v[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
      v[b] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
  }
};

}  // namespace ragform::testing

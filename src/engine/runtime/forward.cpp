// The steps of the forward pass (forward.h), in the order Context::eval runs them. Each follows
// llama.cpp's graph for the architecture (src/models/<arch>.cpp) operation by operation, so the
// float rounding matches ggml's CPU backend.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/runtime/elementwise.h"
#include "engine/runtime/forward.h"

namespace ragform::runtime::detail {

namespace {
void add_bias(float* y, const float* b, int64_t rows, int64_t n) {
  if (!b) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += b[i];
}

// Which RoPE table a layer uses: 1 for sliding-window layers (their own base), else 0.
int rope_variant(const model::Hparams& hp, int il) { return hp.is_swa(il) ? 1 : 0; }

// x[r] += [RMSNorm(o[r]) * post_norm] for the first n rows (gemma's post-norms when set).
void residual_add(Pass& p, const float* post_norm) {
  Scratch& s = p.s;
  const int64_t E = p.hp.n_embd;
  for_rows(p.pool, p.Tn, E, [&](int64_t r) {
    float* o = &s.o[size_t(r * E)];
    if (post_norm) model::rms_norm(o, post_norm, int(E), p.hp.rms_eps, o);
    float* x = &s.x[size_t(r * E)];
    for (int64_t i = 0; i < E; ++i) x[i] += o[i];
  });
}

// q/k norms, RoPE, and the new keys and values into each row's sequence cache.
void rope_and_store(Pass& p, int il) {
  Scratch& s = p.s;
  const model::Hparams& hp = p.hp;
  const model::LayerWeights& L = p.m.layers[size_t(il)];
  const int Qd = hp.q_dim(), KVd = hp.kv_dim(), HD = hp.head_dim, NH = hp.n_head,
            NKV = hp.n_head_kv;
  const std::vector<model::RopeCache>& rope = s.rope[rope_variant(hp, il)];
  for_rows(p.pool, p.T, Qd + 2 * KVd, [&](int64_t r) {
    float* qr = &s.q[size_t(r * Qd)];
    float* kr = &s.k[size_t(r * KVd)];
    if (L.q_norm) {
      for (int h = 0; h < NH; ++h)
        model::rms_norm(qr + h * HD, L.q_norm, HD, hp.rms_eps, qr + h * HD);
      for (int h = 0; h < NKV; ++h)
        model::rms_norm(kr + h * HD, L.k_norm, HD, hp.rms_eps, kr + h * HD);
    }
    const model::RopeCache& rc = rope[size_t(r)];
    model::rope(qr, NH, HD, hp.n_rot, rc, hp.rope_type);
    model::rope(kr, NKV, HD, hp.n_rot, rc, hp.rope_type);
    const Row& row = s.rows[size_t(r)];
    SeqCache& c = p.seqs[size_t(row.seq)];
    const int slot = row.pos - first_row(c, hp, il);  // a windowed sliding layer's row
    const size_t off = size_t(slot) * size_t(KVd);
    if (!p.f16kv) {
      store_key(c.k32[size_t(il)].data(), slot, kr, NKV, HD);
      std::memcpy(&c.v32[size_t(il)][off], &s.v[size_t(r * KVd)], size_t(KVd) * 4);
    } else {
      store_key(c.k16[size_t(il)].data(), slot, kr, NKV, HD);
      for (int i = 0; i < KVd; ++i)
        c.v16[size_t(il)][off + size_t(i)] = ops::fp32_to_fp16(s.v[size_t(r * KVd + i)]);
    }
  });
}

// Tap slots for input ii at layer il (filled by the attention kernel from the exact softmax rows).
void add_taps(Pass& p, size_t ii, int il, AttnSeq& as) {
  const SeqInput& in = p.inputs[ii];
  if (std::find(in.attn_layers.begin(), in.attn_layers.end(), il) == in.attn_layers.end()) return;
  std::vector<int> qs = in.attn_queries;
  if (qs.empty() && !in.tokens.empty()) qs.push_back(int(in.tokens.size()) - 1);
  for (int qrow : qs) {
    AttentionRow ar;
    ar.layer = il;
    ar.query_pos = as.pos0 + qrow;
    ar.heads.assign(size_t(p.hp.n_head), std::vector<float>(size_t(ar.query_pos + 1)));
    // The heads' buffer moves with the AttentionRow, so the pointer stays valid.
    as.taps.push_back(AttnTap{qrow, ar.heads.data()});
    p.out[ii].attention.push_back(std::move(ar));
  }
}

// The last layer's attention output is read only for rows that go on (logits, final hidden
// state) and tapped rows: start at the first of them (K/V are already stored).
void skip_unread_rows(AttnSeq& as, const char* need_final, int Qd) {
  int first = as.n_rows;
  for (int r = 0; r < as.n_rows; ++r)
    if (need_final[r]) {
      first = r;
      break;
    }
  for (const AttnTap& t : as.taps) first = std::min(first, t.row);
  as.q += size_t(first) * size_t(Qd);
  as.out += size_t(first) * size_t(Qd);
  as.pos0 += first;
  as.n_rows -= first;
  for (AttnTap& t : as.taps) t.row -= first;
}
}  // namespace

void embed(Pass& p) {
  Scratch& s = p.s;
  const model::Hparams& hp = p.hp;
  const int64_t T = p.T;
  s.ids.resize(size_t(T));
  for (int64_t r = 0; r < T; ++r) s.ids[size_t(r)] = s.rows[size_t(r)].token;
  ops::get_rows(p.m.tok_embd, s.ids.data(), T, s.x.data());
  if (p.m.arch().scale_embeddings) {  // gemma: ggml_scale(inpL, sqrtf(n_embd))
    const float k = std::sqrt(float(hp.n_embd));
    for (size_t i = 0; i < size_t(T * hp.n_embd); ++i) s.x[i] *= k;
  }
  // RoPE angles depend only on the position (and the layer kind): computed once per row.
  const bool any_swa = !hp.swa_layers.empty();
  for (int v = 0; v < (any_swa ? 2 : 1); ++v)
    if (s.rope[v].size() < size_t(T)) s.rope[v].resize(size_t(T));
  const float* ff = p.m.rope_freqs;
  const bool hf = p.m.numerics() == Numerics::transformers;  // engine_options.h
  auto angles = [&](model::RopeCache& rc, int pos, float base, float freq_scale) {
    if (hf)
      rc.compute_transformers(pos, hp.n_rot, base, freq_scale, ff);
    else
      rc.compute(pos, hp.n_rot, base, freq_scale, ff);
  };
  for_rows(p.pool, T, 64 * hp.n_rot, [&](int64_t r) {
    const int pos = s.rows[size_t(r)].pos;
    angles(s.rope[0][size_t(r)], pos, hp.rope_base, 1.0f / hp.rope_scale);
    // Sliding layers: their own base and no linear scaling (llama.cpp's gemma3 swa values).
    if (any_swa) angles(s.rope[1][size_t(r)], pos, hp.rope_base_swa, 1.0f);
  });
}

void attention_block(Pass& p, int il) {
  Scratch& s = p.s;
  const model::Hparams& hp = p.hp;
  const model::LayerWeights& L = p.m.layers[size_t(il)];
  const int64_t T = p.T, E = hp.n_embd, Qd = hp.q_dim(), KVd = hp.kv_dim();
  // h = RMSNorm(x) * attn_norm; q, k, v = W h (+ b)
  for_rows(p.pool, T, E, [&](int64_t r) {
    model::rms_norm(&s.x[size_t(r * E)], L.attn_norm, int(E), hp.rms_eps, &s.cur[size_t(r * E)]);
  });
  ops::matmul(L.wq, s.cur.data(), T, s.q.data(), p.pool);
  ops::matmul(L.wk, s.cur.data(), T, s.k.data(), p.pool);
  ops::matmul(L.wv, s.cur.data(), T, s.v.data(), p.pool);
  add_bias(s.q.data(), L.bq, T, Qd);
  add_bias(s.k.data(), L.bk, T, KVd);
  add_bias(s.v.data(), L.bv, T, KVd);
  rope_and_store(p, il);

  // Attention over each sequence's cache (runtime/attention.h).
  const bool last_layer = il == hp.n_layer - 1;
  auto& aseqs = s.attn_seqs;
  aseqs.resize(p.inputs.size());
  int64_t base = 0;
  for (size_t ii = 0; ii < p.inputs.size(); ++ii) {
    const SeqInput& in = p.inputs[ii];
    const SeqCache& c = p.seqs[size_t(in.seq)];
    AttnSeq& as = aseqs[ii];
    as.kv = p.f16kv ? KvView{nullptr, nullptr, c.k16[size_t(il)].data(), c.v16[size_t(il)].data()}
                    : KvView{c.k32[size_t(il)].data(), c.v32[size_t(il)].data(), nullptr, nullptr};
    as.q = &s.q[size_t(base * Qd)];
    as.out = &s.attn[size_t(base * Qd)];
    as.base = first_row(c, hp, il);
    as.pos0 = c.n_past;
    as.n_rows = int(in.tokens.size());
    as.taps.clear();
    as.steer = c.steer.active() && c.steer.steers_layer(il) ? &c.steer : nullptr;
    add_taps(p, ii, il, as);
    if (last_layer) skip_unread_rows(as, &s.need_final[size_t(base)], int(Qd));
    base += int64_t(in.tokens.size());
  }
  AttnShape shape{hp.n_head, hp.n_head_kv, hp.head_dim, hp.attention_scale()};
  if (hp.is_swa(il)) shape.window = hp.n_swa;
  attention(shape, aseqs, p.pool, s.attn_scratch, p.simd);
}

bool keep_output_rows(Pass& p) {
  // On the last layer, only rows someone reads go on (llama.cpp's inp_out_ids).
  Scratch& s = p.s;
  const int64_t T = p.T, E = p.hp.n_embd, Qd = p.hp.q_dim();
  s.keep.clear();
  for (int64_t r = 0; r < T; ++r)
    if (s.need_final[size_t(r)]) s.keep.push_back(r);
  if (s.keep.empty()) return false;
  if (int64_t(s.keep.size()) < T) {
    for (size_t k = 0; k < s.keep.size(); ++k) {
      std::memmove(&s.attn[k * size_t(Qd)], &s.attn[size_t(s.keep[k] * Qd)], size_t(Qd) * 4);
      std::memmove(&s.x[k * size_t(E)], &s.x[size_t(s.keep[k] * E)], size_t(E) * 4);
    }
    p.Tn = int64_t(s.keep.size());
  }
  return true;
}

void attention_output(Pass& p, int il) {
  const model::LayerWeights& L = p.m.layers[size_t(il)];
  ops::matmul(L.wo, p.s.attn.data(), p.Tn, p.s.o.data(), p.pool);
  residual_add(p, L.attn_post_norm);
}

void ffn_block(Pass& p, int il) {
  Scratch& s = p.s;
  const model::Hparams& hp = p.hp;
  const model::LayerWeights& L = p.m.layers[size_t(il)];
  const int64_t E = hp.n_embd, FF = hp.n_ff, Tn = p.Tn;
  // h = RMSNorm(x) * ffn_norm; x += W_down (act(W_gate h) * W_up h)
  for_rows(p.pool, Tn, E, [&](int64_t r) {
    model::rms_norm(&s.x[size_t(r * E)], L.ffn_norm, int(E), hp.rms_eps, &s.cur[size_t(r * E)]);
  });
  ops::matmul(L.w_gate, s.cur.data(), Tn, s.gate.data(), p.pool);
  ops::matmul(L.w_up, s.cur.data(), Tn, s.up.data(), p.pool);
  const bool gelu = p.m.arch().ffn_act == model::FfnAct::GeluTanh;
  const bool gelu_table = p.m.numerics() == Numerics::ggml;  // else the tanh form in float
  // act(gate) * up in chunks of 1024 (one decode row stays on this thread: too small)
  const int64_t n = Tn * FF, chunk = 1024;
  for_rows(p.pool, (n + chunk - 1) / chunk, chunk, [&](int64_t c) {
    const int64_t b = c * chunk, len = std::min(chunk, n - b);
    float* g = &s.gate[size_t(b)];
    const float* u = &s.up[size_t(b)];
    if (gelu && gelu_table) {  // ggml's geglu: GELU(gate) from the F16 table, times up
      geglu(g, u, len, g, p.simd);
    } else if (gelu) {
      model::gelu_tanh(g, int(len), g);
      for (int64_t i = 0; i < len; ++i) g[i] *= u[i];
    } else {
      swiglu(g, u, len, g, p.simd);
    }
  });
  ops::matmul(L.w_down, s.gate.data(), Tn, s.o.data(), p.pool);
  residual_add(p, L.ffn_post_norm);
}

void collect_hidden(Pass& p, int il) {
  // Row r of x is original row keep[r] on the last layer.
  const Scratch& s = p.s;
  const int64_t E = p.hp.n_embd;
  for (size_t ii = 0; ii < p.inputs.size(); ++ii) {
    if (p.inputs[ii].hidden_layer != il) continue;
    p.out[ii].hidden.clear();
    for (int64_t r = 0; r < p.Tn; ++r) {
      int64_t orig = s.keep.empty() ? r : s.keep[size_t(r)];
      if (s.rows[size_t(orig)].input != int(ii)) continue;
      p.out[ii].hidden.insert(p.out[ii].hidden.end(), &s.x[size_t(r * E)],
                              &s.x[size_t((r + 1) * E)]);
    }
  }
}

namespace {
// The vocabulary projection of rows lrows of s.cur (compacted), soft-capped where the arch says.
void project_logits(Pass& p) {
  Scratch& s = p.s;
  const int64_t E = p.hp.n_embd, V = p.hp.n_vocab;
  s.h.resize(s.lrows.size() * size_t(E));
  for (size_t k = 0; k < s.lrows.size(); ++k)
    std::memcpy(&s.h[k * size_t(E)], &s.cur[size_t(s.lrows[k] * E)], size_t(E) * 4);
  s.logits.resize(s.lrows.size() * size_t(V));
  ops::matmul(p.m.output, s.h.data(), int64_t(s.lrows.size()), s.logits.data(), p.pool);
  if (const float cap = p.hp.final_softcap; cap > 0.0f) {  // ggml: scale 1/cap, tanh, scale cap
    const float inv = 1.0f / cap;
    for (float& l : s.logits) l = std::tanh(l * inv) * cap;
  }
  for (size_t k = 0; k < s.lrows.size(); ++k) {
    const Row& row = s.rows[size_t(s.final_rows[size_t(s.lrows[k])])];
    SeqOutput& so = p.out[size_t(row.input)];
    so.logit_positions.push_back(row.pos);
    so.logits.insert(so.logits.end(), &s.logits[k * size_t(V)], &s.logits[(k + 1) * size_t(V)]);
  }
}
}  // namespace

void output_head(Pass& p) {
  Scratch& s = p.s;
  const model::Hparams& hp = p.hp;
  const int64_t E = hp.n_embd, T = p.T, Tn = p.Tn;
  // Final norm and the vocabulary projection, only for rows whose logits are read.
  s.final_rows = s.keep;
  if (s.keep.empty())
    for (int64_t r = 0; r < T; ++r) s.final_rows.push_back(r);
  for (int64_t r = 0; r < Tn; ++r)
    model::rms_norm(&s.x[size_t(r * E)], p.m.output_norm, int(E), hp.rms_eps,
                    &s.cur[size_t(r * E)]);
  for (size_t ii = 0; ii < p.inputs.size(); ++ii) {
    if (p.inputs[ii].hidden_layer != hp.n_layer) continue;
    for (int64_t r = 0; r < Tn; ++r)
      if (s.rows[size_t(s.final_rows[size_t(r)])].input == int(ii))
        p.out[ii].hidden.insert(p.out[ii].hidden.end(), &s.cur[size_t(r * E)],
                                &s.cur[size_t((r + 1) * E)]);
  }
  // Rows needing logits, compacted.
  s.lrows.clear();
  for (int64_t r = 0; r < Tn; ++r) {
    const int64_t fr = s.final_rows[size_t(r)];
    const Row& row = s.rows[size_t(fr)];
    const SeqInput& in = p.inputs[size_t(row.input)];
    bool last = fr + 1 == T || s.rows[size_t(fr + 1)].input != row.input;
    if (in.logits == LogitsMode::All || (in.logits == LogitsMode::Last && last))
      s.lrows.push_back(r);
  }
  if (!s.lrows.empty()) project_logits(p);
}

}  // namespace ragform::runtime::detail

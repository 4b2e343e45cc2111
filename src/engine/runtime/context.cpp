#include "engine/runtime/context.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "engine/model/blocks.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/runtime/attention.h"
#include "engine/runtime/elementwise.h"

namespace ragform::runtime {

using model::Hparams;

namespace {
// Per-sequence KV cache: for each layer, K in attention.h's tiled layout (positions transposed in
// tiles of kKeyTile) and V rows [pos][kv_dim], F32 or F16 (stored as the 16-bit pattern). Grows
// in steps of 256 positions up to n_ctx.
struct SeqCache {
  bool live = false;
  int n_past = 0;
  int capacity = 0;
  std::vector<std::vector<float>> k32, v32;
  std::vector<std::vector<uint16_t>> k16, v16;
};

// One row of the batch: which sequence, position, and where its outputs go.
struct Row {
  int input;  // index into inputs
  int seq;
  int pos;
  int32_t token;
};

// f(r) for r in [0, n): on the pool when n * cost_per_row (elements touched) is worth waking the
// workers, else inline (decode rows are too small to split).
template <class F>
void for_rows(ThreadPool& pool, int64_t n, int64_t cost_per_row, const F& f) {
  if (pool.size() == 1 || n * cost_per_row < (int64_t(1) << 14) || n < 2) {
    for (int64_t r = 0; r < n; ++r) f(r);
    return;
  }
  pool.parallel_for(size_t(n), [&](size_t b, size_t e, int) {
    for (size_t r = b; r < e; ++r) f(int64_t(r));
  });
}
}  // namespace

struct Context::Impl {
  std::vector<SeqCache> seqs;
  // Scratch reused across calls (grown, never shrunk): activations are [T][dim].
  std::vector<float> x, cur, q, k, v, attn, o, gate, up;
  AttnScratch attn_scratch;
  std::vector<AttnSeq> attn_seqs;
  // Per-eval bookkeeping, kept to avoid allocating on every decode step.
  std::vector<Row> rows;
  std::vector<model::RopeCache> rope;  // per batch row, shared by all layers
  std::vector<char> need_final;
  std::vector<int32_t> ids;
  std::vector<int64_t> keep, final_rows, lrows;
  std::vector<float> h, logits;
};

Context::Context(const model::Model& m, ContextParams p)
    : m_(m), params_(p), impl_(std::make_unique<Impl>()) {
  if (params_.n_ctx <= 0)
    throw Error("context", "n_ctx must be positive, got " + std::to_string(params_.n_ctx));
  if (!params_.pool) params_.pool = std::make_shared<ThreadPool>(params_.threads);
  if (m.hp().n_rot / 2 > 512)
    throw Error("context", "rope dimension count above 1024 is not supported");
}

Context::~Context() = default;

int Context::new_sequence() {
  auto& seqs = impl_->seqs;
  for (size_t i = 0; i < seqs.size(); ++i)
    if (!seqs[i].live) {
      seqs[i] = SeqCache{};
      seqs[i].live = true;
      return int(i);
    }
  seqs.emplace_back();
  seqs.back().live = true;
  return int(seqs.size() - 1);
}

void Context::free_sequence(int seq) {
  if (seq < 0 || size_t(seq) >= impl_->seqs.size()) return;
  impl_->seqs[size_t(seq)] = SeqCache{};
}

static SeqCache& get_seq(std::vector<SeqCache>& seqs, int seq) {
  if (seq < 0 || size_t(seq) >= seqs.size() || !seqs[size_t(seq)].live)
    throw Error("context", "no live sequence " + std::to_string(seq));
  return seqs[size_t(seq)];
}

void Context::truncate(int seq, int n) {
  SeqCache& s = get_seq(impl_->seqs, seq);
  if (n < 0 || n > s.n_past)
    throw Error("context", "cannot truncate sequence of " + std::to_string(s.n_past) +
                               " tokens to " + std::to_string(n));
  s.n_past = n;
}

int Context::n_past(int seq) const { return get_seq(impl_->seqs, seq).n_past; }

size_t Context::kv_bytes() const {
  size_t b = 0;
  for (auto& s : impl_->seqs) {
    for (auto& x : s.k32) b += x.size() * 4;
    for (auto& x : s.v32) b += x.size() * 4;
    for (auto& x : s.k16) b += x.size() * 2;
    for (auto& x : s.v16) b += x.size() * 2;
  }
  return b;
}

namespace {
void grow(SeqCache& s, int need, const Hparams& hp, KvType kt, int n_ctx) {
  if (need <= s.capacity) return;
  int cap = std::min(n_ctx, (need + 255) / 256 * 256);
  // Tiles are appended at the end of the K layout, so growing keeps the cached keys in place.
  const size_t nk = key_cache_elems(cap, hp.kv_dim()), nv = size_t(cap) * size_t(hp.kv_dim());
  if (kt == KvType::F32) {
    s.k32.resize(size_t(hp.n_layer));
    s.v32.resize(size_t(hp.n_layer));
    for (int l = 0; l < hp.n_layer; ++l) {
      s.k32[size_t(l)].resize(nk);
      s.v32[size_t(l)].resize(nv);
    }
  } else {
    s.k16.resize(size_t(hp.n_layer));
    s.v16.resize(size_t(hp.n_layer));
    for (int l = 0; l < hp.n_layer; ++l) {
      s.k16[size_t(l)].resize(nk);
      s.v16[size_t(l)].resize(nv);
    }
  }
  s.capacity = cap;
}

void add_bias(float* y, const float* b, int64_t rows, int64_t n) {
  if (!b) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += b[i];
}
}  // namespace

std::vector<SeqOutput> Context::eval(const std::vector<SeqInput>& inputs) {
  const model::Model& M = m_;
  const Hparams& hp = M.hp();
  Impl& I = *impl_;
  ThreadPool& pool = *params_.pool;
  const int E = hp.n_embd, Qd = hp.q_dim(), KVd = hp.kv_dim(), FF = hp.n_ff, HD = hp.head_dim;
  const int NH = hp.n_head, NKV = hp.n_head_kv;

  // Validate everything before touching any cache.
  std::vector<Row>& rows = I.rows;
  rows.clear();
  for (size_t ii = 0; ii < inputs.size(); ++ii) {
    const SeqInput& in = inputs[ii];
    SeqCache& s = get_seq(I.seqs, in.seq);
    for (size_t jj = 0; jj < ii; ++jj)
      if (inputs[jj].seq == in.seq)
        throw Error("context",
                    "sequence " + std::to_string(in.seq) + " appears twice in one batch");
    if (s.n_past + int64_t(in.tokens.size()) > params_.n_ctx)
      throw Error("context",
                  "prompt of " + std::to_string(s.n_past + in.tokens.size()) +
                      " tokens exceeds the context size n_ctx = " + std::to_string(params_.n_ctx));
    for (int32_t t : in.tokens)
      if (t < 0 || t >= hp.n_vocab)
        throw Error("context", "token id " + std::to_string(t) + " is outside the vocabulary of " +
                                   std::to_string(hp.n_vocab));
    for (int q : in.attn_queries)
      if (q < 0 || q >= int(in.tokens.size()))
        throw Error("context", "attention query row " + std::to_string(q) + " is outside the " +
                                   std::to_string(in.tokens.size()) + " new tokens");
    for (int l : in.attn_layers)
      if (l < 0 || l >= hp.n_layer)
        throw Error("context", "attention layer " + std::to_string(l) + " is outside 0.." +
                                   std::to_string(hp.n_layer - 1));
    if (in.hidden_layer < -1 || in.hidden_layer > hp.n_layer)
      throw Error("context", "hidden layer " + std::to_string(in.hidden_layer) + " is outside 0.." +
                                 std::to_string(hp.n_layer));
    for (size_t t = 0; t < in.tokens.size(); ++t)
      rows.push_back(Row{int(ii), in.seq, s.n_past + int(t), in.tokens[t]});
  }
  std::vector<SeqOutput> out(inputs.size());
  const int64_t T = int64_t(rows.size());
  if (T == 0) return out;
  for (auto& in : inputs)
    grow(get_seq(I.seqs, in.seq), get_seq(I.seqs, in.seq).n_past + int(in.tokens.size()), hp,
         params_.kv_type, params_.n_ctx);

  // Which rows does anyone read after the last layer's attention? (logits or final hidden)
  std::vector<char>& need_final = I.need_final;
  need_final.assign(size_t(T), 0);
  bool need_ffn_all_last = false;
  for (int64_t r = 0; r < T; ++r) {
    const SeqInput& in = inputs[size_t(rows[size_t(r)].input)];
    bool last = r + 1 == T || rows[size_t(r + 1)].input != rows[size_t(r)].input;
    if (in.logits == LogitsMode::All || (in.logits == LogitsMode::Last && last))
      need_final[size_t(r)] = 1;
    if (in.hidden_layer >= hp.n_layer - 1) need_final[size_t(r)] = 1, need_ffn_all_last = true;
  }
  (void)need_ffn_all_last;

  I.x.resize(size_t(T * E));
  I.cur.resize(size_t(T * E));
  I.q.resize(size_t(T * Qd));
  I.k.resize(size_t(T * KVd));
  I.v.resize(size_t(T * KVd));
  I.attn.resize(size_t(T * Qd));
  I.o.resize(size_t(T * E));
  I.gate.resize(size_t(T * FF));
  I.up.resize(size_t(T * FF));

  I.ids.resize(size_t(T));
  for (int64_t r = 0; r < T; ++r) I.ids[size_t(r)] = rows[size_t(r)].token;
  ops::get_rows(M.tok_embd, I.ids.data(), T, I.x.data());
  // RoPE angles depend only on the position: computed once per row for all layers.
  if (I.rope.size() < size_t(T)) I.rope.resize(size_t(T));
  for_rows(pool, T, 64 * hp.n_rot, [&](int64_t r) {
    I.rope[size_t(r)].compute(rows[size_t(r)].pos, hp.n_rot, hp.rope_base, 1.0f / hp.rope_scale);
  });

  const AttnShape ashape{NH, NKV, HD, 1.0f / std::sqrt(float(HD))};
  const SimdLevel simd = simd_level_for(M.policy().tier);
  const bool f16kv = params_.kv_type == KvType::F16;

  for (int il = 0; il < hp.n_layer; ++il) {
    const model::LayerWeights& L = M.layers[size_t(il)];
    const bool last_layer = il == hp.n_layer - 1;
    // --- attention block: h = RMSNorm(x) * attn_norm; q, k, v = W h (+ b)
    for_rows(pool, T, E, [&](int64_t r) {
      model::rms_norm(&I.x[size_t(r * E)], L.attn_norm, E, hp.rms_eps, &I.cur[size_t(r * E)]);
    });
    ops::matmul(L.wq, I.cur.data(), T, I.q.data(), pool);
    ops::matmul(L.wk, I.cur.data(), T, I.k.data(), pool);
    ops::matmul(L.wv, I.cur.data(), T, I.v.data(), pool);
    add_bias(I.q.data(), L.bq, T, Qd);
    add_bias(I.k.data(), L.bk, T, KVd);
    add_bias(I.v.data(), L.bv, T, KVd);
    for_rows(pool, T, Qd + 2 * KVd, [&](int64_t r) {
      float* qr = &I.q[size_t(r * Qd)];
      float* kr = &I.k[size_t(r * KVd)];
      if (L.q_norm) {
        for (int h = 0; h < NH; ++h)
          model::rms_norm(qr + h * HD, L.q_norm, HD, hp.rms_eps, qr + h * HD);
        for (int h = 0; h < NKV; ++h)
          model::rms_norm(kr + h * HD, L.k_norm, HD, hp.rms_eps, kr + h * HD);
      }
      const model::RopeCache& rc = I.rope[size_t(r)];
      model::rope(qr, NH, HD, hp.n_rot, rc, hp.rope_type);
      model::rope(kr, NKV, HD, hp.n_rot, rc, hp.rope_type);
      // Store k, v in the sequence's cache at this position.
      SeqCache& s = I.seqs[size_t(rows[size_t(r)].seq)];
      size_t off = size_t(rows[size_t(r)].pos) * size_t(KVd);
      if (!f16kv) {
        store_key(s.k32[size_t(il)].data(), rows[size_t(r)].pos, kr, NKV, HD);
        std::memcpy(&s.v32[size_t(il)][off], &I.v[size_t(r * KVd)], size_t(KVd) * 4);
      } else {
        store_key(s.k16[size_t(il)].data(), rows[size_t(r)].pos, kr, NKV, HD);
        for (int i = 0; i < KVd; ++i)
          s.v16[size_t(il)][off + size_t(i)] = ops::fp32_to_fp16(I.v[size_t(r * KVd + i)]);
      }
    });

    // Attention over each sequence's cache (runtime/attention.h); taps wanted at this layer get
    // their AttentionRow slots here and are filled by the kernel from the exact softmax rows.
    {
      auto& aseqs = I.attn_seqs;
      aseqs.resize(inputs.size());
      int64_t base = 0;
      for (size_t ii = 0; ii < inputs.size(); ++ii) {
        const SeqInput& in = inputs[ii];
        const SeqCache& s = I.seqs[size_t(in.seq)];
        AttnSeq& as = aseqs[ii];
        as.kv = f16kv
                    ? KvView{nullptr, nullptr, s.k16[size_t(il)].data(), s.v16[size_t(il)].data()}
                    : KvView{s.k32[size_t(il)].data(), s.v32[size_t(il)].data(), nullptr, nullptr};
        as.q = &I.q[size_t(base * Qd)];
        as.out = &I.attn[size_t(base * Qd)];
        as.pos0 = s.n_past;
        as.n_rows = int(in.tokens.size());
        as.taps.clear();
        if (std::find(in.attn_layers.begin(), in.attn_layers.end(), il) != in.attn_layers.end()) {
          std::vector<int> qs = in.attn_queries;
          if (qs.empty() && !in.tokens.empty()) qs.push_back(int(in.tokens.size()) - 1);
          for (int qrow : qs) {
            AttentionRow ar;
            ar.layer = il;
            ar.query_pos = s.n_past + qrow;
            ar.heads.assign(size_t(NH), std::vector<float>(size_t(ar.query_pos + 1)));
            // The heads' buffer moves with the AttentionRow, so the pointer stays valid.
            as.taps.push_back(AttnTap{qrow, ar.heads.data()});
            out[ii].attention.push_back(std::move(ar));
          }
        }
        if (last_layer) {
          // The last layer's attention output is read only for rows that go on (logits, final
          // hidden state) and tapped rows: start at the first of them (K/V are already stored).
          int first = as.n_rows;
          for (int r = 0; r < as.n_rows; ++r)
            if (need_final[size_t(base + r)]) {
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
        base += int64_t(in.tokens.size());
      }
      attention(ashape, aseqs, pool, I.attn_scratch, simd);
    }

    // On the last layer, only rows someone reads go on (llama.cpp's inp_out_ids): an
    // attention-only pass stops here.
    int64_t Tn = T;
    std::vector<int64_t>& keep = I.keep;
    keep.clear();
    if (last_layer) {
      for (int64_t r = 0; r < T; ++r)
        if (need_final[size_t(r)]) keep.push_back(r);
      if (keep.empty()) break;
      if (int64_t(keep.size()) < T) {
        for (size_t k = 0; k < keep.size(); ++k) {
          std::memmove(&I.attn[k * size_t(Qd)], &I.attn[size_t(keep[k] * Qd)], size_t(Qd) * 4);
          std::memmove(&I.x[k * size_t(E)], &I.x[size_t(keep[k] * E)], size_t(E) * 4);
        }
        Tn = int64_t(keep.size());
      }
    }
    ops::matmul(L.wo, I.attn.data(), Tn, I.o.data(), pool);
    for_rows(pool, Tn, E, [&](int64_t r) {
      for (int64_t i = r * E; i < (r + 1) * E; ++i) I.x[size_t(i)] += I.o[size_t(i)];
    });

    // --- feed-forward block: x += W_down (silu(W_gate h) * W_up h), h = RMSNorm(x) * ffn_norm
    for_rows(pool, Tn, E, [&](int64_t r) {
      model::rms_norm(&I.x[size_t(r * E)], L.ffn_norm, E, hp.rms_eps, &I.cur[size_t(r * E)]);
    });
    ops::matmul(L.w_gate, I.cur.data(), Tn, I.gate.data(), pool);
    ops::matmul(L.w_up, I.cur.data(), Tn, I.up.data(), pool);
    {  // silu(gate) * up in chunks of 1024 (one decode row stays on this thread: too small)
      const int64_t n = Tn * FF, chunk = 1024;
      for_rows(pool, (n + chunk - 1) / chunk, chunk, [&](int64_t c) {
        const int64_t b = c * chunk, len = std::min(chunk, n - b);
        swiglu(&I.gate[size_t(b)], &I.up[size_t(b)], len, &I.gate[size_t(b)], simd);
      });
    }
    ops::matmul(L.w_down, I.gate.data(), Tn, I.o.data(), pool);
    for_rows(pool, Tn, E, [&](int64_t r) {
      for (int64_t i = r * E; i < (r + 1) * E; ++i) I.x[size_t(i)] += I.o[size_t(i)];
    });

    // Hidden-state tap after this block (row r of x is original row keep[r] on the last layer).
    for (size_t ii = 0; ii < inputs.size(); ++ii) {
      if (inputs[ii].hidden_layer != il) continue;
      out[ii].hidden.clear();
      for (int64_t r = 0; r < Tn; ++r) {
        int64_t orig = keep.empty() ? r : keep[size_t(r)];
        if (rows[size_t(orig)].input != int(ii)) continue;
        out[ii].hidden.insert(out[ii].hidden.end(), &I.x[size_t(r * E)], &I.x[size_t((r + 1) * E)]);
      }
    }
    if (last_layer) {
      // Final norm and the vocabulary projection, only for rows whose logits are read.
      std::vector<int64_t>& final_rows = I.final_rows;
      final_rows = keep;
      if (keep.empty())
        for (int64_t r = 0; r < T; ++r) final_rows.push_back(r);
      for (int64_t r = 0; r < Tn; ++r)
        model::rms_norm(&I.x[size_t(r * E)], M.output_norm, E, hp.rms_eps, &I.cur[size_t(r * E)]);
      for (size_t ii = 0; ii < inputs.size(); ++ii) {
        if (inputs[ii].hidden_layer != hp.n_layer) continue;
        for (int64_t r = 0; r < Tn; ++r)
          if (rows[size_t(final_rows[size_t(r)])].input == int(ii))
            out[ii].hidden.insert(out[ii].hidden.end(), &I.cur[size_t(r * E)],
                                  &I.cur[size_t((r + 1) * E)]);
      }
      // Rows needing logits, compacted.
      std::vector<int64_t>& lrows = I.lrows;
      lrows.clear();
      for (int64_t r = 0; r < Tn; ++r) {
        const Row& row = rows[size_t(final_rows[size_t(r)])];
        const SeqInput& in = inputs[size_t(row.input)];
        bool last = final_rows[size_t(r)] + 1 == T ||
                    rows[size_t(final_rows[size_t(r)] + 1)].input != row.input;
        if (in.logits == LogitsMode::All || (in.logits == LogitsMode::Last && last))
          lrows.push_back(r);
      }
      if (!lrows.empty()) {
        std::vector<float>& h = I.h;
        h.resize(lrows.size() * size_t(E));
        for (size_t k = 0; k < lrows.size(); ++k)
          std::memcpy(&h[k * size_t(E)], &I.cur[size_t(lrows[k] * E)], size_t(E) * 4);
        std::vector<float>& logits = I.logits;
        logits.resize(lrows.size() * size_t(hp.n_vocab));
        ops::matmul(M.output, h.data(), int64_t(lrows.size()), logits.data(), pool);
        for (size_t k = 0; k < lrows.size(); ++k) {
          const Row& row = rows[size_t(final_rows[size_t(lrows[k])])];
          SeqOutput& so = out[size_t(row.input)];
          so.logit_positions.push_back(row.pos);
          so.logits.insert(so.logits.end(), &logits[k * size_t(hp.n_vocab)],
                           &logits[(k + 1) * size_t(hp.n_vocab)]);
        }
      }
    }
  }
  for (auto& in : inputs) get_seq(I.seqs, in.seq).n_past += int(in.tokens.size());
  return out;
}

}  // namespace ragform::runtime

#include "engine/runtime/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "engine/model/blocks.h"
#include "engine/model/engine_options.h"
#include "engine/runtime/attention.h"
#include "engine/tokenizer/tokenizer.h"

namespace ragform::runtime {

using model::Pooling;

std::vector<int32_t> encoder_pieces(const tok::Tokenizer& tok, std::string_view text) {
  return tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
}

PairLengths longest_first(size_t la, size_t lb, size_t budget) {
  if (la + lb <= budget) return {la, lb};
  // Trimming one piece at a time from the longer segment (the first on a tie) shortens the longer
  // to budget - shorter when that leaves it at least as long; else both meet and then alternate,
  // ending at an even split with the odd piece on the second.
  const size_t shorter = std::min(la, lb);
  if (2 * shorter > budget) return {budget / 2, budget - budget / 2};
  return la >= lb ? PairLengths{budget - lb, lb} : PairLengths{la, budget - la};
}

namespace {
EncoderInput make_input(const tok::Tokenizer& tok, std::span<const int32_t> ids,
                        const std::span<const int32_t>* ids_b, int n_max, Truncate trunc,
                        int n_token_types) {
  // The tokenizer adds the specials the vocabulary asks for ([CLS] ... [SEP] for WordPiece):
  // split them off so the pieces can be truncated and a pair assembled around them.
  // The specials alone are what an empty text encodes to: [CLS] [SEP] for WordPiece (llama.cpp
  // adds [SEP] through its add_sep flag, not add_eos), the BOS first when there is one.
  const std::vector<int32_t> specials = tok.encode("", /*add_special=*/true, false);
  const size_t n_head = tok.add_bos() && !specials.empty() ? 1 : 0;
  const std::vector<int32_t> head(specials.begin(), specials.begin() + std::ptrdiff_t(n_head));
  const std::vector<int32_t> tail(specials.begin() + std::ptrdiff_t(n_head), specials.end());
  const bool pair = ids_b != nullptr;
  const std::span<const int32_t> b = pair ? *ids_b : std::span<const int32_t>{};

  EncoderInput in;
  const size_t n_special = head.size() + tail.size() * (pair ? 2 : 1);
  const size_t n_total = n_special + ids.size() + b.size();
  PairLengths keep{ids.size(), b.size()};
  if (n_max > 0 && n_total > size_t(n_max)) {
    if (trunc == Truncate::Error)
      // Named by the setting's key, which every front end spells its way (--truncate,
      // truncate=): the engine names no CLI flag.
      throw Error("encoder", "input of " + std::to_string(n_total) +
                                 " tokens is longer than the model's " + std::to_string(n_max) +
                                 " (the truncate setting 'right' cuts it at the end)");
    if (size_t(n_max) <= n_special)
      throw Error("encoder", "context of " + std::to_string(n_max) + " tokens is too small");
    keep = longest_first(ids.size(), b.size(), size_t(n_max) - n_special);
    in.truncated = true;
  }
  // (push_back, not insert: GCC 12 reports a false -Wstringop-overflow for the inserts)
  in.tokens.reserve(n_special + keep.a + keep.b);
  for (int32_t t : head) in.tokens.push_back(t);
  for (size_t i = 0; i < keep.a; ++i) in.tokens.push_back(ids[i]);
  for (int32_t t : tail) in.tokens.push_back(t);
  if (pair) {
    const size_t first_b = in.tokens.size();
    for (size_t i = 0; i < keep.b; ++i) in.tokens.push_back(b[i]);
    for (int32_t t : tail) in.tokens.push_back(t);
    if (n_token_types >= 2) {
      in.types.assign(in.tokens.size(), 0);
      std::fill(in.types.begin() + std::ptrdiff_t(first_b), in.types.end(), 1);
    }
  }
  return in;
}
}  // namespace

EncoderInput encoder_input(const tok::Tokenizer& tok, std::string_view a, int n_max,
                           Truncate trunc) {
  const std::vector<int32_t> ids = encoder_pieces(tok, a);
  return make_input(tok, ids, nullptr, n_max, trunc, 0);
}

EncoderInput encoder_pair_input(const tok::Tokenizer& tok, std::string_view a, std::string_view b,
                                int n_max, Truncate trunc, int n_token_types) {
  const std::vector<int32_t> ids = encoder_pieces(tok, a);
  const std::vector<int32_t> ids_b = encoder_pieces(tok, b);
  const std::span<const int32_t> sb(ids_b);
  return make_input(tok, ids, &sb, n_max, trunc, n_token_types);
}

EncoderInput encoder_pair_input(const tok::Tokenizer& tok, std::span<const int32_t> a,
                                std::span<const int32_t> b, int n_max, Truncate trunc,
                                int n_token_types) {
  return make_input(tok, a, &b, n_max, trunc, n_token_types);
}

void l2_normalize(std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  if (s <= 0) return;
  const float inv = float(1.0 / std::sqrt(s));
  for (float& x : v) x *= inv;
}

namespace {
// f(r) for r in [0, n) on the pool when there is enough work to wake it.
template <class F>
void for_rows(ThreadPool& pool, int64_t n, int64_t cost_per_row, const F& f) {
  if (pool.size() == 1 || n < 2 || n * cost_per_row < (int64_t(1) << 14)) {
    for (int64_t r = 0; r < n; ++r) f(r);
    return;
  }
  pool.parallel_for(size_t(n), [&](size_t b, size_t e, int) {
    for (size_t r = b; r < e; ++r) f(int64_t(r));
  });
}

void add_bias_rows(float* y, const float* b, int64_t rows, int64_t n) {
  if (!b) return;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += b[i];
}
}  // namespace

struct Encoder::Impl {
  std::vector<float> x, q, k, v, attn, o, ff;
  std::vector<float> keys;  // every input's K, tiled as the attention kernel reads it
  std::vector<AttnSeq> seqs;
  AttnScratch attn_scratch;
  std::vector<int32_t> ids;

  // The steps of one pass over a batch of inputs laid end to end (input s holds rows
  // [base[s], base[s+1]) of every [T][...] buffer).
  void embed(const model::BertModel& M, const std::vector<const EncoderInput*>& batch,
             const std::vector<int64_t>& base, ThreadPool& pool);
  void layer(const model::BertModel& M, const model::BertLayer& L, const std::vector<int64_t>& base,
             const std::vector<size_t>& key_off, const AttnShape& shape, SimdLevel simd,
             ThreadPool& pool);
  void pool_rows(const model::BertModel& M, const std::vector<int64_t>& base, Pooling pooling,
                 EncoderOutput* out, ThreadPool& pool) const;
};

// Embeddings: (token + token_type) + position, then LayerNorm (llm_build_bert's order).
void Encoder::Impl::embed(const model::BertModel& M, const std::vector<const EncoderInput*>& batch,
                          const std::vector<int64_t>& base, ThreadPool& pool) {
  const model::BertHparams& hp = M.hp();
  const int E = hp.n_embd;
  const size_t nb = batch.size();
  const int64_t T = base[nb];
  ids.resize(size_t(T));
  for (size_t s = 0; s < nb; ++s)
    std::copy(batch[s]->tokens.begin(), batch[s]->tokens.end(), ids.begin() + base[s]);
  ops::get_rows(M.tok_embd, ids.data(), T, x.data());
  for (size_t s = 0; s < nb; ++s) {
    const EncoderInput& in = *batch[s];
    for (int64_t t = 0; t < int64_t(in.tokens.size()); ++t) {
      float* xr = &x[size_t((base[s] + t) * E)];
      if (!M.type_embd.empty()) {
        const float* ty = &M.type_embd[size_t(in.types.empty() ? 0 : in.types[size_t(t)]) * E];
        for (int e = 0; e < E; ++e) xr[e] += ty[e];
      }
      const float* pe = &M.pos_embd[size_t(t * E)];
      for (int e = 0; e < E; ++e) xr[e] += pe[e];
    }
  }
  for_rows(pool, T, E, [&](int64_t r) {
    float* xr = &x[size_t(r * E)];
    model::layer_norm(xr, M.embd_norm_w, M.embd_norm_b, E, hp.norm_eps, xr);
  });
}

// One post-norm encoder layer over every row of the batch.
void Encoder::Impl::layer(const model::BertModel& M, const model::BertLayer& L,
                          const std::vector<int64_t>& base, const std::vector<size_t>& key_off,
                          const AttnShape& shape, SimdLevel simd, ThreadPool& pool) {
  const model::BertHparams& hp = M.hp();
  const int E = hp.n_embd, FF = hp.n_ff, HD = hp.head_dim, NH = hp.n_head;
  const bool erf_gelu = M.numerics() == Numerics::transformers;  // engine_options.h
  const size_t nb = base.size() - 1;
  const int64_t T = base[nb];
  ops::matmul(L.wq, x.data(), T, q.data(), pool);
  ops::matmul(L.wk, x.data(), T, k.data(), pool);
  ops::matmul(L.wv, x.data(), T, v.data(), pool);
  add_bias_rows(q.data(), L.bq, T, E);
  add_bias_rows(k.data(), L.bk, T, E);
  add_bias_rows(v.data(), L.bv, T, E);

  // Bidirectional attention per input (runtime/attention.h with causal = false): the decoders'
  // kernel, so the same SIMD paths and the same softmax (max-subtracted, sum in double as
  // ggml_soft_max). K goes into the kernel's tiled layout; V rows are read where they are.
  seqs.resize(nb);
  for (size_t s = 0; s < nb; ++s) {
    const int64_t n = base[s + 1] - base[s], r0 = base[s];
    float* ks = keys.data() + key_off[s];
    for (int64_t j = 0; j < n; ++j) store_key(ks, int(j), &k[size_t((r0 + j) * E)], NH, HD);
    seqs[s].kv = KvView{ks, &v[size_t(r0 * E)], nullptr, nullptr};
    seqs[s].q = &q[size_t(r0 * E)];
    seqs[s].out = &attn[size_t(r0 * E)];
    seqs[s].pos0 = 0;
    seqs[s].n_rows = int(n);
  }
  attention(shape, seqs, pool, attn_scratch, simd);

  // Post-norm residual of a BERT block: x = LN(x + o + bias), row by row.
  auto residual_norm = [&](const float* bias, const float* norm_w, const float* norm_b) {
    for_rows(pool, T, 4 * E, [&](int64_t r) {
      float* xr = &x[size_t(r * E)];
      const float* orow = &o[size_t(r * E)];
      for (int e = 0; e < E; ++e) xr[e] += orow[e] + bias[e];
      model::layer_norm(xr, norm_w, norm_b, E, hp.norm_eps, xr);
    });
  };
  // x = LN(x + Wo attn + bo)
  ops::matmul(L.wo, attn.data(), T, o.data(), pool);
  residual_norm(L.bo, L.attn_norm_w, L.attn_norm_b);
  // x = LN(x + W_down GELU(W_up x + b_up) + b_down)
  ops::matmul(L.w_up, x.data(), T, ff.data(), pool);
  for_rows(pool, T, 4 * FF, [&](int64_t r) {
    float* fr = &ff[size_t(r * FF)];
    for (int e = 0; e < FF; ++e) fr[e] += L.b_up[e];
    if (erf_gelu)
      model::gelu_erf(fr, FF, fr);
    else
      model::gelu(fr, FF, fr);
  });
  ops::matmul(L.w_down, ff.data(), T, o.data(), pool);
  residual_norm(L.b_down, L.out_norm_w, L.out_norm_b);
}

// Each input's output from its final states: all of them, their mean, the first (CLS) or last
// row, or (rank) the classification head over the CLS rows of the whole batch at once.
void Encoder::Impl::pool_rows(const model::BertModel& M, const std::vector<int64_t>& base,
                              Pooling pooling, EncoderOutput* out, ThreadPool& pool) const {
  const int E = M.hp().n_embd;
  const size_t nb = base.size() - 1;
  std::vector<float> cls_rows;  // rank: [nb][E] CLS states
  for (size_t s = 0; s < nb; ++s) {
    EncoderOutput& res = out[s];
    const int64_t n = base[s + 1] - base[s];
    const float* xs = &x[size_t(base[s] * E)];
    res.n_tokens = int(n);
    switch (pooling) {
      case Pooling::None:
        res.states.assign(xs, xs + n * E);
        break;
      case Pooling::Mean: {
        std::vector<double> acc(size_t(E), 0.0);
        for (int64_t t = 0; t < n; ++t)
          for (int e = 0; e < E; ++e) acc[size_t(e)] += xs[t * E + e];
        res.pooled.resize(size_t(E));
        for (int e = 0; e < E; ++e) res.pooled[size_t(e)] = float(acc[size_t(e)] / double(n));
        break;
      }
      case Pooling::Cls:
        res.pooled.assign(xs, xs + E);
        break;
      case Pooling::Last:
        res.pooled.assign(xs + (n - 1) * E, xs + n * E);
        break;
      case Pooling::Rank:
        cls_rows.insert(cls_rows.end(), xs, xs + E);
        break;
    }
  }
  if (pooling != Pooling::Rank) return;
  const int64_t NB = int64_t(nb);
  std::vector<float> h = cls_rows;
  if (M.has_cls) {
    ops::matmul(M.cls, cls_rows.data(), NB, h.data(), pool);
    add_bias_rows(h.data(), M.cls_b, NB, E);
    for (float& val : h) val = std::tanh(val);
  }
  const int NL = M.n_labels();
  std::vector<float> scores(size_t(NB * NL));
  ops::matmul(M.cls_out, h.data(), NB, scores.data(), pool);
  add_bias_rows(scores.data(), M.cls_out_b, NB, NL);
  for (size_t s = 0; s < nb; ++s)
    out[s].pooled.assign(scores.begin() + std::ptrdiff_t(s * size_t(NL)),
                         scores.begin() + std::ptrdiff_t((s + 1) * size_t(NL)));
}

Encoder::Encoder(const model::BertModel& m, std::shared_ptr<ThreadPool> pool)
    : m_(m), pool_(shared_pool(pool, 0)), impl_(std::make_unique<Impl>()) {}

Encoder::~Encoder() = default;

std::vector<EncoderOutput> Encoder::encode(const std::vector<EncoderInput>& inputs,
                                           const EncodeOptions& opt) {
  const model::BertHparams& hp = m_.hp();
  if (opt.pooling == Pooling::Rank && !m_.has_cls_out)
    throw Error("encoder", m_.file().path() +
                               ": rank pooling needs a classification head, and "
                               "this model has none");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EncoderInput& in = inputs[i];
    const std::string where = "input " + std::to_string(i) + ": ";
    if (in.tokens.empty()) throw Error("encoder", where + "no tokens");
    if (int64_t(in.tokens.size()) > hp.n_ctx_train)
      throw Error("encoder", where + std::to_string(in.tokens.size()) +
                                 " tokens exceed the model's " + std::to_string(hp.n_ctx_train) +
                                 " positions");
    for (int32_t t : in.tokens)
      if (t < 0 || t >= hp.n_vocab)
        throw Error("encoder", where + "token id " + std::to_string(t) +
                                   " is outside the vocabulary of " + std::to_string(hp.n_vocab));
    if (!in.types.empty()) {
      if (in.types.size() != in.tokens.size())
        throw Error("encoder", where + "types and tokens differ in length");
      for (int32_t t : in.types)
        if (t < 0 || t >= std::max(1, hp.n_token_types))
          throw Error("encoder", where + "token type " + std::to_string(t) +
                                     " is outside the model's " + std::to_string(hp.n_token_types) +
                                     " types");
    }
  }
  std::vector<EncoderOutput> out(inputs.size());
  // Greedy passes of consecutive inputs up to max_batch_tokens.
  size_t i = 0;
  while (i < inputs.size()) {
    std::vector<const EncoderInput*> batch{&inputs[i]};
    int64_t n = int64_t(inputs[i].tokens.size());
    size_t j = i + 1;
    while (j < inputs.size() &&
           n + int64_t(inputs[j].tokens.size()) <= int64_t(std::max(1, opt.max_batch_tokens))) {
      n += int64_t(inputs[j].tokens.size());
      batch.push_back(&inputs[j++]);
    }
    run_pass(batch, opt, &out[i]);
    i = j;
  }
  return out;
}

void Encoder::run_pass(const std::vector<const EncoderInput*>& batch, const EncodeOptions& opt,
                       EncoderOutput* out) {
  const model::BertModel& M = m_;
  const model::BertHparams& hp = M.hp();
  Impl& I = *impl_;
  const int E = hp.n_embd, FF = hp.n_ff, HD = hp.head_dim, NH = hp.n_head;
  const size_t nb = batch.size();
  std::vector<int64_t> base(nb + 1, 0);
  for (size_t s = 0; s < nb; ++s) base[s + 1] = base[s] + int64_t(batch[s]->tokens.size());
  const int64_t T = base[nb];

  I.x.resize(size_t(T * E));
  I.q.resize(size_t(T * E));
  I.k.resize(size_t(T * E));
  I.v.resize(size_t(T * E));
  I.attn.resize(size_t(T * E));
  I.o.resize(size_t(T * E));
  I.ff.resize(size_t(T * FF));
  I.embed(M, batch, base, *pool_);

  // Each input's keys in the attention kernel's tiled layout (whole tiles per input).
  std::vector<size_t> key_off(nb + 1, 0);
  for (size_t s = 0; s < nb; ++s)
    key_off[s + 1] = key_off[s] + key_cache_elems(int(base[s + 1] - base[s]), E);
  I.keys.assign(key_off[nb], 0.0f);
  AttnShape shape;
  shape.n_head = NH;
  shape.n_head_kv = NH;
  shape.head_dim = HD;
  shape.scale = 1.0f / std::sqrt(float(HD));
  shape.causal = false;
  const SimdLevel simd = simd_level_for(M.policy().tier);

  for (const model::BertLayer& L : M.layers) I.layer(M, L, base, key_off, shape, simd, *pool_);
  I.pool_rows(M, base, opt.pooling, out, *pool_);
}

}  // namespace ragform::runtime

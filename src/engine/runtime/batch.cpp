// Batch bookkeeping of Context::eval: input validation, the rows of the batch, KV cache growth.
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "engine/runtime/forward.h"

namespace ragform::runtime::detail {

SeqCache& get_seq(std::vector<SeqCache>& seqs, int seq) {
  if (seq < 0 || size_t(seq) >= seqs.size() || !seqs[size_t(seq)].live)
    throw Error("context", "no live sequence " + std::to_string(seq));
  return seqs[size_t(seq)];
}

namespace {
int round_up(int n, int m) { return (n + m - 1) / m * m; }

// Layer l's K and V resized to hold cap positions (new elements zero; kept rows stay in place:
// K tiles are appended at the end of the tiled layout).
template <class T>
void resize_layer(std::vector<T>& k, std::vector<T>& v, int cap, int kv_dim) {
  k.resize(key_cache_elems(cap, kv_dim));
  v.resize(size_t(cap) * size_t(kv_dim));
}

// Drops a layer's first `drop` rows (a multiple of kKeyTile) and moves the `keep` rows after them
// to the front: whole key tiles and V rows, so every kept key keeps its lane.
template <class T>
void drop_rows(std::vector<T>& k, std::vector<T>& v, int drop, int keep, int kv_dim) {
  const size_t off = size_t(drop) * size_t(kv_dim);
  std::memmove(k.data(), k.data() + off, key_cache_elems(keep, kv_dim) * sizeof(T));
  std::memmove(v.data(), v.data() + off, size_t(keep) * size_t(kv_dim) * sizeof(T));
}
}  // namespace

void grow(SeqCache& s, int need, const model::Hparams& hp, KvType kt, int n_ctx, bool window_rows) {
  const int kvd = hp.kv_dim();
  const bool f32 = kt == KvType::F32;
  if (s.k32.empty() && s.k16.empty()) {
    s.windowed = window_rows && hp.n_swa > 0 && !hp.swa_layers.empty();
    if (f32) {
      s.k32.resize(size_t(hp.n_layer));
      s.v32.resize(size_t(hp.n_layer));
    } else {
      s.k16.resize(size_t(hp.n_layer));
      s.v16.resize(size_t(hp.n_layer));
    }
  }
  auto resize = [&](int l, int cap) {
    if (f32)
      resize_layer(s.k32[size_t(l)], s.v32[size_t(l)], cap, kvd);
    else
      resize_layer(s.k16[size_t(l)], s.v16[size_t(l)], cap, kvd);
  };
  if (need > s.capacity) {
    const int cap = std::min(n_ctx, round_up(need, 256));
    for (int l = 0; l < hp.n_layer; ++l)
      if (!(s.windowed && hp.is_swa(l))) resize(l, cap);
    s.capacity = cap;
  }
  if (!s.windowed || need - s.swa_base <= s.swa_capacity) return;
  // The first key the next query (position n_past) sees is n_past - n_swa + 1: rows before its
  // tile are never read again.
  const int first = std::max(0, s.n_past - hp.n_swa + 1) / kKeyTile * kKeyTile;
  if (first > s.swa_base) {
    const int drop = first - s.swa_base, keep = s.n_past - first;
    for (int l = 0; l < hp.n_layer; ++l)
      if (hp.is_swa(l)) {
        if (f32)
          drop_rows(s.k32[size_t(l)], s.v32[size_t(l)], drop, keep, kvd);
        else
          drop_rows(s.k16[size_t(l)], s.v16[size_t(l)], drop, keep, kvd);
      }
    s.swa_base = first;
  }
  if (need - s.swa_base <= s.swa_capacity) return;
  // At least two windows and a tile, so a decode drops rows once per ~window tokens, not per tile.
  const int cap =
      std::min(n_ctx, round_up(std::max(need - s.swa_base, 2 * hp.n_swa + kKeyTile), 256));
  for (int l = 0; l < hp.n_layer; ++l)
    if (hp.is_swa(l)) resize(l, cap);
  s.swa_capacity = cap;
}

namespace {
void check_input(const SeqInput& in, const SeqCache& s, const model::Hparams& hp, int n_ctx) {
  if (s.n_past + int64_t(in.tokens.size()) > n_ctx)
    throw Error("context", "prompt of " + std::to_string(s.n_past + in.tokens.size()) +
                               " tokens exceeds the context size n_ctx = " + std::to_string(n_ctx));
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
}
}  // namespace

void check_inputs(const std::vector<SeqInput>& inputs, std::vector<SeqCache>& seqs,
                  const model::Hparams& hp, int n_ctx, std::vector<Row>& rows) {
  rows.clear();
  for (size_t ii = 0; ii < inputs.size(); ++ii) {
    const SeqInput& in = inputs[ii];
    SeqCache& s = get_seq(seqs, in.seq);
    for (size_t jj = 0; jj < ii; ++jj)
      if (inputs[jj].seq == in.seq)
        throw Error("context",
                    "sequence " + std::to_string(in.seq) + " appears twice in one batch");
    check_input(in, s, hp, n_ctx);
    for (size_t t = 0; t < in.tokens.size(); ++t)
      rows.push_back(Row{int(ii), in.seq, s.n_past + int(t), in.tokens[t]});
  }
}

void plan_rows(Pass& p) {
  Scratch& s = p.s;
  const model::Hparams& hp = p.hp;
  const int64_t T = p.T;
  s.need_final.assign(size_t(T), 0);
  for (int64_t r = 0; r < T; ++r) {
    const SeqInput& in = p.inputs[size_t(s.rows[size_t(r)].input)];
    bool last = r + 1 == T || s.rows[size_t(r + 1)].input != s.rows[size_t(r)].input;
    if (in.logits == LogitsMode::All || (in.logits == LogitsMode::Last && last))
      s.need_final[size_t(r)] = 1;
    if (in.hidden_layer >= hp.n_layer - 1) s.need_final[size_t(r)] = 1;
  }
  const int64_t E = hp.n_embd, Qd = hp.q_dim(), KVd = hp.kv_dim(), FF = hp.n_ff;
  s.x.resize(size_t(T * E));
  s.cur.resize(size_t(T * E));
  s.q.resize(size_t(T * Qd));
  s.k.resize(size_t(T * KVd));
  s.v.resize(size_t(T * KVd));
  s.attn.resize(size_t(T * Qd));
  s.o.resize(size_t(T * E));
  s.gate.resize(size_t(T * FF));
  s.up.resize(size_t(T * FF));
  s.keep.clear();  // = every row, until the last layer chooses
  p.Tn = T;
}

}  // namespace ragform::runtime::detail

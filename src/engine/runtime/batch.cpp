// Batch bookkeeping of Context::eval: input validation, the rows of the batch, KV cache growth.
#include <algorithm>

#include "base/error.h"
#include "engine/runtime/forward.h"

namespace ragform::runtime::detail {

SeqCache& get_seq(std::vector<SeqCache>& seqs, int seq) {
  if (seq < 0 || size_t(seq) >= seqs.size() || !seqs[size_t(seq)].live)
    throw Error("context", "no live sequence " + std::to_string(seq));
  return seqs[size_t(seq)];
}

void grow(SeqCache& s, int need, const model::Hparams& hp, KvType kt, int n_ctx) {
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

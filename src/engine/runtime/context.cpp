#include "engine/runtime/context.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "base/error.h"
#include "engine/runtime/attention.h"
#include "engine/runtime/forward.h"

namespace ragform::runtime {

using model::Hparams;

using detail::get_seq;
using detail::SeqCache;

struct Context::Impl {
  std::vector<SeqCache> seqs;
  detail::Scratch scratch;
};

Context::Context(const model::Model& m, ContextParams p)
    : m_(m), params_(p), impl_(std::make_unique<Impl>()) {
  if (params_.n_ctx <= 0)
    throw Error("context", "n_ctx must be positive, got " + std::to_string(params_.n_ctx));
  params_.pool = shared_pool(params_.pool, params_.threads);
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

void Context::truncate(int seq, int n) {
  SeqCache& s = get_seq(impl_->seqs, seq);
  if (n < 0 || n > s.n_past)
    throw Error("context", "cannot truncate sequence of " + std::to_string(s.n_past) +
                               " tokens to " + std::to_string(n));
  const Hparams& hp = m_.hp();
  if (n == 0) s.swa_base = 0;  // nothing is kept: any row may go anywhere
  if (s.windowed && n > 0 && n < s.n_past &&
      std::max(0, n - hp.n_swa + 1) / kKeyTile * kKeyTile < s.swa_base)
    throw Error("context",
                "cannot truncate sequence of " + std::to_string(s.n_past) + " tokens to " +
                    std::to_string(n) + ": its sliding-window layers hold positions from " +
                    std::to_string(s.swa_base) + " on only (keep_all_rows keeps every row)");
  s.n_past = n;
  s.tokens.resize(size_t(n));
}

namespace {
// Copies the first n positions of one layer's K (tiled) and V from src to dst, then zeroes the
// rest of the last key tile, so the copied sequence holds what a fresh one that computed these n
// positions would hold.
template <class T>
void copy_layer(const std::vector<T>& ks, const std::vector<T>& vs, std::vector<T>& kd,
                std::vector<T>& vd, int n, const Hparams& hp) {
  const size_t ke = key_cache_elems(n, hp.kv_dim()), ve = size_t(n) * size_t(hp.kv_dim());
  std::memcpy(kd.data(), ks.data(), ke * sizeof(T));
  std::memcpy(vd.data(), vs.data(), ve * sizeof(T));
  for (int p = n; p % kKeyTile != 0; ++p)
    for (int h = 0; h < hp.n_head_kv; ++h)
      for (int d = 0; d < hp.head_dim; ++d)
        kd[key_index(p, h, d, hp.n_head_kv, hp.head_dim)] = T(0);
}

// Whether any of x[0..n) is NaN or infinite (exponent bits all ones). An integer OR over the bits
// vectorises, so the scan costs a fraction of the projection that produced the values.
bool any_non_finite(const float* x, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    bad |= uint32_t((b & 0x7f800000u) == 0x7f800000u);
  }
  return bad != 0;
}

// Which output of a pass is not finite ("" when all are): a model whose weights or
// hyperparameters hold NaN or overflow produces NaN everywhere, and argmax over NaN logits picks
// token 0, an empty text that would otherwise pass for an answer.
const char* non_finite_output(const std::vector<SeqOutput>& out) {
  for (const SeqOutput& o : out) {
    if (any_non_finite(o.logits.data(), o.logits.size())) return "logits";
    for (const AttentionRow& r : o.attention)
      for (const auto& h : r.heads)
        if (any_non_finite(h.data(), h.size())) return "attention weights";
    if (any_non_finite(o.hidden.data(), o.hidden.size())) return "hidden states";
  }
  return "";
}
}  // namespace

int Context::reuse_prefix(int seq, const std::vector<int32_t>& tokens, int max_reuse) {
  SeqCache& s = get_seq(impl_->seqs, seq);
  if (s.n_past != 0)
    throw Error("context", "reuse_prefix needs an empty sequence, sequence " + std::to_string(seq) +
                               " holds " + std::to_string(s.n_past) + " tokens");
  const int64_t total = int64_t(tokens.size());
  counts_.submitted += total;
  int n = 0;
  PrefixCache* pc = params_.prefix_cache.get();
  if (pc && total > 1 && max_reuse > 0 && total <= params_.n_ctx) {
    const Hparams& hp = m_.hp();
    const bool f16 = params_.kv_type == KvType::F16;
    const size_t cap = std::min(size_t(total - 1), size_t(max_reuse));
    PrefixMatch m = pc->lookup(&m_, f16, tokens.data(), tokens.size(), cap, s.steer.key());
    if (m.entry && m.n > 0) {
      detail::grow(s, m.n, hp, params_.kv_type, params_.n_ctx, window_rows());
      for (int l = 0; l < hp.n_layer; ++l) {
        const size_t L = size_t(l);
        if (f16)
          copy_layer(m.entry->k16[L], m.entry->v16[L], s.k16[L], s.v16[L], m.n, hp);
        else
          copy_layer(m.entry->k32[L], m.entry->v32[L], s.k32[L], s.v32[L], m.n, hp);
      }
      s.n_past = m.n;
      s.tokens.assign(tokens.begin(), tokens.begin() + m.n);
      n = m.n;
    }
  }
  counts_.computed += total - n;
  return n;
}

SeqOutput Context::eval_prompt(SeqInput in) {
  int max_reuse = 1 << 30;  // reuse_prefix keeps the last token in any case
  if (in.logits == LogitsMode::All || in.hidden_layer >= 0) max_reuse = 0;
  if (!in.attn_layers.empty() && !in.attn_queries.empty())
    max_reuse =
        std::min(max_reuse, *std::min_element(in.attn_queries.begin(), in.attn_queries.end()));
  const int reused = reuse_prefix(in.seq, in.tokens, max_reuse);
  in.tokens.erase(in.tokens.begin(), in.tokens.begin() + reused);
  for (int& q : in.attn_queries) q -= reused;
  SeqOutput out = std::move(eval({in})[0]);
  cache_prefix(in.seq);
  return out;
}

void Context::cache_prefix(int seq) {
  PrefixCache* pc = params_.prefix_cache.get();
  if (!pc) return;
  SeqCache& s = get_seq(impl_->seqs, seq);
  const int n = s.n_past;
  // (A context with a prefix cache keeps every row, so `windowed` is false here.)
  if (n <= 0 || s.tokens.size() != size_t(n) || s.windowed) return;
  const bool f16 = params_.kv_type == KvType::F16;
  const std::string steer = s.steer.key();
  if (pc->covers(&m_, f16, s.tokens.data(), s.tokens.size(), steer)) return;
  const Hparams& hp = m_.hp();
  const size_t ke = key_cache_elems(n, hp.kv_dim()), ve = size_t(n) * size_t(hp.kv_dim());
  const size_t bytes = size_t(hp.n_layer) * (ke + ve) * (f16 ? 2 : 4);
  if (bytes > pc->max_bytes()) return;  // would not be kept: do not copy it
  auto e = std::make_shared<PrefixEntry>();
  e->owner = &m_;
  e->f16 = f16;
  e->steer = steer;
  e->tokens = s.tokens;
  for (int l = 0; l < hp.n_layer; ++l) {
    const size_t L = size_t(l);
    if (f16) {
      e->k16.emplace_back(s.k16[L].begin(), s.k16[L].begin() + long(ke));
      e->v16.emplace_back(s.v16[L].begin(), s.v16[L].begin() + long(ve));
    } else {
      e->k32.emplace_back(s.k32[L].begin(), s.k32[L].begin() + long(ke));
      e->v32.emplace_back(s.v32[L].begin(), s.v32[L].begin() + long(ve));
    }
  }
  pc->insert(std::move(e));
}

int Context::n_past(int seq) const { return get_seq(impl_->seqs, seq).n_past; }

void Context::set_steering(int seq, const Steering& st) {
  SeqCache& s = get_seq(impl_->seqs, seq);
  if (!st.active()) {
    s.steer = Steering{};
    return;
  }
  const Hparams& hp = m_.hp();
  for (int l : st.layers)
    if (l < 0 || l >= hp.n_layer)
      throw Error("steering", "layer " + std::to_string(l) + " is outside 0.." +
                                  std::to_string(hp.n_layer - 1));
  for (int h : st.heads)
    if (h < 0 || h >= hp.n_head)
      throw Error("steering",
                  "head " + std::to_string(h) + " is outside 0.." + std::to_string(hp.n_head - 1));
  for (const TokenSpan& sp : st.spans)
    if (sp.begin < 0 || sp.end <= sp.begin)
      throw Error("steering",
                  "bad token span " + std::to_string(sp.begin) + ":" + std::to_string(sp.end));
  if (!st.shares.empty() && !shares_fit_spans(st))
    throw Error("steering", "per-span shares need one share per span, spans sorted and disjoint");
  s.steer = st;
  // Per-span shares keep their spans apart; the union form is one merged set.
  if (st.shares.empty()) s.steer.spans = merge_spans(st.spans);
}

const Steering& Context::steering(int seq) const { return get_seq(impl_->seqs, seq).steer; }

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
// Tokens [b, e) of `in` as an input of their own: the logits and taps of the rows they hold (Last
// and the default tap of the final token only on the final part), tap queries shifted.
SeqInput part_of(const SeqInput& in, size_t b, size_t e) {
  SeqInput p;
  p.seq = in.seq;
  p.tokens.assign(in.tokens.begin() + long(b), in.tokens.begin() + long(e));
  const bool last = e == in.tokens.size();
  p.logits = in.logits == LogitsMode::All            ? LogitsMode::All
             : in.logits == LogitsMode::Last && last ? LogitsMode::Last
                                                     : LogitsMode::None;
  p.hidden_layer = in.hidden_layer;
  if (!in.attn_layers.empty()) {
    if (in.attn_queries.empty()) {
      if (last) p.attn_layers = in.attn_layers;  // no queries = the final token
    } else {
      for (int q : in.attn_queries)
        if (size_t(q) >= b && size_t(q) < e) p.attn_queries.push_back(q - int(b));
      if (!p.attn_queries.empty()) p.attn_layers = in.attn_layers;
    }
  }
  return p;
}

void append(SeqOutput& to, SeqOutput&& from) {
  to.logit_positions.insert(to.logit_positions.end(), from.logit_positions.begin(),
                            from.logit_positions.end());
  to.logits.insert(to.logits.end(), from.logits.begin(), from.logits.end());
  for (AttentionRow& r : from.attention) to.attention.push_back(std::move(r));
  to.hidden.insert(to.hidden.end(), from.hidden.begin(), from.hidden.end());
}

// The attention rows of an input run in parts, in the order one pass gives them: by layer (in
// model order), then by the input's query order.
void order_attention(const SeqInput& in, int pos0, SeqOutput& out) {
  if (out.attention.size() < 2) return;
  std::vector<int> qs = in.attn_queries;
  if (qs.empty()) qs.push_back(int(in.tokens.size()) - 1);
  // rank of each (layer, query position) occurrence, in one pass's order
  std::vector<std::pair<size_t, size_t>> keyed;  // (rank, row index)
  std::vector<std::vector<size_t>> rank_of_query(in.tokens.size());
  for (size_t k = 0; k < qs.size(); ++k) rank_of_query[size_t(qs[k])].push_back(k);
  std::map<std::pair<int, int>, size_t> taken;  // (layer, query) -> occurrences seen
  for (size_t i = 0; i < out.attention.size(); ++i) {
    const AttentionRow& r = out.attention[i];
    const int q = r.query_pos - pos0;
    const size_t n = taken[{r.layer, q}]++;
    keyed.push_back({size_t(r.layer) * qs.size() + rank_of_query[size_t(q)][n], i});
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<AttentionRow> sorted;
  sorted.reserve(out.attention.size());
  for (const auto& [rank, i] : keyed) sorted.push_back(std::move(out.attention[i]));
  out.attention = std::move(sorted);
}
}  // namespace

void Context::roll_back(int seq, int n) {
  try {
    truncate(seq, n);
  } catch (const Error&) {
    SeqCache& s = get_seq(impl_->seqs, seq);
    Steering st = std::move(s.steer);
    s = SeqCache{};
    s.live = true;
    s.steer = std::move(st);
  }
}

std::vector<SeqOutput> Context::eval(const std::vector<SeqInput>& inputs) {
  size_t total = 0;
  for (const SeqInput& in : inputs) total += in.tokens.size();
  const size_t P = size_t(std::max(1, params_.max_pass_tokens));
  if (total <= P) return eval_pass(inputs);
  Impl& I = *impl_;
  // Validate everything before any pass touches a cache.
  detail::check_inputs(inputs, I.seqs, m_.hp(), params_.n_ctx, I.scratch.rows);
  std::vector<int> before;
  for (const SeqInput& in : inputs) before.push_back(n_past(in.seq));
  std::vector<SeqOutput> out(inputs.size());
  auto run = [&](const std::vector<SeqInput>& pass, const std::vector<size_t>& which) {
    std::vector<SeqOutput> got = eval_pass(pass);
    for (size_t k = 0; k < which.size(); ++k) append(out[which[k]], std::move(got[k]));
  };
  try {
    // Round r runs part r (tokens r*P ..) of every input that has one, in passes of at most P
    // tokens; a sequence appears once in a pass and its parts run in order.
    for (size_t r = 0;; ++r) {
      std::vector<SeqInput> pass;
      std::vector<size_t> which;
      size_t rows = 0;
      bool any = false;
      for (size_t i = 0; i < inputs.size(); ++i) {
        const size_t n = inputs[i].tokens.size(), b = r * P;
        if (b >= n) continue;
        any = true;
        const size_t e = std::min(n, b + P);
        if (rows + (e - b) > P && !pass.empty()) {
          run(pass, which);
          pass.clear();
          which.clear();
          rows = 0;
        }
        pass.push_back(part_of(inputs[i], b, e));
        which.push_back(i);
        rows += e - b;
      }
      if (!pass.empty()) run(pass, which);
      if (!any) break;
    }
  } catch (...) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (n_past(inputs[i].seq) != before[i]) roll_back(inputs[i].seq, before[i]);
    throw;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].attn_layers.empty()) order_attention(inputs[i], before[i], out[i]);
  return out;
}

std::vector<SeqOutput> Context::eval_pass(const std::vector<SeqInput>& inputs) {
  const Hparams& hp = m_.hp();
  Impl& I = *impl_;
  // Validate everything before touching any cache.
  detail::check_inputs(inputs, I.seqs, hp, params_.n_ctx, I.scratch.rows);
  std::vector<SeqOutput> out(inputs.size());
  detail::Pass p{m_, hp, *params_.pool, inputs, I.seqs, I.scratch, out};
  p.f16kv = params_.kv_type == KvType::F16;
  p.simd = simd_level_for(m_.policy().tier);
  p.T = int64_t(I.scratch.rows.size());
  if (p.T == 0) return out;
  for (auto& in : inputs) {
    SeqCache& s = get_seq(I.seqs, in.seq);
    detail::grow(s, s.n_past + int(in.tokens.size()), hp, params_.kv_type, params_.n_ctx,
                 window_rows());
  }
  detail::plan_rows(p);
  detail::embed(p);
  for (int il = 0; il < hp.n_layer; ++il) {
    const bool last_layer = il == hp.n_layer - 1;
    detail::attention_block(p, il);
    // An attention-only pass (no logits, no final hidden state) stops after the last attention.
    if (last_layer && !detail::keep_output_rows(p)) break;
    detail::attention_output(p, il);
    detail::ffn_block(p, il);
    detail::collect_hidden(p, il);
    if (last_layer) detail::output_head(p);
  }
  // Before the caches advance, so a failed pass leaves them as they were.
  if (const char* what = non_finite_output(out); *what)
    throw Error("model", m_.file().path() + ": the forward pass produced non-finite " + what +
                             " (NaN or infinity): the model's weights or hyperparameters (e.g. a "
                             "norm epsilon) are not finite");
  for (auto& in : inputs) {
    SeqCache& s = get_seq(I.seqs, in.seq);
    s.n_past += int(in.tokens.size());
    s.tokens.insert(s.tokens.end(), in.tokens.begin(), in.tokens.end());
  }
  return out;
}

}  // namespace ragform::runtime

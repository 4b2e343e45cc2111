#include "engine/runtime/context.h"

#include "base/error.h"
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

std::vector<SeqOutput> Context::eval(const std::vector<SeqInput>& inputs) {
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
    detail::grow(s, s.n_past + int(in.tokens.size()), hp, params_.kv_type, params_.n_ctx);
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
  for (auto& in : inputs) get_seq(I.seqs, in.seq).n_past += int(in.tokens.size());
  return out;
}

}  // namespace ragform::runtime

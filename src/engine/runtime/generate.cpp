#include "engine/runtime/generate.h"

#include <algorithm>

#include "base/error.h"

namespace ragform::runtime {

size_t line_stop_at(std::string_view text) {
  const size_t b = text.find_first_not_of(" \t\n\v\f\r");
  return b == std::string_view::npos ? std::string_view::npos : text.find('\n', b);
}

bool apply_stop(GenerateOutput& o, const GenerateOptions& opt) {
  size_t cut = opt.stop_after_line ? line_stop_at(o.text) : std::string::npos;
  for (const std::string& s : opt.stop) {
    if (s.empty()) continue;
    // Only the tail can contain a new match.
    size_t from = o.text.size() > s.size() + 64 ? o.text.size() - s.size() - 64 : 0;
    cut = std::min(cut, o.text.find(s, from));
  }
  if (cut == std::string::npos) return false;
  o.text.resize(cut);
  o.finish_reason = "stop";
  return true;
}

void check_prompt(const GenerateOptions& opt, size_t n_tokens, int n_ctx,
                  const std::string& which) {
  if (opt.max_tokens < 0) throw UsageError("generate", "max_tokens must be >= 0");
  if (n_tokens == 0) throw UsageError("generate", which + " has no tokens");
  if (n_tokens > size_t(n_ctx))
    throw Error("generate",
                "prompt of " + std::to_string(n_tokens) +
                    " tokens exceeds the context size n_ctx = " + std::to_string(n_ctx));
}

bool take_token(GenerateOutput& o, int32_t id, const tok::Tokenizer& tk, const GenerateOptions& opt,
                const Context& ctx, int seq) {
  if (tk.is_eog(id) && !opt.ignore_eos) {
    o.finish_reason = "eos";
    return false;
  }
  o.ids.push_back(id);
  o.text += tk.token_to_piece(id, /*render_special=*/opt.ignore_eos);
  if (apply_stop(o, opt)) return false;
  if (int(o.ids.size()) >= opt.max_tokens || ctx.n_past(seq) + 1 > ctx.n_ctx()) {
    o.finish_reason = "length";
    return false;
  }
  return true;
}

std::vector<GenerateOutput> generate(Context& ctx, const tok::Tokenizer& tk,
                                     const std::vector<std::vector<int32_t>>& prompts,
                                     const GenerateOptions& opt) {
  if (opt.max_tokens < 0) throw UsageError("generate", "max_tokens must be >= 0");
  const size_t n = prompts.size();
  if (!opt.seeds.empty() && opt.seeds.size() != n)
    throw Error("generate", std::to_string(opt.seeds.size()) + " seeds for " + std::to_string(n) +
                                " prompts: one seed per prompt expected");
  if (opt.steering.size() > 1 && opt.steering.size() != n)
    throw Error("generate", std::to_string(opt.steering.size()) + " steering settings for " +
                                std::to_string(n) + " prompts: one, or one per prompt, expected");
  std::vector<GenerateOutput> out(n);
  std::vector<int> seq(n, -1);
  std::vector<Sampler> samplers;
  std::vector<char> done(n, 0);
  const int V = ctx.model().hp().n_vocab;
  struct Cleanup {
    Context& c;
    std::vector<int>& s;
    ~Cleanup() {
      for (int id : s)
        if (id >= 0) c.free_sequence(id);
    }
  } cleanup{ctx, seq};

  std::vector<SeqInput> batch;
  for (size_t i = 0; i < n; ++i) {
    check_prompt(opt, prompts[i].size(), ctx.n_ctx(), "prompt " + std::to_string(i));
    SamplingParams sp = opt.sampling;
    sp.seed = opt.seeds.empty() ? sp.seed + i : opt.seeds[i];
    samplers.emplace_back(sp);
    seq[i] = ctx.new_sequence();
    if (!opt.steering.empty())
      ctx.set_steering(seq[i], opt.steering[opt.steering.size() == 1 ? 0 : i]);
    out[i].prompt_tokens = int(prompts[i].size());
    SeqInput in;
    in.seq = seq[i];
    in.tokens = prompts[i];
    batch.push_back(std::move(in));
    if (opt.max_tokens == 0) {
      done[i] = 1;
      out[i].finish_reason = "length";
    }
  }
  std::vector<size_t> order;  // input index of each batch entry
  for (size_t i = 0; i < n; ++i) order.push_back(i);
  if (opt.max_tokens == 0) return out;

  std::vector<SeqOutput> res;
  if (ctx.prefix_cache()) {
    // Prefill one prompt at a time in sorted token order, each starting from the longest cached
    // prefix (which, in sorted order, the prompt before it provides) and then offered to the
    // cache. A token's numbers do not depend on its batch, so this computes what one batched pass
    // would; decoding below is batched as before.
    std::vector<size_t> by_tokens = order;
    std::stable_sort(by_tokens.begin(), by_tokens.end(),
                     [&](size_t a, size_t b) { return prompts[a] < prompts[b]; });
    res.resize(n);
    for (size_t i : by_tokens) res[i] = ctx.eval_prompt(batch[i]);
  } else {
    for (size_t i = 0; i < n; ++i) ctx.reuse_prefix(seq[i], prompts[i]);  // counts only
    res = ctx.eval(batch);
  }

  while (!batch.empty()) {
    std::vector<SeqInput> next;
    std::vector<size_t> next_order;
    for (size_t b = 0; b < batch.size(); ++b) {
      size_t i = order[b];
      const int32_t id = samplers[i].sample(res[b].logits.data(), V);
      if (!take_token(out[i], id, tk, opt, ctx, seq[i])) continue;
      SeqInput in;
      in.seq = seq[i];
      in.tokens = {id};
      next.push_back(std::move(in));
      next_order.push_back(i);
    }
    batch = std::move(next);
    order = std::move(next_order);
    if (!batch.empty()) res = ctx.eval(batch);
  }
  return out;
}

}  // namespace ragform::runtime

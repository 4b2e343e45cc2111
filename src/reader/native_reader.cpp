#include "reader/native_reader.h"

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/runtime/sampler.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "store/sha256.h"

namespace ragform::reader {

NativeReader::NativeReader(const std::string& model_path, const NativeOptions& opt)
    : path_(model_path), opt_(opt) {
  // The pool is the caller's (shared) or this reader's own; the context holds it too, so it lives
  // as long as the context that runs on it.
  opt_.engine.pool = opt.engine.pool_or_new();
  model_ = model::Model::load(model_path, opt.engine);
  tok_ = tok::Tokenizer::from_gguf(model_->file());
  if (tok_->n_vocab() != model_->hp().n_vocab)
    throw Error("reader", model_path + ": tokenizer has " + std::to_string(tok_->n_vocab()) +
                              " tokens but the model " + std::to_string(model_->hp().n_vocab));
  runtime::ContextParams cp;
  cp.n_ctx = opt.n_ctx;
  cp.kv_type = opt.kv_f16 ? runtime::KvType::F16 : runtime::KvType::F32;
  cp.pool = opt_.engine.pool;
  if (opt.prefix_cache)
    prefix_cache_ = std::make_shared<runtime::PrefixCache>(opt.prefix_cache_bytes);
  cp.prefix_cache = prefix_cache_;
  ctx_ = std::make_unique<runtime::Context>(*model_, cp);
  if (opt.chat) {
    const tok::ChatFamily family = tok::chat_family_of(
        model_->file().get_string("tokenizer.chat_template", ""), opt.chat_template);
    if (family == tok::ChatFamily::None)
      throw Error("reader", model_path +
                                ": chat mode asked for, but the model file has no recognised chat "
                                "template (tokenizer.chat_template): name its format with "
                                "--chat-template (chat_template=), or give raw prompts");
    chat_family_ = int(family);
  }
}

NativeReader::~NativeReader() = default;

std::string NativeReader::describe() const {
  std::string d = "native:" + std::filesystem::path(path_).filename().string();
  // Settings that change what the model reads or computes, when not the default: the run store
  // keys runs on this text, and runs under another system message, KV cache type or cut must
  // never resume one another (pass 24: a run with --system "Answer with one word." resumed the
  // answers of one with "Answer only in French.").
  if (opt_.chat && !opt_.system_prompt.empty())
    d += "#system=" + store::sha256_hex(opt_.system_prompt).substr(0, 16);
  if (opt_.kv_f16) d += "#kv=f16";
  if (opt_.overflow == Overflow::TruncateLeft) d += "#truncate=left@" + std::to_string(opt_.n_ctx);
  // Transformers' rounding gives other numbers than the default's: never the same run.
  if (opt_.engine.numerics != Numerics::ggml)
    d += std::string("#numerics=") + numerics_name(opt_.engine.numerics);
  // The run store keys runs on this text: runs of a model with F16/BF16 matrices under the exact
  // and the approximate int16 products must never merge as one run, so the choice is part of
  // it (other models' numbers do not depend on it, and their description stays as it was).
  for (const auto& t : model_->file().tensors())
    if (t.ne.size() == 2 && (t.type == gguf::TensorType::F16 || t.type == gguf::TensorType::BF16))
      return d + "#f16-gemm=" + ops::f16_gemm_name(opt_.engine.f16_gemm);
  return d;
}

std::string NativeReader::chat_mode() const {
  return opt_.chat ? tok::family_name(tok::ChatFamily(chat_family_)) : std::string("raw");
}

TokenizedPrompt NativeReader::render(const std::string& prompt,
                                     const std::string& continuation) const {
  TokenizedPrompt t;
  if (!opt_.chat) {
    t.spelled = prompt + continuation;
    t.ids = tok_->encode(t.spelled, true, false);
    return t;
  }
  // The prompt (and system message) is the user's turn: its text stays text, only the template's
  // own markers are special tokens, so document text cannot close the turn or forge another. A
  // continuation follows the assistant turn's opening as text, as the model would write it.
  std::vector<tok::ChatMessage> msgs;
  if (!opt_.system_prompt.empty()) msgs.push_back({"system", opt_.system_prompt});
  msgs.push_back({"user", prompt});
  tok::RenderedChat r = tok::render_chat_spans(tok::ChatFamily(chat_family_), msgs, true);
  // The user's text is the last stretch the template did not write (the turns' markers and the
  // assistant's opening follow it): found there, not by searching the rendering (pass 24: a prompt
  // "model" was found in Gemma's "<start_of_turn>model" header, and its steering spans and
  // document spans landed on the header). A template that trims the text keeps it not verbatim.
  size_t gap_begin = 0, gap_end = 0, at = 0;
  for (const auto& s : r.template_spans) {
    if (s.begin > at) gap_begin = at, gap_end = s.begin;
    at = s.end;
  }
  if (r.text.size() > at) gap_begin = at, gap_end = r.text.size();
  t.prompt_at = prompt.empty()                                                ? gap_end
                : r.text.compare(gap_begin, gap_end - gap_begin, prompt) == 0 ? gap_begin
                                                                              : std::string::npos;
  t.spelled = std::move(r.text) + continuation;
  t.ids = tok_->encode_with_special_spans(t.spelled, r.template_spans, true);
  return t;
}

TokenizedPrompt NativeReader::tokenize_prompt(const std::string& prompt, int reserve) const {
  TokenizedPrompt t = render(prompt);
  if (opt_.overflow == Overflow::Error) {
    if (int(t.ids.size()) > opt_.n_ctx)
      throw ContextOverflow(
          "reader", "prompt of " + std::to_string(t.ids.size()) +
                        " tokens exceeds the context size n_ctx = " + std::to_string(opt_.n_ctx) +
                        " (raise --ctx or choose a truncation policy)");
    return t;
  }
  reserve = std::max(0, reserve);
  if (int64_t(t.ids.size()) + reserve <= opt_.n_ctx) return t;
  t.untruncated = std::move(t.ids);
  t.ids = truncate_left(t.untruncated, reserve);
  return t;
}

std::vector<int32_t> NativeReader::prompt_tokens(const std::string& prompt, int reserve) const {
  return tokenize_prompt(prompt, reserve).ids;
}

// Keeps BOS (if any) and the end of the prompt, so that `reserve` generated tokens still fit in
// n_ctx after it: a prompt cut to the whole context would leave room for one token only.
std::vector<int32_t> NativeReader::truncate_left(const std::vector<int32_t>& ids,
                                                 int reserve) const {
  const bool bos = !ids.empty() && ids[0] == tok_->bos() && tok_->add_bos();
  const int room = opt_.n_ctx - reserve - (bos ? 1 : 0);
  if (room < 1)
    throw Error("reader", "--truncate left: " + std::to_string(reserve) +
                              " tokens to generate or score leave no room for the prompt in "
                              "n_ctx = " +
                              std::to_string(opt_.n_ctx) + " (lower -n or raise --ctx)");
  std::vector<int32_t> cut;
  if (bos) cut.push_back(ids[0]);
  cut.insert(cut.end(), ids.end() - long(room), ids.end());
  return cut;
}

runtime::Steering NativeReader::resolve_steering(const TokenizedPrompt& tokens,
                                                 const SteeringParams& steer,
                                                 size_t user_bytes) const {
  if (!steer.active()) return {};
  for (const runtime::CharSpan& c : steer.spans)
    if (c.end > user_bytes)
      throw runtime::SteerError("spans", "span " + std::to_string(c.begin) + ":" +
                                             std::to_string(c.end) + " ends past the prompt's " +
                                             std::to_string(user_bytes) + " bytes");
  // Offsets are into the user's text; in chat mode that text sits inside the rendered template.
  if (tokens.prompt_at == std::string::npos)
    throw Error("steering",
                "the chat template does not keep the prompt verbatim, so the steering spans "
                "cannot be placed in it; steer without chat mode");
  // The tokens as the text spells them: before --truncate left cut any.
  const std::vector<int32_t>& full = tokens.untruncated.empty() ? tokens.ids : tokens.untruncated;
  std::vector<runtime::TokenSpan> spans = runtime::token_spans_for(
      runtime::token_char_spans(*tok_, tokens.spelled, full), steer.spans, tokens.prompt_at);
  // --truncate left kept BOS (if any) and the last ids.size() - bos tokens: shift the spans.
  if (tokens.ids.size() < full.size()) {
    const int removed = int(full.size() - tokens.ids.size());
    const int first = !full.empty() && full[0] == tok_->bos() && tok_->add_bos() ? 1 : 0;
    for (size_t i = 0; i < spans.size(); ++i) {
      runtime::TokenSpan& s = spans[i];
      // A span whose every token was cut cannot be steered: refused as attention's document
      // spans are (pass 22: the generation ran unsteered without a word).
      if (s.end > s.begin && s.end - removed <= first) {
        const runtime::CharSpan& c = steer.spans[i];
        throw runtime::SteerError("spans", "span " + std::to_string(c.begin) + ":" +
                                               std::to_string(c.end) +
                                               " lies in the part of the prompt that was cut to "
                                               "fit the context (truncate left)");
      }
      s.begin = std::max(s.begin - removed, first);
      s.end -= removed;
    }
  }
  const model::Hparams& hp = model_->hp();
  // The sequence's own tokens end the prompt: keys after them are generated (PASTA leaves those).
  return runtime::resolve_steering(steer, hp.n_layer, hp.n_head, std::move(spans),
                                   int(tokens.ids.size()));
}

std::optional<size_t> NativeReader::prompt_in_pieces(const TokenizedPrompt& tokens,
                                                     const std::vector<std::string>& pieces) const {
  // A cut prompt, or one the template changed: the caller finds the text (or says it cannot).
  if (!tokens.untruncated.empty() || tokens.prompt_at == std::string::npos) return std::nullopt;
  const std::vector<runtime::CharSpan> bytes =
      runtime::token_char_spans(*tok_, tokens.spelled, tokens.ids);
  size_t before = 0;  // bytes of the pieces before token i
  for (size_t i = 0; i < bytes.size() && i < pieces.size(); ++i) {
    const runtime::CharSpan& b = bytes[i];
    if (b.end > tokens.prompt_at && b.end > b.begin) {
      // The piece's text bytes are its last ones (a SentencePiece dummy-prefix space comes first).
      const size_t extra = pieces[i].size() - std::min(pieces[i].size(), b.end - b.begin);
      return before + extra + (tokens.prompt_at - std::min(tokens.prompt_at, b.begin));
    }
    before += pieces[i].size();
  }
  return tokens.prompt_at == tokens.spelled.size() ? std::optional<size_t>(before) : std::nullopt;
}

int NativeReader::count_tokens(const std::string& prompt) {
  return int(prompt_tokens(prompt).size());
}

std::optional<PromptBound> NativeReader::prompt_bound() const {
  if (opt_.overflow != Overflow::Error || tok_->kind() == "wpm") return std::nullopt;
  return PromptBound{opt_.n_ctx, std::max<size_t>(tok_->max_piece_bytes(), 4)};
}

std::optional<PrefillCounts> NativeReader::prefill_counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  runtime::PrefillCounts c = ctx_->prefill_counts();
  return PrefillCounts{c.submitted, c.computed};
}

namespace {
runtime::GenerateOptions to_options(const GenerateParams& p) {
  runtime::GenerateOptions o;
  o.max_tokens = p.max_tokens;
  o.sampling.temperature = p.temperature;
  o.sampling.top_k = p.top_k;
  o.sampling.top_p = p.top_p;
  o.sampling.seed = p.seed;
  o.seeds = p.seeds;
  o.stop = p.stop;
  o.stop_after_line = p.stop_after_line;
  o.ignore_eos = p.ignore_eos;
  return o;
}
}  // namespace

std::vector<Generation> NativeReader::generate_batch(const std::vector<std::string>& prompts,
                                                     const GenerateParams& p) {
  return generate_batch(prompts, p, {steering});
}

std::vector<Generation> NativeReader::generate_batch(const std::vector<std::string>& prompts,
                                                     const GenerateParams& p,
                                                     const std::vector<SteeringParams>& steer) {
  if (steer.size() > 1 && steer.size() != prompts.size())
    throw Error("generate", std::to_string(steer.size()) + " steering settings for " +
                                std::to_string(prompts.size()) + " prompts");
  std::vector<std::vector<int32_t>> toks;
  runtime::GenerateOptions opt = to_options(p);
  bool any = false;
  for (size_t i = 0; i < prompts.size(); ++i) {
    TokenizedPrompt t = tokenize_prompt(prompts[i], p.max_tokens);
    const SteeringParams& s = steer.empty() ? SteeringParams{} : steer[steer.size() == 1 ? 0 : i];
    opt.steering.push_back(resolve_steering(t, s, prompts[i].size()));
    any |= opt.steering.back().active();
    toks.push_back(std::move(t.ids));
  }
  if (!any) opt.steering.clear();
  std::lock_guard<std::mutex> lock(mu_);
  auto outs = runtime::generate(*ctx_, *tok_, toks, opt);
  std::vector<Generation> res;
  for (auto& o : outs) res.push_back(Generation{o.text, o.ids, o.finish_reason, o.prompt_tokens});
  return res;
}

Generation NativeReader::generate(const std::string& prompt, const GenerateParams& p) {
  return generate_batch({prompt}, p)[0];
}

ScoreResult NativeReader::score(const std::string& prompt, const std::string& continuation) {
  return score(prompt, continuation, steering);
}

ScoreResult NativeReader::score(const std::string& prompt, const std::string& continuation,
                                const SteeringParams& steer, int top) {
  if (continuation.empty()) {  // every token after the first is scored
    const TokenizedPrompt whole = tokenize_prompt(prompt);
    if (whole.ids.empty()) throw Error("score", "empty prompt");
    return score_ids(whole.ids, 1, resolve_steering(whole, steer, prompt.size()), top);
  }
  // The continuation is scored where a generation would have written it: after the prompt as it
  // is fed (chat mode: after the assistant turn's opening; pass 22: it was scored inside the
  // user's turn, with the template's closing tokens). Prompt and continuation are tokenised
  // together, so the boundary tokenises as it would in one text, and the tokens past the longest
  // prefix shared with the prompt's own are scored.
  const std::vector<int32_t> head = render(prompt).ids;
  TokenizedPrompt whole = render(prompt, continuation);
  size_t split = 0;
  while (split < head.size() && split < whole.ids.size() && head[split] == whole.ids[split])
    ++split;
  // No token before the continuation (a model without BOS, and an empty prompt or one whose only
  // token merges with the continuation's first): its first token has nothing to be scored after.
  // Refused (pass 23: it was moved into the prompt and the sum left it out without a word).
  if (split == 0)
    throw Error("score", "no token comes before the continuation to score its first token after: " +
                             std::string(head.empty() ? "the prompt is empty"
                                                      : "the prompt's tokens merge with it") +
                             " and this model adds no BOS; give a prompt that ends where the "
                             "continuation starts");
  if (split >= whole.ids.size()) throw Error("score", "the continuation adds no tokens");
  // The overflow policy cuts the prompt only: the continuation is what is scored (pass 22:
  // prompt and whole text were cut apart, and the tokens the cut text did not share with the cut
  // prompt, most of the prompt, were scored as the continuation).
  if (int64_t(whole.ids.size()) > opt_.n_ctx) {
    if (opt_.overflow == Overflow::Error)
      throw ContextOverflow(
          "reader", "prompt and continuation of " + std::to_string(whole.ids.size()) +
                        " tokens exceed the context size n_ctx = " + std::to_string(opt_.n_ctx) +
                        " (raise --ctx or choose a truncation policy)");
    const int n_cont = int(whole.ids.size() - split);
    std::vector<int32_t> kept =
        truncate_left({whole.ids.begin(), whole.ids.begin() + long(split)}, n_cont);
    split = kept.size();
    kept.insert(kept.end(), whole.ids.end() - n_cont, whole.ids.end());
    whole.untruncated = std::move(whole.ids);
    whole.ids = std::move(kept);
  }
  runtime::Steering st = resolve_steering(whole, steer, prompt.size());
  // A continuation's keys are what a steered generation of it would have generated: past the
  // prompt's end, which PASTA leaves (issue 40, pass 21: they were counted as prompt keys, and a
  // steered score differed from the steered generation's log-probs by up to 0.56 nats).
  st.prompt_end = int(split);
  return score_ids(whole.ids, split, st, top);
}

ScoreResult NativeReader::score_ids(const std::vector<int32_t>& all, size_t split,
                                    const runtime::Steering& st, int top) {
  if (split < 1 || split > all.size())  // (split == size: nothing after it, an empty result)
    throw Error("score", std::to_string(all.size()) + " tokens cannot be scored from " +
                             std::to_string(split));
  // Evaluate in chunks so that only kChunk rows of full-vocabulary logits exist at a time
  // (151936 floats per row for Qwen): memory stays flat in the prompt length. Chunked prefill
  // computes exactly what one pass would (same rows through the same matmuls, same cache).
  constexpr size_t kChunk = 32;
  const int V = model_->hp().n_vocab;
  ScoreResult r;
  r.prompt_tokens = int(split);
  std::lock_guard<std::mutex> lock(mu_);
  runtime::ScopedSequence seq(*ctx_);
  ctx_->set_steering(seq.id(), st);
  // Rows before split - 1 give no logit that is read: those may come from the prefix cache.
  const size_t reused = size_t(ctx_->reuse_prefix(seq.id(), all, int(split) - 1));
  for (size_t b = reused; b < all.size(); b += kChunk) {
    size_t e = std::min(all.size(), b + kChunk);
    runtime::SeqInput in;
    in.seq = seq.id();
    in.tokens.assign(all.begin() + long(b), all.begin() + long(e));
    // Row t's logits predict token t + 1: rows split-1 .. n-2 are read.
    in.logits =
        (e >= split && b + 1 < all.size()) ? runtime::LogitsMode::All : runtime::LogitsMode::None;
    auto out = ctx_->eval({in});
    if (in.logits == runtime::LogitsMode::None) continue;
    for (size_t row = b; row < e; ++row) {
      size_t t = row + 1;  // the token this row predicts
      if (t < split || t >= all.size()) continue;
      TokenLogprob tl;
      tl.id = all[t];
      tl.piece = tok_->token_to_piece(all[t], true);
      const float* logits = &out[0].logits[(row - b) * size_t(V)];
      if (top > 0)
        tl.top = runtime::top_log_softmax(logits, V, top, all[t], &tl.logprob);
      else
        tl.logprob = runtime::log_softmax_at(logits, V, all[t]);
      r.sum += tl.logprob;
      r.tokens.push_back(std::move(tl));
    }
  }
  ctx_->cache_prefix(seq.id());
  return r;
}

AttentionResult NativeReader::attention(const std::string& prompt, const AttentionQuery& q) {
  return attention(prompt, q, steering);
}

AttentionResult NativeReader::attention(const std::string& prompt, const AttentionQuery& q,
                                        const SteeringParams& steer) {
  const int NL = model_->hp().n_layer, NH = model_->hp().n_head;
  AttentionResult r;
  const TokenizedPrompt tokens = tokenize_prompt(prompt);
  r.ids = tokens.ids;
  const int T = int(r.ids.size());
  if (T == 0) throw Error("attention", "empty prompt");
  runtime::SeqInput in;
  in.tokens = r.ids;
  in.logits = runtime::LogitsMode::None;
  for (int l : q.layers.empty() ? std::vector<int>{-1} : q.layers) {
    int L = l < 0 ? NL + l : l;
    if (L < 0 || L >= NL)
      throw UsageError("attention",
                       "layer " + std::to_string(l) + " is outside 0.." + std::to_string(NL - 1));
    // Each layer, query position and head once, however it was named (-1 and its index alike;
    // pass 19: repeated layers gave one row, repeated positions two, repeated heads two columns
    // and a mean that counted one head twice).
    if (std::find(in.attn_layers.begin(), in.attn_layers.end(), L) == in.attn_layers.end())
      in.attn_layers.push_back(L);
  }
  for (int p : q.query_positions.empty() ? std::vector<int>{-1} : q.query_positions) {
    int P = p < 0 ? T + p : p;
    if (P < 0 || P >= T)
      throw UsageError("attention", "query position " + std::to_string(p) +
                                        " is outside the prompt's " + std::to_string(T) +
                                        " tokens");
    if (std::find(in.attn_queries.begin(), in.attn_queries.end(), P) == in.attn_queries.end())
      in.attn_queries.push_back(P);
  }
  std::vector<int> heads;
  for (int h : q.heads) {
    if (h < 0 || h >= NH)
      throw UsageError("attention",
                       "head " + std::to_string(h) + " is outside 0.." + std::to_string(NH - 1));
    if (std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
  }
  if (heads.empty())
    for (int h = 0; h < NH; ++h) heads.push_back(h);
  const runtime::Steering st = resolve_steering(tokens, steer, prompt.size());
  std::vector<runtime::SeqOutput> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    runtime::ScopedSequence seq(*ctx_);
    in.seq = seq.id();
    ctx_->set_steering(seq.id(), st);
    // Every tapped query row is computed; the rows before the first may come from the cache.
    out.push_back(ctx_->eval_prompt(std::move(in)));
  }
  for (int id : r.ids) r.pieces.push_back(tok_->token_to_piece(id, true));
  r.prompt_at = prompt_in_pieces(tokens, r.pieces);
  for (auto& ar : out[0].attention) {
    AttentionRows rows;
    rows.layer = ar.layer;
    rows.query_position = ar.query_pos;
    rows.head_ids = heads;
    rows.mean.assign(size_t(ar.query_pos + 1), 0.0f);
    for (int h : heads) {
      rows.heads.push_back(ar.heads[size_t(h)]);
      for (size_t j = 0; j < rows.mean.size(); ++j) rows.mean[j] += ar.heads[size_t(h)][j];
    }
    for (auto& m : rows.mean) m /= float(heads.size());
    r.rows.push_back(std::move(rows));
  }
  return r;
}

HiddenResult NativeReader::hidden(const std::string& prompt, int layer) {
  return hidden(prompt, layer, steering);
}

HiddenResult NativeReader::hidden(const std::string& prompt, int layer,
                                  const SteeringParams& steer) {
  const int NL = model_->hp().n_layer;
  int L = layer < 0 ? NL + 1 + layer : layer;  // -1 = final normalised output (layer NL)
  if (L < 0 || L > NL)
    throw UsageError("hidden",
                     "layer " + std::to_string(layer) + " is outside 0.." + std::to_string(NL));
  HiddenResult r;
  r.layer = L;
  r.n_embd = model_->hp().n_embd;
  const TokenizedPrompt tokens = tokenize_prompt(prompt);
  r.ids = tokens.ids;
  runtime::SeqInput in;
  in.tokens = r.ids;
  in.logits = runtime::LogitsMode::None;
  in.hidden_layer = L;
  const runtime::Steering st = resolve_steering(tokens, steer, prompt.size());
  std::vector<runtime::SeqOutput> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    runtime::ScopedSequence seq(*ctx_);
    in.seq = seq.id();
    ctx_->set_steering(seq.id(), st);
    out.push_back(ctx_->eval_prompt(std::move(in)));  // every row's state is read: none reused
  }
  r.states = std::move(out[0].hidden);
  for (int id : r.ids) r.pieces.push_back(tok_->token_to_piece(id, true));
  return r;
}

Reader::ModelFile NativeReader::model_file() const {
  std::call_once(sha_once_, [&] { sha256_ = store::sha256_file(path_); });
  return {path_, sha256_};
}

}  // namespace ragform::reader

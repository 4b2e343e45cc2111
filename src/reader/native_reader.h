// NativeReader: the Reader over ragform's own GGUF engine. Answers all four questions. Prompt text
// is tokenised with BOS as the vocabulary asks and special-token parsing OFF (as the fixtures
// were), so document text cannot inject control tokens; in chat mode the prompt becomes the user
// turn of the model's chat template, whose own control tokens (only those) are parsed.
// Thread-safe: calls are serialised by a mutex (one forward pass at a time uses all threads).
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/engine_options.h"
#include "engine/runtime/steering.h"
#include "reader/reader.h"
#include "reader/steering_params.h"

namespace ragform::model {
class Model;
}
namespace ragform::tok {
class Tokenizer;
}
namespace ragform::runtime {
class Context;
class PrefixCache;
}  // namespace ragform::runtime

namespace ragform::reader {

enum class Overflow { Error, TruncateLeft };  // prompt longer than n_ctx: fail, or keep its end

// A prompt's tokens as the reader feeds them, with what resolve_steering needs to place character
// spans in them without rendering the chat template and tokenising the prompt a second time.
struct TokenizedPrompt {
  std::vector<int32_t> ids;          // chat-wrapped, after the overflow policy: what is fed
  std::vector<int32_t> untruncated;  // before Overflow::TruncateLeft cut them; empty: none cut
  // The text the tokens (before any cut) spell: the prompt (raw), or the chat template's rendering
  // of it (chat mode), then a scored continuation if any; and where the user's prompt starts in
  // it (npos: the template does not keep the prompt verbatim).
  std::string spelled;
  size_t prompt_at = 0;
};

struct NativeOptions {
  int n_ctx = kDefaultContext;
  bool kv_f16 = false;
  EngineOptions engine;       // thread pool (or thread count), CPU tier, F16 path, load mode
  bool chat = false;          // wrap prompts in the model's chat template (user turn)
  std::string system_prompt;  // chat mode only
  std::string chat_template;  // chat mode: a family name (tok::family_from_name); "" = the file's
  Overflow overflow = Overflow::Error;
  // Prefix cache (engine/runtime/prefix_cache.h): prompts reuse the KV rows of the longest
  // prefix prefilled before. Exact (the rows are the same numbers); off costs only speed.
  bool prefix_cache = true;
  size_t prefix_cache_bytes = 0;  // LRU bound; 0 = the default (runtime::PrefixCache)
};

class NativeReader : public Reader {
 public:
  NativeReader(const std::string& model_path, const NativeOptions& opt = {});
  ~NativeReader() override;

  Capabilities capabilities() const override { return {true, true, true, true}; }
  std::string describe() const override;
  std::string chat_mode() const override;
  Generation generate(const std::string& prompt, const GenerateParams& p) override;
  std::vector<Generation> generate_batch(const std::vector<std::string>& prompts,
                                         const GenerateParams& p) override;
  ScoreResult score(const std::string& prompt, const std::string& continuation) override;
  AttentionResult attention(const std::string& prompt, const AttentionQuery& q) override;
  HiddenResult hidden(const std::string& prompt, int layer) override;
  // The same with explicit steering instead of the `steering` member (per call: the spans of
  // each prompt differ); generate_batch takes one per prompt, or one for all.
  std::vector<Generation> generate_batch(const std::vector<std::string>& prompts,
                                         const GenerateParams& p,
                                         const std::vector<SteeringParams>& steer);
  // `top` > 0: each scored token also lists the `top` most likely tokens at its position
  // (TokenLogprob::top).
  ScoreResult score(const std::string& prompt, const std::string& continuation,
                    const SteeringParams& steer, int top = 0);
  // The log-prob of each of `ids` from position `split` on (split >= 1), under `steer` resolved
  // on those ids: the tokens themselves, not a text tokenised again. For a listing of generated
  // tokens (the server's log-probs): re-tokenising the generated text put SentencePiece's
  // leading-space token before a continuation of an empty prompt (issue 40, pass 20).
  ScoreResult score_ids(const std::vector<int32_t>& ids, size_t split,
                        const runtime::Steering& steer, int top = 0);
  AttentionResult attention(const std::string& prompt, const AttentionQuery& q,
                            const SteeringParams& steer);
  HiddenResult hidden(const std::string& prompt, int layer, const SteeringParams& steer);
  // The engine's Steering for `steer` on `tokens` (tokenize_prompt's, after chat wrapping and the
  // overflow policy): spans are byte offsets into the user's prompt of `user_bytes` bytes (before
  // any continuation), mapped to the tokens holding any of their bytes; runtime::SteerError for a
  // span past them, a bad layer or head.
  runtime::Steering resolve_steering(const TokenizedPrompt& tokens, const SteeringParams& steer,
                                     size_t user_bytes) const;
  int count_tokens(const std::string& prompt) override;
  std::optional<PrefillCounts> prefill_counts() const override;
  std::optional<PromptBound> prompt_bound() const override;
  // The file as given and its SHA-256, hashed on the first call (a few hundred MB read once).
  ModelFile model_file() const override;

  // The tokens a prompt becomes (after chat wrapping and the overflow policy). With
  // Overflow::TruncateLeft the prompt is cut so that `reserve` generated tokens fit after it in
  // n_ctx (an error when even one prompt token would not); Overflow::Error ignores `reserve`.
  std::vector<int32_t> prompt_tokens(const std::string& prompt, int reserve = 0) const;
  // The same, with what steering needs (resolve_steering).
  TokenizedPrompt tokenize_prompt(const std::string& prompt, int reserve = 0) const;
  const model::Model& model() const { return *model_; }
  const tok::Tokenizer& tokenizer() const { return *tok_; }
  const std::string& model_path() const { return path_; }
  // The pool this reader's forward passes run on (for contexts built beside it).
  std::shared_ptr<ThreadPool> pool() const { return opt_.engine.pool; }
  // The prefix cache of this reader's context (null when off), for contexts built beside it
  // (serve's engine): their prompts and the reader's reuse each other's prefixes.
  std::shared_ptr<runtime::PrefixCache> prefix_cache() const { return prefix_cache_; }

 private:
  std::vector<int32_t> truncate_left(const std::vector<int32_t>& ids, int reserve) const;
  // The tokens of `prompt` as a generation is fed them (raw: BOS and its text; chat: the user's
  // turn and the opening of the assistant's), then `continuation` as text the model would write
  // there; no overflow policy.
  TokenizedPrompt render(const std::string& prompt, const std::string& continuation = "") const;
  // AttentionResult::prompt_at: where the user's prompt starts in `pieces` (the tokens' pieces,
  // concatenated); nullopt for a cut prompt or one the chat template does not keep verbatim.
  std::optional<size_t> prompt_in_pieces(const TokenizedPrompt& tokens,
                                         const std::vector<std::string>& pieces) const;
  std::string path_;
  NativeOptions opt_;  // opt_.engine.pool: the pool the context runs on (the caller's or its own)
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<tok::Tokenizer> tok_;
  std::shared_ptr<runtime::PrefixCache> prefix_cache_;
  std::unique_ptr<runtime::Context> ctx_;
  int chat_family_ = 0;
  mutable std::mutex mu_;
  mutable std::once_flag sha_once_;
  mutable std::string sha256_;
};

}  // namespace ragform::reader

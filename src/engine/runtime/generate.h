// Text generation over a Context: batched prefill of every prompt in one pass, then one decode
// step per token for all unfinished sequences together. Stops on end-of-generation tokens (unless
// ignore_eos), on stop strings (the text is cut before the stop string), at the end of the first
// non-empty line (stop_after_line), or at max_tokens.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/context.h"
#include "engine/runtime/sampler.h"
#include "engine/tokenizer/tokenizer.h"

namespace ragform::runtime {

struct GenerateOptions {
  int max_tokens = 64;
  SamplingParams sampling;
  // Sequence i samples with seeds[i] when given (one per prompt), else sampling.seed + i.
  std::vector<uint64_t> seeds;
  std::vector<std::string> stop;
  // Stop at the first newline that follows non-whitespace text (the text is cut before it):
  // leading newlines and whitespace are generated through. An answer's line: a base model asked
  // "...\nAnswer:" often begins with a newline, which a "\n" stop string turns into an empty
  // answer.
  bool stop_after_line = false;
  bool ignore_eos = false;
  // Attention steering (steering.h) of sequence i: steering[i] when one per prompt is given, the
  // one entry for every prompt when one is given, none when empty.
  std::vector<Steering> steering;
};

struct GenerateOutput {
  std::vector<int32_t> ids;   // generated tokens (an end-of-generation token is not included)
  std::string text;           // their pieces concatenated, cut before a stop string
  std::string finish_reason;  // "eos", "stop" or "length"
  int prompt_tokens = 0;
};

// Where stop_after_line cuts `text`: its first '\n' after a non-whitespace byte (whitespace:
// space, \t, \n, \v, \f, \r), npos when there is none yet. Readers that cannot apply the rule
// while decoding (a remote server) cut their text here.
size_t line_stop_at(std::string_view text);

// The stop decision after a token's piece was appended to out.text: when opt.stop_after_line's
// newline or one of opt.stop's strings now occurs (only the tail can hold a new stop string),
// cut the text before the earliest, set finish_reason "stop" and return true. A cut never falls
// before the text the previous call left (the line rule held no newline after text then), so a
// stream may emit what a call returned false on. The one rule of generate() and the server's
// continuous-batching engine.
bool apply_stop(GenerateOutput& out, const GenerateOptions& opt);

// Why a prompt of n_tokens cannot start under opt in a context of n_ctx tokens per sequence
// (max_tokens < 0, an empty prompt, a prompt longer than the context), thrown as generate()
// throws it (UsageError / Error); `which` names the prompt ("prompt 3") in the message.
void check_prompt(const GenerateOptions& opt, size_t n_tokens, int n_ctx,
                  const std::string& which = "the prompt");

// The per-token rule of a decode step, after `id` was sampled for the sequence `seq` whose
// output is `o`: an end-of-generation token ends it ("eos", unless ignore_eos), else the token's
// piece is appended and apply_stop decides, else max_tokens or a full context ends it
// ("length"). Returns true when the sequence goes on (its next input is `id`). The one rule of
// generate() and the server's continuous-batching engine, which schedules sequences itself.
bool take_token(GenerateOutput& o, int32_t id, const tok::Tokenizer& tk, const GenerateOptions& opt,
                const Context& ctx, int seq);

// Each prompt is a token sequence (already tokenised, BOS included). Sequence i uses seed
// opt.seeds[i] (when given) or sampling.seed + i, so batched and one-by-one runs agree.
std::vector<GenerateOutput> generate(Context& ctx, const tok::Tokenizer& tk,
                                     const std::vector<std::vector<int32_t>>& prompts,
                                     const GenerateOptions& opt);

}  // namespace ragform::runtime

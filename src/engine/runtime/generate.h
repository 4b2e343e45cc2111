// Text generation over a Context: batched prefill of every prompt in one pass, then one decode
// step per token for all unfinished sequences together. Stops on end-of-generation tokens (unless
// ignore_eos), on stop strings (the text is cut before the stop string), or at max_tokens.
#pragma once
#include <string>
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

// After a token's piece was appended to out.text: if a stop string now occurs (only the tail
// can hold a new match), cut the text before it, set finish_reason "stop" and return true.
// Shared by generate() and the server's continuous-batching engine.
bool apply_stop_strings(GenerateOutput& out, const std::vector<std::string>& stop);

// Each prompt is a token sequence (already tokenised, BOS included). Sequence i uses seed
// opt.seeds[i] (when given) or sampling.seed + i, so batched and one-by-one runs agree.
std::vector<GenerateOutput> generate(Context& ctx, const tok::Tokenizer& tk,
                                     const std::vector<std::vector<int32_t>>& prompts,
                                     const GenerateOptions& opt);

}  // namespace ragform::runtime

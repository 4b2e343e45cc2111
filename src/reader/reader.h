// The Reader: the one interface every pipeline (SURE, C-NORM, SpotlightRAG) talks to. It answers
// four questions about a prompt:
//   generate  — a continuation (greedy or seeded sampling, stop strings, max tokens);
//   score     — per-token log-probabilities of a continuation given a prompt (or of the prompt
//               itself): SURE's oracle score;
//   attention — softmax attention rows of chosen layers/heads for chosen query positions
//               (default: last layer, final token, every head): C-NORM's ABS, SURE's shift;
//   hidden    — hidden states of a layer for every prompt token: SpotlightRAG's token encoder.
// NativeReader (native_reader.h) answers all four on the GGUF engine; a remote OpenAI-compatible
// server answers generate and, where it can, score — asking for what a reader cannot do throws
// ragform::NotSupported, never a silent zero. Prompts are raw text unless the reader was opened in
// chat mode, in which case the text is the user turn of the model's chat template.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reader/generate_options.h"
#include "reader/steering_params.h"

namespace ragform::reader {

struct Capabilities {
  bool generate = false, score = false, attention = false, hidden = false;
};

// The defaults are the declared ones of every front end (generate_options.h).
struct GenerateParams {
  int max_tokens = int(GenerateRequest{}.n_predict);
  double temperature = GenerateRequest{}.temp;  // <= 0: greedy
  int top_k = int(GenerateRequest{}.top_k);
  double top_p = GenerateRequest{}.top_p;
  uint64_t seed = GenerateRequest{}.seed;
  // generate_batch: prompt i samples with seeds[i] when given (one per prompt), else seed + i.
  // Per-prompt seeds make a prompt's output independent of the batch it ran in.
  std::vector<uint64_t> seeds;
  std::vector<std::string> stop;
  // Stop at the first newline that follows non-whitespace text (runtime/generate.h): the
  // continuation is its first non-empty line, with any leading newlines and whitespace. For
  // answers of base models, which often begin with a newline after "Answer:". A reader that
  // cannot stop there while decoding generates on and cuts its text at that newline.
  bool stop_after_line = false;
  bool ignore_eos = GenerateRequest{}.ignore_eos;
};

// The most stop strings one request may give, and the longest. Every stop is looked for in every
// sequence's text at every token (on the server, on the engine's one thread that all requests
// share): 60,000 stops in a 660 KB request held every other client for seconds (issue 40, third
// pass). OpenAI accepts 4.
inline constexpr size_t kMaxStopStrings = 64;
inline constexpr size_t kMaxStopBytes = 1024;

// Why `stop` cannot be used ("" when it can): an empty stop string would end every generation
// before its first token; more than kMaxStopStrings, or one longer than kMaxStopBytes, is refused.
// The one rule the CLI, the server and Python apply to a request's stops.
std::string stop_strings_problem(const std::vector<std::string>& stop);

struct Generation {
  std::string text;
  std::vector<int32_t> ids;   // empty for readers that do not expose ids
  std::string finish_reason;  // "eos", "stop", "length"
  int prompt_tokens = 0;
};

struct TokenLogprob {
  int32_t id = -1;
  std::string piece;
  double logprob = 0.0;  // natural log
  // The most likely tokens at this position with their log-probs, most likely first, when asked
  // for (NativeReader::score's `top`; the server's top_logprobs); else empty.
  std::vector<std::pair<int32_t, double>> top{};
};

struct ScoreResult {
  std::vector<TokenLogprob> tokens;  // the scored tokens (continuation, or prompt after token 0)
  double sum = 0.0;                  // sum of their log-probs
  int prompt_tokens = 0;             // tokens of the conditioning prompt
};

struct AttentionQuery {
  std::vector<int> layers;           // empty = last layer; negative counts from the end (-1 = last)
  std::vector<int> query_positions;  // empty = final token; negative counts from the end
  std::vector<int> heads;            // empty = every head
};

struct AttentionRows {
  int layer = 0;
  int query_position = 0;
  std::vector<int> head_ids;              // which heads `heads` holds
  std::vector<std::vector<float>> heads;  // [head][key position 0..query_position]
  std::vector<float> mean;                // mean over the returned heads
};

struct AttentionResult {
  std::vector<int32_t> ids;         // prompt tokens
  std::vector<std::string> pieces;  // their pieces
  std::vector<AttentionRows> rows;
  // Where the user's prompt starts in the pieces, concatenated, when the reader knows it (the
  // native one, from its chat rendering; unset: found by its text, the last occurrence).
  std::optional<size_t> prompt_at{};
};

struct HiddenResult {
  int layer = 0;
  int n_embd = 0;
  std::vector<int32_t> ids;
  std::vector<std::string> pieces;
  std::vector<float> states;  // [n_tokens][n_embd]
};

// Prompt tokens a reader was given to prefill, and how many it computed (the rest came from its
// prefix cache, engine/runtime/prefix_cache.h). Cumulative over the reader's life.
struct PrefillCounts {
  int64_t submitted = 0;
  int64_t computed = 0;
};

// What lets a caller refuse a prompt too long for a reader without tokenising it: no token covers
// more than piece_bytes bytes of a prompt, so a prompt over most_bytes() = n_ctx x piece_bytes
// bytes cannot fit in n_ctx tokens (an 8.5 MB prompt took 6 s and 930 MB to be counted as 6
// million tokens before being refused for a 4,096-token context).
struct PromptBound {
  int n_ctx = 0;
  size_t piece_bytes = 0;
  size_t most_bytes() const { return size_t(n_ctx > 0 ? n_ctx : 0) * piece_bytes; }
};

class Reader {
 public:
  virtual ~Reader() = default;
  virtual Capabilities capabilities() const = 0;
  // A stable description for run stores (part of a run's identity): "native:<file name>" or
  // "openai:<model>" (no URL: the same run may be measured by any servers of the model).
  virtual std::string describe() const = 0;
  // "raw" or the chat family used ("chatml", "llama3", ...).
  virtual std::string chat_mode() const = 0;

  virtual Generation generate(const std::string& prompt, const GenerateParams& p) = 0;
  // Many prompts at once (readers may batch them); the default runs them one by one.
  virtual std::vector<Generation> generate_batch(const std::vector<std::string>& prompts,
                                                 const GenerateParams& p);
  // Log-probs of `continuation` after `prompt`; with an empty continuation, of the prompt's own
  // tokens (each given the ones before it).
  virtual ScoreResult score(const std::string& prompt, const std::string& continuation) = 0;
  virtual AttentionResult attention(const std::string& prompt, const AttentionQuery& q) = 0;
  virtual HiddenResult hidden(const std::string& prompt, int layer) = 0;
  // Number of prompt tokens the reader would feed (for budgets and reports).
  virtual int count_tokens(const std::string& prompt) = 0;
  // The bound of a reader that refuses a prompt over its context (count_tokens throws) and knows
  // its tokens' longest text; nullopt when none holds (remote and Python readers, prompts
  // truncated to fit, a WordPiece vocabulary).
  virtual std::optional<PromptBound> prompt_bound() const { return std::nullopt; }
  // Prefill accounting, for readers that prefill locally (nullopt for remote readers).
  virtual std::optional<PrefillCounts> prefill_counts() const { return std::nullopt; }
  // The model file a reader reads and its SHA-256, what a run's origin records
  // (pipelines/common origin_for); empty for remote and Python readers, whose model is named by
  // describe().
  struct ModelFile {
    std::string path, sha256;
  };
  virtual ModelFile model_file() const { return {}; }

  // Attention steering of generate, score, attention and hidden (steering_params.h; off by
  // default): NativeReader applies it, spans being byte offsets into each call's prompt; a reader
  // that cannot steer throws NotSupported when it is active. Part of a run's identity
  // (common::origin_of). Per-call steering: NativeReader's overloads.
  SteeringParams steering;
};

// One prompt's outcome in a study: its generation, or the reader's error (a failed request, a
// prompt over the context), which studies store as an unmeasured row before going on.
struct Attempt {
  std::optional<Generation> gen;
  std::string error;  // set when gen is empty
  int status = -1;    // with error: reader/measured.h failure_status() of its cause
  double ms = 0;      // wall time of the batch (batched) or of this prompt alone
  bool batched = false;
};

// Generates every prompt: as one batch first; when the batch fails, each prompt alone (with its
// own seed from p.seeds, when given), so one bad prompt fails alone. Only ragform::Error (a
// reader's or a server's failure) becomes a per-prompt error; anything else (std::bad_alloc, a
// programming error) propagates to the caller.
std::vector<Attempt> generate_each(Reader& r, const std::vector<std::string>& prompts,
                                   const GenerateParams& p);

}  // namespace ragform::reader

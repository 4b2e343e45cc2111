// Flags that choose and configure the Encoder (reader/encoder.h) behind `embed` and `classify`:
//   -m FILE            the encoder model (GGUF, architecture bert); with --base-url, the server's
//                      model name (may be omitted)
//   --base-url URL     use an HTTP server (/v1/embeddings, /v1/rerank) instead of the engine
//   --api-key-env VAR  the server's API key, by the readers' rule (remote_flags.h)
//   -t, --threads N    engine threads (0 = all cores; reader/engine_settings.h declares it)
//   --truncate MODE    right (default: drop word-pieces at the end, counted) or error
//   --max-tokens N     longest input in tokens (0 = the model's position table)
//   --batch-tokens N   tokens per forward pass
#pragma once
#include <memory>

#include "cli/args.h"
#include "reader/encoder.h"

namespace ragform::cli {

struct EncoderFlags {
  explicit EncoderFlags(Args& a);
  Opt<std::string>& model;
  Opt<std::string>& base_url;
  Opt<std::string>& api_key_env;
  Opt<int>& threads;
  Opt<std::string>& truncate;
  Opt<int>& max_tokens;
  Opt<int>& batch_tokens;
  // The encoder these flags describe (native: --threads and the RAGFORM_* engine variables).
  std::unique_ptr<reader::Encoder> open() const;
  // The model name for JSON output ("tiny-bert.gguf").
  std::string model_name() const;
};

// Reports "<cmd>: N of M inputs truncated to fit the model" on stderr when N > 0.
void report_truncation(const std::string& cmd, size_t n_truncated, size_t n_total);

}  // namespace ragform::cli

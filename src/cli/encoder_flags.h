// Flags that choose and configure the Encoder (reader/encoder.h) behind `embed` and `classify`:
//   -m FILE            the encoder model (GGUF, architecture bert); with --base-url, the server's
//                      model name (may be omitted)
//   --base-url URL     use an HTTP server (/v1/embeddings, /v1/rerank) instead of the engine
//   --api-key-env VAR  the server's API key, by the readers' rule (remote_flags.h)
//   -t, --threads N, --truncate MODE, --max-tokens N, --batch-tokens N: the encoder settings
//                      declared in reader/encoder_settings.h (with the RAGFORM_* variables for
//                      the machine settings, cli/engine_env.h)
#pragma once
#include <memory>

#include "cli/args.h"
#include "cli/option_flags.h"
#include "reader/encoder.h"
#include "reader/encoder_settings.h"

namespace ragform::cli {

struct EncoderFlags {
  explicit EncoderFlags(Args& a);
  Opt<std::string>& model;
  Opt<std::string>& base_url;
  Opt<std::string>& api_key_env;
  reader::EncoderSettings settings;
  OptionFlags<reader::EncoderSettings> settings_flags;
  // The encoder these flags describe (native: the settings' flags and the RAGFORM_* engine
  // variables). A bad value is a UsageError naming its flag or variable.
  std::unique_ptr<reader::Encoder> open();
  // The model name for JSON output ("tiny-bert.gguf").
  std::string model_name() const;
};

// Reports "<cmd>: N of M inputs truncated to fit the model" on stderr when N > 0.
void report_truncation(const std::string& cmd, size_t n_truncated, size_t n_total);

}  // namespace ragform::cli

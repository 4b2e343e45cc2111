#include "cli/encoder_flags.h"

#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "cli/engine_env.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "reader/native_encoder.h"
#include "reader/remote_encoder.h"

namespace ragform::cli {

EncoderFlags::EncoderFlags(Args& a)
    : model(a.opt<std::string>("-m,--model", "FILE",
                               "encoder model (GGUF, architecture bert); with --base-url the "
                               "server's model name")),
      base_url(a.opt<std::string>("--base-url", "URL",
                                  "encode on an OpenAI-compatible server (/v1/embeddings, "
                                  "/v1/rerank) instead of the engine")),
      api_key_env(api_key_env_flag(a)),
      threads(threads_flag(a)),
      truncate(a.opt<std::string>("--truncate", "MODE",
                                  "input longer than the model: right (drop word-pieces at the "
                                  "end, counted on stderr) or error",
                                  "right")),
      max_tokens(a.opt<int>("--max-tokens", "N",
                            "longest input in tokens (0 = the model's position table)", 0)),
      batch_tokens(a.opt<int>("--batch-tokens", "N", "tokens per forward pass", 4096)) {}

std::unique_ptr<reader::Encoder> EncoderFlags::open() const {
  if (base_url.seen) {
    reader::RemoteEncoderOptions o;
    o.base_url = base_url.value;
    o.model = model.value;
    o.api_key = api_key_from_env(api_key_env);
    return std::make_unique<reader::RemoteEncoder>(o);
  }
  if (!model.seen) throw UsageError("-m", "missing encoder model (-m FILE)");
  if (max_tokens.value < 0) throw UsageError("--max-tokens", "must be >= 0");
  if (batch_tokens.value < 1) throw UsageError("--batch-tokens", "must be positive");
  reader::NativeEncoderOptions o;
  o.engine = engine_options_from_env(threads.value);
  o.truncate = runtime::parse_truncate(truncate.value);
  o.max_tokens = max_tokens.value;
  o.max_batch_tokens = batch_tokens.value;
  return std::make_unique<reader::NativeEncoder>(model.value, o);
}

std::string EncoderFlags::model_name() const {
  if (base_url.seen) return model.value;
  return std::filesystem::path(model.value).filename().string();
}

void report_truncation(const std::string& cmd, size_t n_truncated, size_t n_total) {
  if (n_truncated == 0) return;
  std::fprintf(stderr, "%s: %zu of %zu inputs truncated to fit the model\n", cmd.c_str(),
               n_truncated, n_total);
}

}  // namespace ragform::cli

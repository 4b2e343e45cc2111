#include "cli/encoder_flags.h"

#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "cli/engine_env.h"
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
      settings_flags(a, settings) {}

std::unique_ptr<reader::Encoder> EncoderFlags::open() {
  if (base_url.seen) {
    reader::RemoteEncoderOptions o;
    o.base_url = base_url.value;
    o.model = model.value;
    o.api_key = api_key_from_env(api_key_env);
    return std::make_unique<reader::RemoteEncoder>(o);
  }
  if (!model.seen) throw UsageError("-m", "missing encoder model (-m FILE)");
  settings_flags.apply();
  engine_env_settings(settings, /*flag_given=*/false);
  reader::NativeEncoderOptions o;
  try {
    o = reader::native_encoder_options(settings);
  } catch (const OptionError& e) {
    // A machine setting came from its variable (RAGFORM_CPU, ...); the rest from a flag.
    if (reader::encoder_setting(e.key()).decl.flag.empty()) throw spell_engine_setting(e, false);
    throw settings_flags.spell(e);
  }
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

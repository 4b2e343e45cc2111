// The one place the command line reads the environment (the library below cli/ reads none):
// RAGFORM_CPU, RAGFORM_F16_GEMM, RAGFORM_LOAD and RAGFORM_NUMERICS into EngineOptions,
// RAGFORM_SHARED for the shared data folder, XDG_CACHE_HOME / HOME for the C-NORM profile cache.
#pragma once
#include <optional>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "base/options.h"
#include "engine/model/engine_options.h"
#include "reader/engine_settings.h"

namespace ragform::cli {

// EngineOptions with `threads` threads and the RAGFORM_* engine variables applied. A non-empty
// `f16_gemm` (the --f16-gemm flag) overrides RAGFORM_F16_GEMM. An unknown value is a UsageError
// naming the flag or variable and the accepted values.
EngineOptions engine_options_from_env(int threads, const std::string& f16_gemm = "");

// The value of the environment variable `name` ("" when unset).
std::string env_text(const char* name);

// The settings the environment gives written into `s` (reader/engine_settings.h's EngineSettings,
// reader/encoder_settings.h's EncoderSettings): every variable the declaration names
// (RAGFORM_CPU, RAGFORM_LOAD, RAGFORM_NUMERICS, ...), and one of a setting that also has a flag
// (RAGFORM_F16_GEMM) unless `flag_given` (--f16-gemm was; the only such setting).
template <class S>
void engine_env_settings(S& s, bool flag_given) {
  s.visit([&](const OptionDecl& d, auto& field) {
    using F = std::remove_cvref_t<decltype(field)>;
    if constexpr (std::is_same_v<F, std::string> || std::is_same_v<F, std::optional<std::string>>) {
      // The flag, else the variable (a fallback: an unread bad value is no error), else the
      // declared default. An empty variable is no value, as the shell's `VAR= cmd` means.
      if (d.env.empty() || (!d.flag.empty() && flag_given)) return;
      if (std::string v = env_text(d.env.c_str()); !v.empty()) field = v;
    }
  });
}
// A setting's OptionError as the CLI says it: the variable its value came from, else its flag.
UsageError spell_engine_setting(const OptionError& e, bool flag_given);

// find_shared_dir(explicit_dir, $RAGFORM_SHARED).
std::string shared_dir(const std::string& explicit_dir = "");

// $XDG_CACHE_HOME/ragform/cnorm, else $HOME/.cache/ragform/cnorm, else ./.ragform-cache/cnorm.
std::string cnorm_cache_dir();

}  // namespace ragform::cli

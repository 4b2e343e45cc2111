// The one place the command line reads the environment (the library below cli/ reads none):
// RAGFORM_CPU, RAGFORM_F16_GEMM, RAGFORM_LOAD and RAGFORM_NUMERICS into EngineOptions,
// RAGFORM_SHARED for the shared data folder, XDG_CACHE_HOME / HOME for the C-NORM profile cache.
#pragma once
#include <string>

#include "base/error.h"
#include "base/options.h"
#include "engine/model/engine_options.h"
#include "reader/engine_settings.h"

namespace ragform::cli {

// EngineOptions with `threads` threads and the RAGFORM_* engine variables applied. A non-empty
// `f16_gemm` (the --f16-gemm flag) overrides RAGFORM_F16_GEMM. An unknown value is a UsageError
// naming the flag or variable and the accepted values.
EngineOptions engine_options_from_env(int threads, const std::string& f16_gemm = "");

// The settings the environment gives written into `s`: every variable reader/engine_settings.h
// declares (RAGFORM_CPU, RAGFORM_LOAD, RAGFORM_NUMERICS, ...), and one of a setting that also has
// a flag (RAGFORM_F16_GEMM) unless `flag_given` (--f16-gemm was; the only such setting).
void engine_env_settings(reader::EngineSettings& s, bool flag_given);
// A setting's OptionError as the CLI says it: the variable its value came from, else its flag.
UsageError spell_engine_setting(const OptionError& e, bool flag_given);

// find_shared_dir(explicit_dir, $RAGFORM_SHARED).
std::string shared_dir(const std::string& explicit_dir = "");

// $XDG_CACHE_HOME/ragform/cnorm, else $HOME/.cache/ragform/cnorm, else ./.ragform-cache/cnorm.
std::string cnorm_cache_dir();

}  // namespace ragform::cli

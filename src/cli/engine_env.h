// The one place the command line reads the environment (the library below cli/ reads none):
// RAGFORM_CPU, RAGFORM_F16_GEMM and RAGFORM_LOAD into EngineOptions, RAGFORM_SHARED for the
// shared data folder, XDG_CACHE_HOME / HOME for the C-NORM profile cache.
#pragma once
#include <string>

#include "engine/model/engine_options.h"

namespace ragform::cli {

// EngineOptions with `threads` threads and the RAGFORM_* engine variables applied. A non-empty
// `f16_gemm` (the --f16-gemm flag) overrides RAGFORM_F16_GEMM. An unknown value is a UsageError
// naming the flag or variable and the accepted values.
EngineOptions engine_options_from_env(int threads, const std::string& f16_gemm = "");

// find_shared_dir(explicit_dir, $RAGFORM_SHARED).
std::string shared_dir(const std::string& explicit_dir = "");

// $XDG_CACHE_HOME/ragform/cnorm, else $HOME/.cache/ragform/cnorm, else ./.ragform-cache/cnorm.
std::string cnorm_cache_dir();

}  // namespace ragform::cli

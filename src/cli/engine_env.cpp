#include "cli/engine_env.h"

#include <cstdlib>

#include "base/error.h"
#include "base/paths.h"
#include "reader/engine_settings.h"

namespace ragform::cli {

namespace {
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}
}  // namespace

EngineOptions engine_options_from_env(int threads, const std::string& f16_gemm) {
  // The variables are the ones reader/engine_settings.h declares for these settings.
  const char* cpu_var = reader::engine_setting("cpu").env;
  const char* f16_var = reader::engine_setting("f16_gemm").env;
  const char* load_var = reader::engine_setting("load").env;
  EngineOptions o;
  o.threads = threads;
  if (std::string cpu = env(cpu_var); !cpu.empty()) o.cpu_tier = ops::parse_tier(cpu, cpu_var);
  // The flag, else the variable (a fallback: an unread bad value is no error).
  if (!f16_gemm.empty())
    o.f16_gemm = ops::parse_f16_gemm(f16_gemm, "--f16-gemm");
  else if (std::string f16 = env(f16_var); !f16.empty())
    o.f16_gemm = ops::parse_f16_gemm(f16, f16_var);
  if (std::string load = env(load_var); !load.empty()) {
    if (load == "mmap")
      o.load = MappedFile::Load::map;
    else if (load == "memory")
      o.load = MappedFile::Load::memory;
    else
      throw UsageError(load_var, "must be mmap or memory, got '" + load + "'");
  }
  return o;
}

std::string shared_dir(const std::string& explicit_dir) {
  return find_shared_dir(explicit_dir, env("RAGFORM_SHARED"));
}

std::string cnorm_cache_dir() {
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty()) return x + "/ragform/cnorm";
  if (std::string h = env("HOME"); !h.empty()) return h + "/.cache/ragform/cnorm";
  return ".ragform-cache/cnorm";
}

}  // namespace ragform::cli

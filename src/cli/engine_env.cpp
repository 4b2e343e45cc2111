#include "cli/engine_env.h"

#include <cstdlib>

#include "base/error.h"
#include "base/paths.h"

namespace ragform::cli {

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

UsageError spell_engine_setting(const OptionError& e, bool flag_given) {
  const OptionDecl& d = reader::engine_setting(e.key()).decl;
  const bool from_env = !d.env.empty() && (d.flag.empty() || !flag_given);
  return UsageError(from_env ? d.env : d.flag.substr(d.flag.rfind(',') + 1), e.why());
}

EngineOptions engine_options_from_env(int threads, const std::string& f16_gemm) {
  reader::EngineSettings s;
  s.threads = threads;
  const bool f16_flag = !f16_gemm.empty();
  if (f16_flag) s.f16_gemm = f16_gemm;
  engine_env_settings(s, f16_flag);
  try {
    return reader::engine_options(s);
  } catch (const OptionError& e) {
    throw spell_engine_setting(e, f16_flag);
  }
}

std::string shared_dir(const std::string& explicit_dir) {
  return find_shared_dir(explicit_dir, env_text("RAGFORM_SHARED"));
}

std::string cnorm_cache_dir() {
  if (std::string x = env_text("XDG_CACHE_HOME"); !x.empty()) return x + "/ragform/cnorm";
  if (std::string h = env_text("HOME"); !h.empty()) return h + "/.cache/ragform/cnorm";
  return ".ragform-cache/cnorm";
}

}  // namespace ragform::cli

#include "base/paths.h"

#include <filesystem>

#include "base/error.h"

namespace ragform {

std::string find_shared_dir(const std::string& explicit_dir, const std::string& env_dir) {
  namespace fs = std::filesystem;
  std::string tried;
  auto ok = [&](const std::string& d, const char* how) {
    if (d.empty()) return false;
    if (fs::is_directory(d)) return true;
    tried += std::string(tried.empty() ? "" : ", ") + how + " " + d;
    return false;
  };
  if (ok(explicit_dir, "--shared")) return explicit_dir;
  if (ok(env_dir, "$RAGFORM_SHARED")) return env_dir;
#ifdef RAGFORM_SHARED_DIR
  if (ok(RAGFORM_SHARED_DIR, "build-time")) return RAGFORM_SHARED_DIR;
#endif
  throw Error(
      "shared data",
      "not found (tried " + (tried.empty() ? std::string("nothing") : tried) +
          "); pass --shared DIR or set RAGFORM_SHARED to the folder holding fixtures/ and data/");
}

std::string executable_dir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string find_data_dir(const std::string& rel, const std::string& fallback) {
  namespace fs = std::filesystem;
  const std::string dir = executable_dir();
  if (!dir.empty()) {
    std::error_code ec;
    for (const fs::path& p :
         {fs::path(dir) / ".." / "share" / "ragform" / rel, fs::path(dir) / rel})
      if (fs::is_directory(p, ec)) return p.lexically_normal().string();
  }
  return fallback;
}

}  // namespace ragform

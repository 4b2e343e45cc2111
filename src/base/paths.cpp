#include "base/paths.h"

#include <cerrno>
#include <filesystem>
#include <string>

#include "base/error.h"

namespace ragform {

void check_path(const std::string& path) {
  const size_t nul = path.find('\0');
  if (nul == std::string::npos) return;
  throw FileError(path.substr(0, nul) + "\\0...",
                  "a file name cannot hold a NUL byte (byte " + std::to_string(nul) + " of " +
                      std::to_string(path.size()) + ")",
                  EINVAL);
}

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

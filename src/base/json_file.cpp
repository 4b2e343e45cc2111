#include "base/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "base/error.h"
#include "base/json_error.h"

namespace ragform {

nlohmann::json read_json_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw FileError(path, "is a directory", EISDIR);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    throw FileError(path, std::string("cannot read ") + what + ": " + std::strerror(e), e);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(path, what + " is not valid JSON: " + json_error_text(e.what()));
  }
}

}  // namespace ragform

// The message of a JSON parser exception without the library's internal tag: nlohmann::json's
// what() starts "[json.exception.parse_error.101] parse error at line 1, column 2: ...", and a
// user needs only what follows the tag. (A string function, so this layer needs no JSON header.)
#pragma once
#include <string>

namespace ragform {

inline std::string json_error_text(const std::string& what) {
  if (what.rfind("[json.exception.", 0) == 0) {
    size_t sp = what.find("] ");
    if (sp != std::string::npos) return what.substr(sp + 2);
  }
  return what;
}

}  // namespace ragform

// "1 row", "2 rows": a count with its noun, for messages and report captions. English plurals of
// the nouns used here only add "s".
#pragma once
#include <string>
#include <string_view>

namespace ragform {

inline std::string count_of(long long n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace ragform

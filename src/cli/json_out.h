// Printing results: one JSON object per line on stdout (--json), floats with 9 significant digits.
#pragma once
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace ragform::cli {

// Rounds a float to what "%.9g" prints, so JSON output is stable and float32-exact.
inline double f9(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

// Works for nlohmann::json (sorted keys) and nlohmann::ordered_json (keys in insertion order).
template <typename J = nlohmann::json>
void print_json_line(const J& j) {
  std::string s = j.dump(-1, ' ', false, J::error_handler_t::replace);
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fputc('\n', stdout);
}

}  // namespace ragform::cli

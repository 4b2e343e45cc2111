#include "base/number_text.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

namespace ragform {

namespace {
bool digit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

bool is_decimal_number(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t mantissa = 0;
  while (i < s.size() && digit(s[i])) ++i, ++mantissa;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && digit(s[i])) ++i, ++mantissa;
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp = 0;
    while (i < s.size() && digit(s[i])) ++i, ++exp;
    if (exp == 0) return false;
  }
  return i == s.size();
}

std::optional<double> parse_decimal(std::string_view text) {
  if (!is_decimal_number(text)) return std::nullopt;
  const std::string s(text);
  errno = 0;
  const double v = std::strtod(s.c_str(), nullptr);
  // Overflow is inf with ERANGE; underflow (1e-400) is a tiny or zero value, which is what it says.
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<float> parse_decimal_float(std::string_view text) {
  const std::optional<double> v = parse_decimal(text);
  if (!v || std::fabs(*v) > double(std::numeric_limits<float>::max())) return std::nullopt;
  return float(*v);
}

bool is_non_finite_word(std::string_view text) {
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) text.remove_prefix(1);
  std::string w(text);
  for (char& c : w) c = char(std::tolower(static_cast<unsigned char>(c)));
  return w == "nan" || w == "inf" || w == "infinity";
}

std::string significant(double v, int digits) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

}  // namespace ragform

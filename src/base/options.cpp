#include "base/options.h"

#include <cmath>
#include <cstdio>

#include "base/excerpt.h"

namespace ragform {

std::string option_number_text(double v) {
  // int64's largest value, which a double holds as 2^63: a Count's open upper end.
  if (v == 0x1p63) return "9223372036854775807";
  char b[48];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(b, sizeof b, "%.0f", v);
  else
    std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string range_words(const OptionDecl& d) {
  if (!d.range_text.empty()) return d.range_text;
  if (!d.has_range()) return "any value";
  // The largest int (an int field's own bound) or int64 as the upper end, the lowest int as the
  // lower: no bound worth printing, as the CLI's describe_range says of a flag's type's extremes
  // (a layer counted from the end accepts "any value").
  const bool open_hi = d.hi >= 9.2e18 || d.hi == 2147483647.0;
  const bool open_lo = d.lo <= -2147483648.0;
  if (open_hi && open_lo) return "any value";
  if (open_hi) return option_number_text(d.lo) + " or more";
  if (open_lo) return "at most " + option_number_text(d.hi);
  return option_number_text(d.lo) + ".." + option_number_text(d.hi);
}

void check_option_range(const OptionDecl& d, double v) {
  check_option_range(d, v, option_number_text(v));
}

void check_option_range(const OptionDecl& d, double v, const std::string& text) {
  if (!d.has_range() || (v >= d.lo && v <= d.hi)) return;  // NaN fails both
  // The CLI's words for the same refusal (cli/args.cpp parse_number).
  if (v > d.hi)
    throw OptionError(d.key, "value too large: " + text +
                                 " (largest accepted: " + option_number_text(d.hi) + ")");
  throw OptionError(d.key, "value out of range: " + text + " (accepted: " + range_words(d) + ")");
}

size_t option_choice(const std::string& key, const std::string& value,
                     std::initializer_list<const char*> choices) {
  std::string expected;
  size_t i = 0;
  for (const char* c : choices) {
    if (value == c) return i;
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(c);
    ++i;
  }
  throw OptionError(key, "expected " + expected + ", got '" + excerpt(value) + "'");
}

}  // namespace ragform

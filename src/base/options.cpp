#include "base/options.h"

#include <cmath>
#include <cstdio>

namespace ragform {

std::string option_number_text(double v) {
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
  // The largest int (an int field's own bound) or int64 as the upper end: no upper bound worth
  // printing, as the CLI's describe_range says of a flag's type's maximum.
  if (d.hi >= 9.2e18 || d.hi == 2147483647.0) return option_number_text(d.lo) + " or more";
  return option_number_text(d.lo) + ".." + option_number_text(d.hi);
}

void check_option_range(const OptionDecl& d, double v) {
  if (!d.has_range() || (v >= d.lo && v <= d.hi)) return;  // NaN fails both
  // The CLI's words for the same refusal (cli/args.cpp parse_number).
  if (v > d.hi)
    throw OptionError(d.key, "value too large: " + option_number_text(v) +
                                 " (largest accepted: " + option_number_text(d.hi) + ")");
  throw OptionError(d.key, "value out of range: " + option_number_text(v) +
                               " (accepted: " + range_words(d) + ")");
}

}  // namespace ragform

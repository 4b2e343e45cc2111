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
  // The largest int64 (or more) as the upper end: no upper bound worth printing.
  if (d.hi >= 9.2e18) return option_number_text(d.lo) + " or more";
  return option_number_text(d.lo) + ".." + option_number_text(d.hi);
}

void check_option_range(const OptionDecl& d, double v) {
  if (!d.has_range() || (v >= d.lo && v <= d.hi)) return;  // NaN fails both
  throw OptionError(d.key, "value out of range: " + option_number_text(v) +
                               " (accepted: " + range_words(d) + ")");
}

}  // namespace ragform

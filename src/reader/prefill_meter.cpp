#include "reader/prefill_meter.h"

#include <cstdio>

namespace ragform::reader {

std::string prefill_line(const PrefillCounts& c) {
  const double reused =
      c.submitted > 0 ? 100.0 * double(c.submitted - c.computed) / double(c.submitted) : 0.0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "prefill: computed %lld of %lld prompt tokens (%.1f%% reused)",
                static_cast<long long>(c.computed), static_cast<long long>(c.submitted), reused);
  return buf;
}

nlohmann::json to_json(const PrefillCounts& c) {
  return {{"submitted", c.submitted}, {"computed", c.computed}};
}

}  // namespace ragform::reader

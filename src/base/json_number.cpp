#include "base/json_number.h"

#include <climits>
#include <cmath>
#include <cstdint>

namespace ragform {

bool json_whole_number(const nlohmann::json& v, long long& x) {
  if (v.is_number_unsigned()) {
    // An unsigned value above LLONG_MAX would wrap to a negative one in get<long long>.
    x = v.get<uint64_t>() > uint64_t(LLONG_MAX) ? LLONG_MAX : v.get<long long>();
    return true;
  }
  if (v.is_number_integer()) {
    x = v.get<long long>();
    return true;
  }
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::trunc(d)) return false;
  x = d >= 0x1p63 ? LLONG_MAX : d <= -0x1p63 ? LLONG_MIN : static_cast<long long>(d);
  return true;
}

}  // namespace ragform

#include "base/json_keys.h"

#include "base/excerpt.h"

namespace ragform {

void only_json_keys(const nlohmann::json& o, std::initializer_list<const char*> keys,
                    const std::string& where, const std::string& noun, KeyFault fault) {
  if (!o.is_object()) return;
  for (const auto& [key, v] : o.items()) {
    if (v.is_null()) continue;
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    if (known) continue;
    std::string list;
    for (const char* k : keys) list += std::string(list.empty() ? "" : ", ") + k;
    const std::string why =
        "'" + printable(excerpt(key)) + "' is not supported (" + noun + " takes " + list + ")";
    if (fault == KeyFault::runtime) throw Error(where, why);
    throw UnknownKeyError(where, why);
  }
}

nlohmann::json without_nulls(const nlohmann::json& o) {
  if (!o.is_object()) return o;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, v] : o.items())
    if (!v.is_null()) out[key] = v;
  return out;
}

}  // namespace ragform

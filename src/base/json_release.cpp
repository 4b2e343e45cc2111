#include "base/json_release.h"

namespace ragform {

void release_json(nlohmann::json& v) noexcept {
  if (v.is_array()) {
    auto& a = v.get_ref<nlohmann::json::array_t&>();
    while (!a.empty()) {
      release_json(a.back());
      a.pop_back();  // a leaf or an empty container now: its destructor allocates nothing
    }
  } else if (v.is_object()) {
    auto& o = v.get_ref<nlohmann::json::object_t&>();
    while (!o.empty()) {
      release_json(o.begin()->second);
      o.erase(o.begin());
    }
  }
  // An empty container's destructor reserves room for zero children: no allocation.
}

}  // namespace ragform

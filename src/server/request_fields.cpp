#include "server/request_fields.h"

#include "base/excerpt.h"
#include "server/api_json.h"

namespace ragform::server {

std::set<std::string> declared_fields(const std::string& schema) {
  std::set<std::string> out;
  if (schema.empty()) return out;
  const nlohmann::json s = nlohmann::json::parse(schema);  // ours: checked by Router::add
  if (!s.is_object() || !s.contains("properties") || !s["properties"].is_object()) return out;
  if (s.contains("additionalProperties") && s["additionalProperties"] != false) return out;
  for (const auto& [key, value] : s["properties"].items()) out.insert(key);
  return out;
}

void drop_null_fields(nlohmann::json& body) {
  if (!body.is_object()) return;
  for (auto it = body.begin(); it != body.end();)
    it = it->is_null() ? body.erase(it) : std::next(it);
}

void check_request_fields(const nlohmann::json& body, const std::set<std::string>& fields,
                          const std::string& route) {
  if (fields.empty() || !body.is_object()) return;
  for (const auto& [key, value] : body.items()) {
    if (fields.count(key)) continue;  // "" too: pass 16 found the empty key taken for none
    std::string list;
    for (const std::string& f : fields) list += (list.empty() ? "" : ", ") + f;
    api_json::bad("'" + printable(excerpt(key)) + "' is not a field of " + route +
                      ", which reads " + list + " (GET /openapi.json describes each)",
                  "unknown_field");
  }
}

}  // namespace ragform::server

#include "server/request_fields.h"

#include <nlohmann/json.hpp>

#include "base/excerpt.h"
#include "base/json_file.h"
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

namespace {

// Reads the keys of the outermost object against the declared ones.
class TopLevelKeys : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit TopLevelKeys(const std::set<std::string>& fields) : fields_(fields) {}
  bool found = false;   // a top-level key not declared was met
  std::string unknown;  // the first one
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    // The first undeclared key is kept and the body read on: a body that is not JSON is the
    // handler's to name ("malformed JSON body"), whatever keys came before the fault.
    if (depth_ == 1 && !found && !fields_.count(k)) {
      unknown = k;  // "" too (pass 16: the empty key was taken for "none found")
      found = true;
    }
    return true;
  }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return ++depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;  // (parse_json_text's own wrapper reports the error)
  }

 private:
  bool value() { return true; }
  const std::set<std::string>& fields_;
  int depth_ = 0;
};

}  // namespace

void check_request_fields(std::string_view body, const std::set<std::string>& fields,
                          const std::string& route) {
  if (fields.empty()) return;
  TopLevelKeys keys(fields);
  try {
    parse_json_text(body, keys);
  } catch (const std::exception&) {
    return;  // bad JSON, too deep: the handler's parse names it
  }
  if (!keys.found) return;
  std::string list;
  for (const std::string& f : fields) list += (list.empty() ? "" : ", ") + f;
  api_json::bad("'" + printable(excerpt(keys.unknown)) + "' is not a field of " + route +
                    ", which reads " + list + " (GET /openapi.json describes each)",
                "unknown_field");
}

}  // namespace ragform::server

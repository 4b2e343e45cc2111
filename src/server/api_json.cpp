// Request fields and responses of the API handlers (api_json.h).
#include "server/api_json.h"

#include <climits>
#include <cstdint>

#include "base/json_error.h"
#include "server/engine.h"

namespace ragform::server::api_json {

[[noreturn]] void bad(const std::string& msg, const std::string& code) {
  throw ApiError{400, msg, "invalid_request_error", code};
}

json parse_body(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ApiError{400, "malformed JSON body: " + json_error_text(e.what()),
                   "invalid_request_error", "invalid_json"};
  }
  if (!j.is_object()) bad("the request body must be a JSON object", "invalid_json");
  return j;
}

int get_int(const json& j, const char* key, int def, int lo, int hi) {
  if (!j.contains(key) || j[key].is_null()) return def;
  const json& v = j[key];
  if (!v.is_number_integer() && !v.is_number_unsigned())
    bad(std::string("'") + key + "' must be an integer", "invalid_type");
  // An unsigned value above LLONG_MAX would wrap to a negative one in get<long long>.
  const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(LLONG_MAX);
  const long long x = huge ? LLONG_MAX : v.get<long long>();
  if (x < lo || x > hi)
    bad(std::string("'") + key + "' = " + v.dump() + " is outside [" + std::to_string(lo) + ", " +
        std::to_string(hi) + "]");
  return int(x);
}

double get_num(const json& j, const char* key, double def, double lo, double hi) {
  if (!j.contains(key) || j[key].is_null()) return def;
  if (!j[key].is_number()) bad(std::string("'") + key + "' must be a number", "invalid_type");
  double x = j[key].get<double>();
  if (!(x >= lo && x <= hi)) bad(std::string("'") + key + "' is outside its range");
  return x;
}

bool get_bool(const json& j, const char* key, bool def) {
  if (!j.contains(key) || j[key].is_null()) return def;
  if (!j[key].is_boolean()) bad(std::string("'") + key + "' must be a boolean", "invalid_type");
  return j[key].get<bool>();
}

std::string get_str(const json& j, const char* key, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) bad(std::string("'") + key + "' is required", "missing_field");
    return "";
  }
  if (!j[key].is_string()) bad(std::string("'") + key + "' must be a string", "invalid_type");
  return j[key].get<std::string>();
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

Response ok(const json& j) {
  Response r;
  r.body = dump(j);
  return r;
}

void require_api_key(const Request& req, const std::string& key) {
  if (key.empty()) return;
  const std::string expected = "Bearer " + key;
  const std::string& given = req.authorization;
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i)
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  if (diff != 0)
    throw ApiError{401, "invalid or missing API key (send 'Authorization: Bearer KEY')",
                   "invalid_request_error", "invalid_api_key"};
}

Response response_for_current_exception() noexcept {
  try {
    throw;
  } catch (const ApiError& e) {
    Response r;
    r.status = e.status;
    try {
      r.body = dump({{"error", {{"message", e.message}, {"type", e.type}, {"code", e.code}}}});
    } catch (...) {
      r.body = R"({"error":{"message":"error","type":"server_error","code":"internal"}})";
    }
    return r;
  } catch (const QueueFull& e) {
    return error_response(503, e.what(), "server_error");
  } catch (const Error& e) {  // UsageError, NotSupported and the rest
    return error_response(400, e.what(), "invalid_request_error");
  } catch (const std::exception& e) {
    return error_response(500, e.what(), "server_error");
  } catch (...) {
    return error_response(500, "unknown error", "server_error");
  }
}

}  // namespace ragform::server::api_json

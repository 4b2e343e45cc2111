// Request fields and responses of the API handlers (api_json.h).
#include "server/api_json.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>

#include "base/excerpt.h"
#include "base/json_error.h"
#include "base/json_file.h"
#include "base/json_keys.h"
#include "base/json_number.h"
#include "base/options.h"
#include "server/engine.h"

namespace ragform::server::api_json {

[[noreturn]] void bad(const std::string& msg, const std::string& code) {
  throw ApiError{400, msg, "invalid_request_error", code};
}

json parse_body(const std::string& body) {
  json j;
  try {
    // Bounded nesting (kMaxJsonDepth), a number beyond double's range (1e309) and bad syntax are
    // all one JsonTextError, with its quote of the body cut to an excerpt.
    j = parse_json_text(body);
  } catch (const JsonTextError& e) {
    throw ApiError{400, std::string("malformed JSON body: ") + e.what(), "invalid_request_error",
                   "invalid_json"};
  }
  if (!j.is_object()) bad("the request body must be a JSON object", "invalid_json");
  return j;
}

int get_int(const json& j, const char* key, int def, int lo, int hi) {
  if (!j.contains(key) || j[key].is_null()) return def;
  const json& v = j[key];
  long long x = 0;
  if (!json_whole_number(v, x))
    bad(std::string("'") + key + "' must be an integer", "invalid_type");
  if (x < lo || x > hi)
    bad(std::string("'") + key + "' = " + json_excerpt(v) + " is outside [" + std::to_string(lo) +
        ", " + std::to_string(hi) + "]");
  return int(x);
}

double get_num(const json& j, const char* key, double def, double lo, double hi) {
  if (!j.contains(key) || j[key].is_null()) return def;
  if (!j[key].is_number()) bad(std::string("'") + key + "' must be a number", "invalid_type");
  double x = j[key].get<double>();
  // The value and the range, as an integer's refusal says them (pass 20: "is outside its range").
  if (!(x >= lo && x <= hi))
    bad(std::string("'") + key + "' = " + json_excerpt(j[key]) + " is outside [" +
        option_number_text(lo) + ", " + option_number_text(hi) + "]");
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

void only_keys(const json& o, std::initializer_list<const char*> keys, const std::string& what) {
  only_json_keys(o, keys, what, what);  // UnknownKeyError: 400 unknown_field below
}

std::string with_declared(const std::string& schema, const nlohmann::ordered_json& fields) {
  nlohmann::ordered_json s = nlohmann::ordered_json::parse(schema);
  nlohmann::ordered_json& props = s["properties"];
  for (const auto& [key, declared] : fields.items()) {
    nlohmann::ordered_json merged = declared;
    if (props.contains(key))
      for (const auto& [k, v] : props[key].items()) merged[k] = v;
    props[key] = std::move(merged);
  }
  return s.dump();
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

namespace {
json model_object(const std::string& id, long created, const std::string& sha256) {
  json m = {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "ragform"}};
  if (!sha256.empty()) m["ragform"] = {{"model_sha256", sha256}};
  return m;
}
}  // namespace

Response models_reply(const std::string& id, long created, const std::string& sha256) {
  return ok({{"object", "list"}, {"data", json::array({model_object(id, created, sha256)})}});
}

Response model_reply(const std::string& asked, const std::string& id, long created,
                     const std::string& sha256) {
  if (asked != id)
    throw ApiError{
        404, "model '" + excerpt(asked) + "' is not served here (this server serves '" + id + "')",
        "invalid_request_error", "model_not_found"};
  return ok(model_object(id, created, sha256));
}

Response ok(const json& j) {
  Response r;
  r.body = dump(j);
  return r;
}

namespace {
bool equal_ignoring_case(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// Whether `given` equals `key`, in time that depends only on the lengths (not on where they first
// differ, so response times do not reveal the key byte by byte).
bool same_key(const std::string& given, const std::string& key) {
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
  return diff == 0;
}
}  // namespace

void require_api_key(const Request& req, const std::string& key) {
  if (key.empty()) return;
  // "Bearer" is an auth-scheme, and schemes are case-insensitive (RFC 9110 section 11.1); one or
  // more spaces separate it from the token.
  const std::string& h = req.authorization;
  const size_t sp = h.find(' ');
  const bool bearer = sp != std::string::npos && equal_ignoring_case(h.substr(0, sp), "bearer");
  const size_t at = bearer ? h.find_first_not_of(' ', sp) : std::string::npos;
  const std::string given = at == std::string::npos ? "" : h.substr(at);
  if (!same_key(given, key) || !bearer)
    throw ApiError{401, "invalid or missing API key (send 'Authorization: Bearer KEY')",
                   "invalid_request_error", "invalid_api_key"};
}

std::string client_message(std::string msg,
                           const std::vector<std::pair<std::string, std::string>>& hidden) {
  for (const auto& [path, shown] : hidden)
    for (size_t at = msg.find(path); at != std::string::npos;
         at = msg.find(path, at + shown.size()))
      msg.replace(at, path.size(), shown);
  return bounded_message(msg);
}

Response response_for_current_exception(
    const std::vector<std::pair<std::string, std::string>>& hidden) noexcept {
  try {
    try {
      throw;
    } catch (const ApiError& e) {
      Response r;
      r.status = e.status;
      r.body = dump(
          {{"error",
            {{"message", client_message(e.message, hidden)}, {"type", e.type}, {"code", e.code}}}});
      return r;
    } catch (const QueueFull& e) {
      return error_response(503, client_message(e.what(), hidden), "server_error", "queue_full");
    } catch (const ContextOverflow& e) {  // the code OpenAI's API gives a prompt too long
      return error_response(400, client_message(e.what(), hidden), "invalid_request_error",
                            "context_length_exceeded");
    } catch (const UnknownKeyError& e) {  // base/json_keys.h: a file's or a nested object's key
      return error_response(400, client_message(e.what(), hidden), "invalid_request_error",
                            "unknown_field");
    } catch (const Error& e) {  // UsageError, NotSupported and the rest
      return error_response(400, client_message(e.what(), hidden), "invalid_request_error");
    } catch (const std::bad_alloc&) {  // what() is "std::bad_alloc"; the limits stay private
      return error_response(503,
                            "the server ran out of memory for this request: ask for less at once "
                            "or try again when it is less busy",
                            "server_error", "out_of_memory");
    } catch (const std::exception& e) {
      return error_response(500, client_message(e.what(), hidden), "server_error");
    }
  } catch (...) {  // an unknown exception, or bad_alloc while building the reply
    Response r;
    r.status = 500;
    r.body = R"({"error":{"message":"unknown error","type":"server_error","code":"internal"}})";
    return r;
  }
}

}  // namespace ragform::server::api_json

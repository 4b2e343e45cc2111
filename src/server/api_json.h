// The JSON side of the API handlers (api.cpp, api_rag.cpp, api_encoder.cpp), internal to
// src/server: reading a request's fields, where every bad field is an ApiError that Api::handle
// turns into an OpenAI-style 400 naming the field, and writing a 200 response.
#pragma once
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/options.h"
#include "server/api.h"
#include "server/router.h"

namespace ragform::server::api_json {

using nlohmann::json;

// Thrown inside the handlers, turned into an error response at the edge (Api::handle).
struct ApiError {
  int status;
  std::string message, type, code;
};

// Hits one /v1/retrieve request may ask for, questions x k: each hit carries its passage, so
// 1,024 questions x k = 1,000 made a 108 MB reply from a 17 KB request.
inline constexpr size_t kMaxRetrieveHits = 65536;
// Documents in one /v1/rag/spotlight request: each is one encoder pass (60,000 one-sentence
// documents in 960 KB ran 60,000 passes); a retrieval prompt holds tens.
inline constexpr size_t kMaxSpotlightDocuments = 256;
// Sentences over all the documents of one /v1/rag/spotlight request: each is scored and annotated,
// about 10 KB of memory while the reply is built (measured: 256 documents of 700 one-word
// sentences, a 904 KB request, took 1.7 GB and 21 s and made a 62 MB reply). A retrieval prompt
// holds hundreds.
inline constexpr size_t kMaxSpotlightSentences = 8192;
inline constexpr size_t kSpotlightBytesPerSentence = 10240;

// GET /v1/models of either kind of server: the one served model, and the SHA-256 of its file when
// known (the weights behind the id: reader/server_pool.h's fleet check tells servers apart by it).
Response models_reply(const std::string& id, long created, const std::string& sha256);
// Its route declaration.
inline const RouteSpec& models_route() {
  static const RouteSpec spec{
      .method = "GET",
      .paths = {"/v1/models", "/models"},
      .summary = "The one served model",
      .response =
          R"({"type": "object", "required": ["object", "data"], "properties": {"object": {"const": "list"},
      "data": {"type": "array", "minItems": 1, "maxItems": 1, "items": {"type": "object", "required": ["id", "object", "created", "owned_by"],
        "properties": {"id": {"type": "string"}, "object": {"const": "model"}, "created": {"type": "integer"}, "owned_by": {"const": "ragform"},
          "ragform": {"type": "object", "required": ["model_sha256"], "properties": {"model_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
            "description": "the model file's SHA-256, for a fleet's weights check"}}}}}})",
  };
  return spec;
}

// A 400 invalid_request_error with `code`.
[[noreturn]] void bad(const std::string& msg, const std::string& code = "invalid_value");

// The body as a JSON object; 400 invalid_json otherwise.
json parse_body(const std::string& body);

// Field `key` of `j`, or `def` when it is missing or null; 400 when it has the wrong type or lies
// outside [lo, hi].
int get_int(const json& j, const char* key, int def, int lo, int hi);
double get_num(const json& j, const char* key, double def, double lo, double hi);
bool get_bool(const json& j, const char* key, bool def);
// A string field; "" when missing or null unless `required` (then 400 missing_field).
std::string get_str(const json& j, const char* key, bool required);

// The fields of a declared option struct (base/options.h) a request gives: each declared key
// (of `only`, when given) read with its field's type and the declared range (get_int / get_num /
// get_bool / get_str); missing or null keeps the field's value (the declaration's default).
template <class S>
void read_declared(const json& j, S& s, std::initializer_list<std::string_view> only = {}) {
  s.visit([&](const OptionDecl& d, auto& field) {
    const char* key = d.key.c_str();
    if (only.size() && std::find(only.begin(), only.end(), d.key) == only.end()) return;
    if (!j.contains(key) || j[key].is_null()) return;
    using F = std::remove_cvref_t<decltype(field)>;
    auto read = [&](const auto& def) {
      using T = std::remove_cvref_t<decltype(def)>;
      if constexpr (std::is_same_v<T, bool>) {
        return get_bool(j, key, def);
      } else if constexpr (std::is_same_v<T, std::string>) {
        return get_str(j, key, false);
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        // A list: a string (one value) or an array of strings.
        if (j[key].is_string()) return T{j[key].get<std::string>()};
        T out;
        if (j[key].is_array())
          for (const json& x : j[key]) {
            if (!x.is_string()) break;
            out.push_back(x.get<std::string>());
          }
        if (!j[key].is_array() || out.size() != j[key].size())
          bad(std::string("'") + key + "' must be a string or an array of strings", "invalid_type");
        return out;
      } else if constexpr (std::is_floating_point_v<T>) {
        return T(get_num(j, key, double(def), d.has_range() ? d.lo : -HUGE_VAL,
                         d.has_range() ? d.hi : HUGE_VAL));
      } else {
        static_assert(std::is_integral_v<T>, "a declared request field is a number, bool or str");
        constexpr double kLo = std::numeric_limits<int>::lowest();
        constexpr double kHi = std::numeric_limits<int>::max();
        return T(get_int(j, key, int(def), int(d.has_range() ? std::max(d.lo, kLo) : kLo),
                         int(d.has_range() ? std::min(d.hi, kHi) : kHi)));
      }
    };
    if constexpr (requires { field.has_value(); })
      field = read(typename F::value_type{});
    else
      field = read(field);
  });
}

// 401 invalid_api_key unless req.authorization is "Bearer <key>", compared in time that depends
// only on the lengths (not on where they first differ, so response times do not reveal the key
// byte by byte). Nothing when key is empty.
void require_api_key(const Request& req, const std::string& key);

// The response for the exception being handled, at an API's edge (call inside a catch block):
// an ApiError as it says; QueueFull 503; UsageError, NotSupported and every other Error 400 (a
// reader's or encoder's refusal - an empty prompt, a bad layer, no classification head - is about
// the request); anything else 500. The message is client_message(what, hidden).
Response response_for_current_exception(
    const std::vector<std::pair<std::string, std::string>>& hidden = {}) noexcept;

// `msg` as a client may see it: each hidden.first (a server-side path) replaced by its .second,
// URL credentials redacted and the whole cut to kMessageBytes (base/excerpt.h).
std::string client_message(std::string msg,
                           const std::vector<std::pair<std::string, std::string>>& hidden);

// Compact JSON, invalid UTF-8 replaced rather than thrown on.
std::string dump(const json& j);
// A 200 response with body j.
Response ok(const json& j);

}  // namespace ragform::server::api_json

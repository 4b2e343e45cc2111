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
#include "server/message.h"
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
// Passages per question of one /v1/retrieve request (retrieve's declared k goes to 100,000 for
// the CLI, which writes a file).
inline constexpr int64_t kMaxRetrieveK = 1000;
// Documents in one /v1/rag/spotlight request: each is one encoder pass (60,000 one-sentence
// documents in 960 KB ran 60,000 passes); a retrieval prompt holds tens.
inline constexpr size_t kMaxSpotlightDocuments = 256;
// Sentences over all the documents of one /v1/rag/spotlight request: each is scored and annotated,
// about 26 KB of memory while the reply is built (measured, issue 40's fourth pass: 8,192
// three-word sentences under a 20-word question peaked 214 MB above the server's baseline; before
// that, 256 documents of 700 one-word sentences, a 904 KB request, took 1.7 GB and 21 s and made a
// 62 MB reply). A retrieval prompt holds hundreds. The reply budget holds 32 KiB a sentence, and
// 128 bytes for each question word and sentence (a match per query token in every sentence: an
// 8,000-word question over 960 sentences took 809 MB; spotlight's kMaxSimilarities bounds it).
inline constexpr size_t kMaxSpotlightSentences = 8192;
inline constexpr size_t kSpotlightBytesPerSentence = 32768;
inline constexpr size_t kSpotlightBytesPerMatch = 128;

// The model object of GET /v1/models (its one item) and GET /v1/models/{model}.
inline constexpr const char* kModelObjectSchema =
    R"({"type": "object", "required": ["id", "object", "created", "owned_by"],
  "properties": {"id": {"type": "string"}, "object": {"const": "model"}, "created": {"type": "integer"}, "owned_by": {"const": "ragform"},
    "ragform": {"type": "object", "required": ["model_sha256"], "properties": {"model_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}},
      "description": "the model file's SHA-256, for a fleet's weights check"}}})";

// GET /v1/models of either kind of server: the one served model, and the SHA-256 of its file when
// known (the weights behind the id: reader/server_pool.h's fleet check tells servers apart by it).
Response models_reply(const std::string& id, long created, const std::string& sha256);
// GET /v1/models/{model} (the OpenAI SDK's models.retrieve): the same model object alone when
// `asked` is the served id, else 404 model_not_found.
Response model_reply(const std::string& asked, const std::string& id, long created,
                     const std::string& sha256);
// Their route declarations.
inline const RouteSpec& model_route() {
  static const RouteSpec spec{
      .method = "GET",
      .paths = {"/v1/models/{model}", "/models/{model}"},
      .parameter =
          "the served model's id, as GET /v1/models lists it (an id whose path segment "
          "would need percent-escapes cannot be asked for: the server refuses them)",
      .summary = "The served model, by its id",
      .response = kModelObjectSchema,
  };
  return spec;
}
inline const RouteSpec& models_route() {
  static const RouteSpec spec{
      .method = "GET",
      .paths = {"/v1/models", "/models"},
      .summary = "The one served model",
      .response =
          R"({"type": "object", "required": ["object", "data"], "properties": {"object": {"const": "list"},
      "data": {"type": "array", "minItems": 1, "maxItems": 1, "items": )" +
          std::string(kModelObjectSchema) + "}}}",
  };
  return spec;
}

// A 400 invalid_request_error with `code`.
[[noreturn]] void bad(const std::string& msg, const std::string& code = "invalid_value");
// The code of every refusal of an OpenAI field this server does not implement, given a value
// other than its default (n, best_of, penalties, tools, chat log-probs, shortened embeddings, ...):
// a client can tell "not here" from a value that is wrong anywhere (invalid_value).
inline constexpr const char* kUnsupported = "unsupported_field";

// The body as a JSON object; 400 invalid_json otherwise.
json parse_body(const std::string& body);

// Field `key` of `j`, or `def` when it is missing or null; 400 when it has the wrong type or lies
// outside [lo, hi].
int get_int(const json& j, const char* key, int def, int lo, int hi);
double get_num(const json& j, const char* key, double def, double lo, double hi);
bool get_bool(const json& j, const char* key, bool def);
// A string field; "" when missing or null unless `required` (then 400 missing_field).
std::string get_str(const json& j, const char* key, bool required);
// Refuses (400 unknown_field, "<what>: 'K' is not supported (<what> takes a, b)") a key of the
// object `o` other than `keys`; a key whose value is null reads as absent (the SDKs send their
// message objects' unset fields as null). Nested objects' counterpart of the router's top-level
// check (request_fields.h).
void only_keys(const json& o, std::initializer_list<const char*> keys, const std::string& what);

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

// The JSON Schema of the fields read_declared reads from a request (each declared key of S, of
// `only` when given), for a route's request schema (with_declared): the field's type (or null:
// absent), the declared range as read_declared applies it (a whole number within an int), the
// field's initial value as "default" (an optional field has none: its description says what
// absent means) and the declared help as "description". The API document so states the
// declaration's defaults and bounds instead of a copy of them.
template <class S>
nlohmann::ordered_json declared_schema(std::initializer_list<std::string_view> only = {}) {
  using ojson = nlohmann::ordered_json;
  ojson out = ojson::object();
  S s;
  s.visit([&](const OptionDecl& d, const auto& field) {
    if (only.size() && std::find(only.begin(), only.end(), d.key) == only.end()) return;
    ojson p = ojson::object();
    auto shape = [&](const auto& v, bool with_default) {
      using T = std::remove_cvref_t<decltype(v)>;
      (void)with_default;
      if constexpr (std::is_same_v<T, bool>) {
        p["type"] = ojson::array({"boolean", "null"});
        if (with_default) p["default"] = v;
      } else if constexpr (std::is_same_v<T, std::string>) {
        p["type"] = ojson::array({"string", "null"});
        if (with_default && !v.empty()) p["default"] = v;
      } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        const ojson one = {{"type", "string"}}, none = {{"type", "null"}};
        const ojson many = {{"type", "array"}, {"items", one}};
        p["oneOf"] = ojson::array({one, many, none});
      } else if constexpr (std::is_floating_point_v<T>) {
        p["type"] = ojson::array({"number", "null"});
        if (d.has_range()) {
          p["minimum"] = d.lo;
          p["maximum"] = d.hi;
        }
        if (with_default) p["default"] = double(v);
      } else {
        static_assert(std::is_integral_v<T>, "a declared request field is a number, bool or str");
        constexpr double kLo = std::numeric_limits<int>::lowest();
        constexpr double kHi = std::numeric_limits<int>::max();
        p["type"] = ojson::array({"integer", "null"});
        p["minimum"] = (long long)(d.has_range() ? std::max(d.lo, kLo) : kLo);
        p["maximum"] = (long long)(d.has_range() ? std::min(d.hi, kHi) : kHi);
        if (with_default) p["default"] = (long long)v;
      }
    };
    using F = std::remove_cvref_t<decltype(field)>;
    if constexpr (requires { field.has_value(); })
      shape(typename F::value_type{}, false);
    else
      shape(field, true);
    p["description"] = d.unset.empty() ? d.key_help() : d.key_help() + " (absent: " + d.unset + ")";
    out[d.key] = std::move(p);
  });
  return out;
}

// A request schema's text with `fields` (declared_schema) among its "properties": a field the
// text already names is filled in where it stands, keeping the text's own keywords on top of the
// declared ones (an enum, exclusiveMinimum); any other is added after the text's.
std::string with_declared(const std::string& schema, const nlohmann::ordered_json& fields);

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

// The JSON side of the API handlers (api.cpp, api_rag.cpp, api_encoder.cpp), internal to
// src/server: reading a request's fields, where every bad field is an ApiError that Api::handle
// turns into an OpenAI-style 400 naming the field, and writing a 200 response.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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

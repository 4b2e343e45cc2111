// The one table of `ragform serve`'s endpoints. Every API (the decoder's api.h, the encoder's
// api_encoder.h, /v1/retrieve's api_retrieve.h) adds its routes here, and only the router decides
// what a request reaches:
//   - the API key: one constant-time check (api_json.h require_api_key) before every route but the
//     open ones (GET /health) — also before a 404, so a client without the key learns nothing
//     about which paths exist;
//   - an unknown path: 404 "no endpoint PATH", with the hint of that path (a path another kind of
//     server answers) or the router's default hint;
//   - a known path with another method: 405 "use GET" / "use POST" (HEAD counts as GET);
//   - the body of a route that takes one: parsed once (400 invalid_json when it is not a JSON
//     object), and a field the route's request schema does not declare is 400 unknown_field
//     (request_fields.h), so no field is answered 200 and ignored;
//   - whatever a handler throws: the one error JSON (api_json.h response_for_current_exception),
//     its message cut to a bound and with the server's own paths (hide()) replaced by their file
//     names: a client learns why a request failed, not where the server keeps its files.
// A new endpoint is one RouteSpec (its paths, access and the JSON Schemas of its body and reply,
// which the API document of openapi.h is built from) plus one add() line and its handler
// (docs/architecture.md "Adding an endpoint").
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/message.h"

namespace ragform::server {

// A request's body as the router read it, once, for the route's handler: the JSON object (a body
// that is not one is refused before the handler), its top-level keys whose value is null removed
// (null is a key not given: base/json_keys.h), and the size of the text it was parsed from, which
// handlers size their reply reservations by. The handler may move values out of `json`; the router
// frees what is left (base/json_release.h) after the handler returns. Routes without a body
// schema get a null `json`.
struct RequestBody {
  nlohmann::json json;
  size_t bytes = 0;
  // A route whose path ends in a parameter ("/v1/models/{model}"): the rest of the request's path
  // there, as sent (percent-escapes are refused before the router: http.h). Empty otherwise.
  std::string path_parameter{};
};

enum class Access { Key, Open };  // Open: no API key needed (only /health)

// One route's declaration: where it answers, who may call it, and what the API document
// (openapi.h, GET /openapi.json, docs/openapi.json) says of it. The schemas are JSON Schema
// (OpenAPI 3.1) as JSON text; a string value "$NAME" in them is a limit of the serving process
// (openapi.h OpenApiLimits: "$max_tokens", "$max_doc_spans", ...), filled in when the document
// is built. Checked when the route is added: text that is not JSON is a programming error.
struct RouteSpec {
  std::string method{};  // "GET" or "POST"
  // A path and its aliases. A path may end in one parameter, "/v1/models/{model}": it matches
  // any request path that starts with the part before "{" and goes on (exact paths first), and
  // the rest reaches the handler as RequestBody::path_parameter.
  std::vector<std::string> paths{};
  std::string parameter{};  // what that parameter is, for the API document
  Access access = Access::Key;
  std::string summary{};      // one line
  std::string description{};  // what a client needs beyond the schemas (CommonMark)
  std::string request{};      // the body's schema ("" = no body)
  std::string response{};     // a 200 reply's schema
  bool streams = false;       // `stream: true` answers text/event-stream
};

class Router {
 public:
  using Handler = std::function<Response(const Request&, RequestBody&)>;
  // api_key: empty = no key required.
  explicit Router(std::string api_key = "");

  // Serves spec.method on each of spec.paths with `handler`. Throws Error when a path is already
  // routed (two APIs must not silently shadow each other) or a schema is not JSON. An empty
  // handler declares the route only (the API document of a server that is not started: `serve
  // --openapi`); a request to it is a 500.
  void add(const RouteSpec& spec, Handler handler);
  // The 404 message's parenthesis for `paths` when nothing routes them (why this server does not
  // answer them and which one would).
  void hint(const std::vector<std::string>& paths, const std::string& why);
  // Server-side paths (the model file, an index folder, a profile) that error messages sent to a
  // client show as their file name only. Empty entries are ignored.
  void hide(const std::vector<std::string>& server_paths);
  // The parenthesis of every other 404 ("" = none).
  void default_hint(const std::string& why) { default_hint_ = why; }
  // Called with every request that reaches a handler (authorised, routed, its method), before its
  // body is parsed; what it returns is kept until the handler has returned. The server reserves
  // the memory parsing the body takes (reply_budget.h, admit_body); it may throw, as a handler may.
  using Admission = std::function<std::shared_ptr<void>(const Request&)>;
  void admit(Admission a) { admit_ = std::move(a); }

  // Never throws.
  Response handle(const Request& req) const noexcept;
  // "GET /health", "POST /v1/completions", ... in the order added (tests and docs list them).
  std::vector<std::string> routes() const;
  // One row per routed path, in the order added: what the API document describes.
  struct Entry {
    std::string method, path;
    std::shared_ptr<const RouteSpec> spec;
  };
  std::vector<Entry> table() const;
  // Whether requests need the API key (the document then declares the bearer scheme).
  bool has_key() const { return !key_.empty(); }

 private:
  struct Route {
    std::string method, path;
    Handler handler;
    std::shared_ptr<const RouteSpec> spec;
    std::shared_ptr<const std::set<std::string>> fields;  // the request's (request_fields.h)
  };
  // The route of `path`: an exact path, else the longest parameter route it starts with (its
  // parameter's value then in *parameter).
  const Route* find(const std::string& path, std::string* parameter = nullptr) const;
  Response dispatch(const Request& req) const;
  std::string not_found(const std::string& path) const;
  std::string key_;
  std::vector<Route> routes_;
  std::vector<std::pair<std::string, std::string>> hints_;  // path -> why
  std::string default_hint_;
  std::vector<std::pair<std::string, std::string>> hidden_;  // server path -> what a client sees
  Admission admit_;
};

// A route's handler from an API's member function of the request body, or, with `self` null, no
// handler (the table only declared: `serve --openapi`). Every API's routes() binds its members so.
template <class Api>
Router::Handler body_handler(Api* self, Response (Api::*fn)(RequestBody&)) {
  if (!self) return nullptr;
  return [self, fn](const Request&, RequestBody& body) { return (self->*fn)(body); };
}
// The same for a member that reads nothing of the request (GET /health, /v1/models).
template <class Api>
Router::Handler plain_handler(Api* self, Response (Api::*fn)()) {
  if (!self) return nullptr;
  return [self, fn](const Request&, RequestBody&) { return (self->*fn)(); };
}

}  // namespace ragform::server

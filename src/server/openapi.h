// The OpenAPI 3.1 document of `ragform serve`'s API, built from the route table itself (router.h:
// each RouteSpec's paths, access, body and reply schemas), never kept by hand:
//   - GET /openapi.json on a running server: the document of its own table (the routes it
//     answers, the bearer scheme when it has an API key; the same key check as every route);
//   - `ragform serve --openapi` and docs/openapi.json: the tables of both kinds of server (a
//     reader's and an encoder's, each with --index), built without a model (declare_routes); an
//     operation both answer (/health, /v1/models) takes either reply.
// Every operation lists its error replies (the one error object, api_json.h) and the limits of the
// serving process ("$name" in a schema, OpenApiLimits). The document names no server-side path.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform::server {

class Router;

// The limits a schema names as "$name" (a whole string value, or a word in a description):
// the flags' values of the serving process (max_tokens, queue, max_body) and the code's constants
// (max_json_depth, max_doc_spans, ...). default_openapi_limits(): the flags' defaults.
using OpenApiLimits = std::map<std::string, long long>;
OpenApiLimits default_openapi_limits();

// The document of `tables`, each named by the kind of server it is ("reader", "encoder"): that
// name is each operation's tag. Throws std::logic_error for a "$name" with no limit.
nlohmann::ordered_json openapi_document(
    const std::vector<std::pair<std::string, const Router*>>& tables, const OpenApiLimits& limits);

// Adds GET /openapi.json to `router`, answering the document of that router's table (`kind` its
// tag). The router must outlive its use.
void add_openapi_route(Router& router, const std::string& kind, OpenApiLimits limits);

// The tables of both kinds of server, declared without handlers (a reader's and an encoder's,
// each with /v1/retrieve and /openapi.json): what `serve --openapi` describes.
std::vector<std::pair<std::string, std::unique_ptr<Router>>> declared_tables(
    const OpenApiLimits& limits);

// `ragform serve --openapi`: the document of declared_tables(), indented, ending in a newline
// (docs/openapi.json is this text for the default limits).
std::string serve_openapi_text(const OpenApiLimits& limits);

}  // namespace ragform::server

#include "server/openapi.h"

#include <cctype>
#include <set>
#include <stdexcept>

#include "base/json_file.h"
#include "pipelines/cnorm/cnorm.h"
#include "reader/reader.h"
#include "server/api.h"
#include "server/api_encoder.h"
#include "server/api_json.h"
#include "server/api_retrieve.h"
#include "server/http.h"
#include "server/request_fields.h"
#include "server/router.h"

namespace ragform::server {

using ojson = nlohmann::ordered_json;

OpenApiLimits default_openapi_limits() {
  return {
      // The flags of `ragform serve` (their defaults; a running server's own values).
      {"max_tokens", ApiOptions{}.max_tokens},
      {"queue", 64},
      {"max_body", (long long)HttpOptions{}.max_body},
      // The code's constants.
      {"max_json_depth", kMaxJsonDepth},
      {"max_doc_spans", (long long)cnorm::kMaxDocSpans},
      {"max_doc_span_rows", (long long)cnorm::kMaxDocSpanRows},
      {"max_doc_span_work", (long long)cnorm::kMaxDocSpanWork},
      {"max_attention_values", (long long)kMaxAttentionValues},
      {"max_response_bytes", (long long)kMaxResponseBytes},
      {"max_logprob_entries", (long long)kMaxLogprobEntries},
      {"max_encoder_inputs", EncoderApiOptions{}.max_inputs},
      {"max_embedding_values", (long long)kMaxEmbeddingValues},
      {"max_questions", RetrieveApiOptions{}.max_questions},
      {"max_retrieve_k", (long long)api_json::kMaxRetrieveK},
      {"max_stop_strings", (long long)reader::kMaxStopStrings},
      {"max_stop_bytes", (long long)reader::kMaxStopBytes},
  };
}

namespace {

long long limit(const OpenApiLimits& limits, const std::string& name) {
  auto it = limits.find(name);
  if (it == limits.end()) throw std::logic_error("API document: no limit named $" + name);
  return it->second;
}

// "$name" words of a description replaced by their values.
std::string fill_text(const std::string& s, const OpenApiLimits& limits) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '$') {
      out += s[i++];
      continue;
    }
    size_t e = i + 1;
    while (e < s.size() && (std::islower((unsigned char)s[e]) || s[e] == '_')) ++e;
    out += std::to_string(limit(limits, s.substr(i + 1, e - i - 1)));
    i = e;
  }
  return out;
}

// A schema's "$name" string values replaced by their limits, and the "$name" words of its
// descriptions (a field's "at most $max_stop_strings strings" was sent unfilled: issue 40, P7).
void fill_schema(ojson& j, const OpenApiLimits& limits) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s.size() > 1 && s[0] == '$') j = limit(limits, s.substr(1));
  } else if (j.is_object()) {
    for (auto& [key, v] : j.items()) {
      if (key == "description" && v.is_string())
        v = fill_text(v.get<std::string>(), limits);
      else
        fill_schema(v, limits);
    }
  } else if (j.is_array()) {
    for (auto& v : j) fill_schema(v, limits);
  }
}

// A request schema as the server reads a body (base/json_keys.h, request_fields.h): a key whose
// value is null is a key not given, at every level, so an optional property may be null and a
// key an object does not declare may be present with null (its additionalProperties false
// becomes {"type": "null"}). The api tier's schemathesis found requests the document called
// invalid answered 200 (pass 19: "questions": null beside "question").
void null_is_absent(ojson& s) {
  if (s.is_array()) {
    for (auto& x : s) null_is_absent(x);
    return;
  }
  if (!s.is_object()) return;
  for (auto& [key, v] : s.items())
    if (key != "properties" && key != "enum" && key != "const") null_is_absent(v);
  if (s.contains("additionalProperties") && s["additionalProperties"] == false)
    s["additionalProperties"] = ojson{{"type", "null"}};
  if (!s.contains("properties") || !s["properties"].is_object()) return;
  std::set<std::string> required;
  if (s.contains("required"))
    for (const auto& r : s["required"]) required.insert(r.get<std::string>());
  for (auto& [name, p] : s["properties"].items()) {
    null_is_absent(p);
    if (required.count(name) || !p.is_object()) continue;
    if (p.contains("enum")) {
      bool has_null = false;
      for (const auto& v : p["enum"]) has_null = has_null || v.is_null();
      if (!has_null) p["enum"].push_back(nullptr);
    }
    if (p.contains("type") && p["type"].is_string()) {
      if (p["type"] != "null") p["type"] = ojson::array({p["type"], "null"});
    } else if (p.contains("type") && p["type"].is_array()) {
      bool has_null = false;
      for (const auto& t : p["type"]) has_null = has_null || t == "null";
      if (!has_null) p["type"].push_back("null");
    } else if (!p.contains("enum")) {
      // (const, oneOf, anyOf, no type): null beside it, its description and default kept where
      // a reader of the document looks for them.
      ojson wrapped = {{"anyOf", ojson::array({p, ojson{{"type", "null"}}})}};
      for (const char* k : {"description", "default"})
        if (p.contains(k)) {
          wrapped[k] = p[k];
          wrapped["anyOf"][0].erase(k);
        }
      p = std::move(wrapped);
    }
  }
}

ojson schema(const std::string& text, const OpenApiLimits& limits) {
  if (text.empty()) return ojson::object();  // (a route declared without one: any JSON)
  ojson j = ojson::parse(text);
  fill_schema(j, limits);
  return j;
}

std::string operation_id(const std::string& method, const std::string& path) {
  std::string id;
  for (char c : method) id += char(std::tolower((unsigned char)c));
  for (char c : path) {
    const bool word = std::isalnum((unsigned char)c);
    if (!word && !id.empty() && id.back() == '_') continue;
    id += word ? c : '_';
  }
  while (!id.empty() && id.back() == '_') id.pop_back();
  return id;
}

ojson error_reply(const std::string& what) {
  return {
      {"description", what},
      {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}};
}

// The error replies an operation may give besides its 200.
ojson error_replies(const RouteSpec& spec) {
  ojson r = ojson::object();
  const bool post = spec.method == "POST";
  r["400"] = error_reply(
      post ? "a bad request, the message naming the field and the limit: invalid_json (also "
             "nesting deeper than $max_json_depth levels), invalid_type, invalid_value, "
             "missing_field, context_length_exceeded, max_tokens_exceeded, too_many_prompts, "
             "response_too_large, ...; or a malformed HTTP request"
           : "a malformed HTTP request (its line or headers)");
  if (spec.access == Access::Key)
    r["401"] = error_reply("invalid_api_key: 'Authorization: Bearer KEY' missing or wrong");
  if (post || !spec.parameter.empty())
    r["404"] = error_reply("model_not_found: another model id than the served one");
  r["408"] = error_reply("request_timeout: the request did not arrive in time");
  if (post) r["413"] = error_reply("request_too_large: a body over --max-body ($max_body bytes)");
  r["431"] = error_reply(
      "request headers too large: the request line and headers over 64 KiB or 256 lines");
  if (post)
    r["503"] = error_reply(
        "queue_full: --queue jobs already waiting; server_busy: no room in the request bodies' "
        "or the replies' memory budget within 60 s (docs/server.md); retry later");
  return r;
}

ojson operation(const Router::Entry& e, const std::string& kind, const OpenApiLimits& limits) {
  const RouteSpec& s = *e.spec;
  ojson op;
  op["operationId"] = operation_id(e.method, e.path);
  op["summary"] = fill_text(s.summary, limits);
  std::string desc = s.description;
  if (s.paths.size() > 1) {
    std::string also = e.path == s.paths[0] ? "Also at" : "An alias of " + s.paths[0] + ".";
    if (e.path == s.paths[0])
      for (size_t i = 1; i < s.paths.size(); ++i) also += " " + s.paths[i] + ".";
    desc += (desc.empty() ? "" : " ") + also;
  }
  if (!desc.empty()) op["description"] = fill_text(desc, limits);
  op["tags"] = ojson::array({kind});
  if (s.access == Access::Open) op["security"] = ojson::array();
  // A path's trailing parameter ("/v1/models/{model}", router.h RouteSpec::paths).
  if (const size_t open = e.path.find('{'); open != std::string::npos)
    op["parameters"] = ojson::array({{{"name", e.path.substr(open + 1, e.path.size() - open - 2)},
                                      {"in", "path"},
                                      {"required", true},
                                      {"description", fill_text(s.parameter, limits)},
                                      {"schema", {{"type", "string"}, {"minLength", 1}}}}});
  if (!s.request.empty()) {
    ojson body = schema(s.request, limits);
    // The router refuses a field the schema does not declare (request_fields.h): the document
    // says so, for generated clients and validators (pass 17).
    if (!declared_fields(s.request).empty()) body["additionalProperties"] = false;
    null_is_absent(body);
    op["requestBody"] = {{"required", true},
                         {"content", {{"application/json", {{"schema", std::move(body)}}}}}};
  }
  ojson content = {{"application/json", {{"schema", schema(s.response, limits)}}}};
  if (s.streams)
    content["text/event-stream"] = {
        {"schema",
         {{"type", "object"},
          {"required", {"data"}},
          {"properties", {{"data", {{"type", "string"}}}}},
          {"description",
           "with stream: true, server-sent events: each data is a chunk's JSON, the last one "
           "[DONE]; an error after the stream started is {\"error\": {...}}"}}}};
  ojson replies = {{"200", {{"description", "success"}, {"content", content}}}};
  ojson errors = error_replies(s);
  for (auto& [status, reply] : errors.items()) {
    reply["description"] = fill_text(reply["description"].get<std::string>(), limits);
    replies[status] = reply;
  }
  op["responses"] = replies;
  return op;
}

// `op` (from another kind of server) folded into `into`, the same method and path: either reply.
void merge(ojson& into, const ojson& op) {
  into["tags"].push_back(op["tags"][0]);
  auto& a = into["responses"]["200"]["content"]["application/json"]["schema"];
  const auto& b = op["responses"]["200"]["content"]["application/json"]["schema"];
  if (a != b) {
    const std::string tag = op["tags"][0].get<std::string>();
    a = {{"anyOf", {a, b}}};
    into["description"] = into.value("description", std::string()) +
                          (into.contains("description") ? " " : "") + "An " + tag +
                          " server: " + op["summary"].get<std::string>() + ".";
  }
}

}  // namespace

ojson openapi_document(const std::vector<std::pair<std::string, const Router*>>& tables,
                       const OpenApiLimits& limits) {
  bool key = false;
  ojson paths = ojson::object();
  for (const auto& [kind, router] : tables) {
    key = key || router->has_key();
    for (const Router::Entry& e : router->table()) {
      std::string method;
      for (char c : e.method) method += char(std::tolower((unsigned char)c));
      ojson op = operation(e, kind, limits);
      ojson& item = paths[e.path];
      if (item.contains(method))
        merge(item[method], op);
      else
        item[method] = std::move(op);
    }
  }
  ojson limit_values = ojson::object();
  for (const auto& [name, value] : limits) limit_values[name] = value;
  ojson doc;
  doc["openapi"] = "3.1.0";
  doc["info"] = {
      {"title", "ragform serve"},
      {"version", "1"},
      {"description",
       fill_text("The HTTP API of `ragform serve` (docs/server.md), built from the server's route "
                 "table. Every error is the object {\"error\": {\"message\", \"type\", \"code\"}} "
                 "(code a string). A request body is JSON of any content type, at most --max-body "
                 "($max_body bytes), nested at most $max_json_depth levels. With an API key every "
                 "route but GET /health needs 'Authorization: Bearer KEY', unknown paths too (401 "
                 "before 404); a known path with another method is 405 with an Allow header. "
                 "x-ragform-limits lists the limits of the serving process.",
                 limits)}};
  doc["x-ragform-limits"] = limit_values;
  doc["paths"] = paths;
  ojson components;
  components["schemas"]["Error"] = {
      {"type", "object"},
      {"required", {"error"}},
      {"properties",
       {{"error",
         {{"type", "object"},
          {"required", {"message", "type", "code"}},
          {"properties",
           {{"message",
             {{"type", "string"}, {"description", "at most 4 KiB; names no server path"}}},
            {"type", {{"enum", {"invalid_request_error", "server_error"}}}},
            {"code", {{"type", "string"}}}}}}}}}};
  if (key) {
    components["securitySchemes"]["bearer"] = {
        {"type", "http"},
        {"scheme", "bearer"},
        {"description", "the server's --api-key, --api-key-file or RAGFORM_API_KEY"}};
    doc["security"] = ojson::array({{{"bearer", ojson::array()}}});
  }
  doc["components"] = components;
  return doc;
}

namespace {
const RouteSpec kOpenApi{
    .method = "GET",
    .paths = {"/openapi.json"},
    .summary = "This document: the server's own routes (OpenAPI 3.1)",
    .description =
        "Needs the API key like every route but /health: without it a client learns "
        "nothing about which routes exist.",
    .response = R"({"type": "object", "required": ["openapi", "info", "paths"], "properties": {
      "openapi": {"type": "string"}, "info": {"type": "object"}, "paths": {"type": "object"}}})",
};
}  // namespace

void add_openapi_route(Router& router, const std::string& kind, OpenApiLimits limits) {
  const Router* table = &router;
  router.add(kOpenApi, [table, kind, limits](const Request&, RequestBody&) {
    Response r;
    r.body = openapi_document({{kind, table}}, limits)
                 .dump(-1, ' ', false, ojson::error_handler_t::replace);
    return r;
  });
}

std::vector<std::pair<std::string, std::unique_ptr<Router>>> declared_tables(
    const OpenApiLimits& limits) {
  std::vector<std::pair<std::string, std::unique_ptr<Router>>> out;
  // Any key: the document declares the bearer scheme a server with --api-key requires.
  auto reader = std::make_unique<Router>("KEY");
  Api::declare_routes(*reader);
  RetrieveApi::declare_routes(*reader);
  add_openapi_route(*reader, "reader", limits);
  auto encoder = std::make_unique<Router>("KEY");
  EncoderApi::declare_routes(*encoder);
  RetrieveApi::declare_routes(*encoder);
  add_openapi_route(*encoder, "encoder", limits);
  out.emplace_back("reader", std::move(reader));
  out.emplace_back("encoder", std::move(encoder));
  return out;
}

std::string serve_openapi_text(const OpenApiLimits& limits) {
  const auto tables = declared_tables(limits);
  std::vector<std::pair<std::string, const Router*>> views;
  for (const auto& [kind, router] : tables) views.emplace_back(kind, router.get());
  return openapi_document(views, limits).dump(2, ' ', false, ojson::error_handler_t::replace) +
         "\n";
}

}  // namespace ragform::server

// The route table of `ragform serve` (server/router.h) without a model or sockets: the API key
// is checked before every route but the open ones and before a 404; unknown paths get their hint;
// a known path with another method is 405 (HEAD counts as GET); a handler's exception becomes the
// error JSON; a path cannot be routed twice; the endpoint lists the hardening test and the fuzzer
// iterate are the tables' own.
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/options.h"
#include "pipelines/spotlight/spotlight.h"
#include "reader/generate_options.h"
#include "retrieval/retrieve_options.h"
#include "server/api_json.h"
#include "server/endpoints.h"
#include "server/openapi.h"
#include "server/router.h"
#include "support/test_support.h"

namespace {

using namespace ragform::server;
using nlohmann::json;

Response ok_text(const std::string& s) {
  Response r;
  r.body = s;
  return r;
}

Router table() {
  Router r("k3y");
  r.add({.method = "GET", .paths = {"/health"}, .access = Access::Open},
        [](const Request&, RequestBody&) { return ok_text("health"); });
  r.add({.method = "GET", .paths = {"/v1/models", "/models"}},
        [](const Request&, RequestBody&) { return ok_text("models"); });
  r.add({.method = "POST", .paths = {"/v1/echo"}},
        [](const Request& q, RequestBody&) { return ok_text(q.body); });
  r.add({.method = "POST", .paths = {"/v1/throws"}}, [](const Request&, RequestBody&) -> Response {
    throw ragform::UsageError("x", "bad request");
  });
  r.hint({"/v1/embeddings"}, "serve an encoder for this");
  return r;
}

std::string code(const Response& r) { return json::parse(r.body)["error"]["code"]; }
std::string message(const Response& r) { return json::parse(r.body)["error"]["message"]; }

TEST(Router, KeyGuardsEveryRouteButTheOpenOnes) {
  const Router r = table();
  EXPECT_EQ(r.handle({"GET", "/health", "", ""}).body, "health");
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/models"}, {"GET", "/models"}, {"POST", "/v1/echo"}, {"POST", "/nowhere"}}) {
    const Response no_key = r.handle({method, path, "", "{}"});
    EXPECT_EQ(no_key.status, 401) << path;
    EXPECT_EQ(code(no_key), "invalid_api_key") << path;
    EXPECT_EQ(r.handle({method, path, "Bearer k3yy", "{}"}).status, 401) << path;
    EXPECT_EQ(r.handle({method, path, "Token k3y", "{}"}).status, 401) << path;
    EXPECT_NE(r.handle({method, path, "bEaReR k3y", "{}"}).status, 401) << path;
  }
  EXPECT_EQ(r.handle({"POST", "/v1/echo", "Bearer k3y", "body"}).body, "body");
}

TEST(Router, UnknownPathsWrongMethodsAndThrowingHandlers) {
  const Router r = table();
  const std::string key = "Bearer k3y";
  Response x = r.handle({"POST", "/v1/embeddings", key, ""});
  EXPECT_EQ(x.status, 404);
  EXPECT_EQ(message(x), "no endpoint /v1/embeddings (serve an encoder for this)");
  x = r.handle({"GET", "/v1/nothing", key, ""});
  EXPECT_EQ(message(x), "no endpoint /v1/nothing");
  EXPECT_EQ(code(x), "not_found");
  x = r.handle({"POST", "/v1/models", key, ""});
  EXPECT_EQ(x.status, 405);
  EXPECT_EQ(message(x), "use GET");
  EXPECT_EQ(r.handle({"DELETE", "/v1/echo", key, ""}).status, 405);
  EXPECT_EQ(r.handle({"POST", "/health", "", ""}).status, 405);
  EXPECT_EQ(r.handle({"HEAD", "/health", "", ""}).status, 200);
  x = r.handle({"POST", "/v1/throws", key, ""});
  EXPECT_EQ(x.status, 400);
  EXPECT_EQ(code(x), "invalid_request");

  Router open;  // no key: everything reachable
  open.add({.method = "GET", .paths = {"/a"}},
           [](const Request&, RequestBody&) { return ok_text("a"); });
  EXPECT_EQ(open.handle({"GET", "/a", "", ""}).body, "a");
  EXPECT_THROW(open.add({.method = "POST", .paths = {"/a"}},
                        [](const Request&, RequestBody&) { return ok_text("again"); }),
               ragform::Error);
  ASSERT_EQ(table().routes().size(), 5u);
  EXPECT_EQ(table().routes()[0], "GET /health");
}

// A path may end in a parameter ("/v1/models/{model}", the OpenAI SDK's models.retrieve): it
// takes any non-empty rest of a path, exact paths win, the longest prefix wins between two, and
// the key and the method are checked as for every route.
TEST(Router, APathParameterTakesTheRestOfThePath) {
  Router r("k3y");
  auto echo = [](const Request&, RequestBody& b) { return ok_text("[" + b.path_parameter + "]"); };
  r.add({.method = "GET", .paths = {"/v1/models", "/models"}},
        [](const Request&, RequestBody&) { return ok_text("list"); });
  r.add({.method = "GET", .paths = {"/v1/models/{model}", "/models/{model}"}}, echo);
  r.add({.method = "GET", .paths = {"/v1/models/special"}},
        [](const Request&, RequestBody&) { return ok_text("special"); });
  r.add({.method = "GET", .paths = {"/v1/{thing}"}}, echo);
  const std::string key = "Bearer k3y";
  auto get = [&](const std::string& path) { return r.handle({"GET", path, key, ""}); };
  EXPECT_EQ(get("/v1/models").body, "list");
  EXPECT_EQ(get("/v1/models/gemma-3").body, "[gemma-3]");
  EXPECT_EQ(get("/models/gemma-3").body, "[gemma-3]");
  EXPECT_EQ(get("/v1/models/org/name").body, "[org/name]");
  EXPECT_EQ(get("/v1/models/special").body, "special");  // the exact path first
  EXPECT_EQ(get("/v1/other").body, "[other]");
  EXPECT_EQ(get("/v1/models/").body, "[models/]");  // "/v1/models/" is no model: /v1/{thing}
  EXPECT_EQ(get("/models/").status, 404);           // nothing after the prefix
  EXPECT_EQ(r.handle({"GET", "/v1/models/x", "", ""}).status, 401);
  EXPECT_EQ(r.handle({"POST", "/v1/models/x", key, ""}).status, 405);
  EXPECT_THROW(r.add({.method = "GET", .paths = {"/models/{model}"}}, echo), ragform::Error);
}

// RFC 9110: a 405 names what the path takes (schemathesis' allow_header_conformance).
TEST(Router, WrongMethodNamesTheAllowedOnes) {
  const Router r = table();
  auto allow = [&](const std::string& method, const std::string& path) {
    const Response x = r.handle({method, path, "Bearer k3y", ""});
    EXPECT_EQ(x.status, 405) << method << " " << path;
    for (const auto& [name, value] : x.headers)
      if (name == "Allow") return value;
    return std::string("(none)");
  };
  EXPECT_EQ(allow("POST", "/health"), "GET, HEAD");
  EXPECT_EQ(allow("TRACE", "/v1/models"), "GET, HEAD");
  EXPECT_EQ(allow("GET", "/v1/echo"), "POST");
  EXPECT_EQ(allow("QUERY", "/v1/echo"), "POST");
}

// Issue 40, P3: a body field the route's request schema does not declare is a 400
// unknown_field naming it and the route, read before the handler runs (n_predict, grammar, ...
// were answered 200 and ignored). The router parses a body once for its handler: bad JSON and a
// body that is not an object are its 400 invalid_json, and a key whose value is null is a key not
// given, declared or not (pass 18: one rule for null). A schema that lets other properties
// through checks no key; a route without a body schema gets its body as sent.
TEST(Router, FieldsTheSchemaDoesNotDeclareAreRefused) {
  Router r;
  int reached = 0;
  const auto echo = [&](const Request& q, RequestBody& b) {
    ++reached;
    EXPECT_EQ(b.bytes, q.body.size());
    return ok_text(b.json.is_null() ? q.body : b.json.dump());
  };
  r.add({.method = "POST",
         .paths = {"/v1/strict"},
         .request = R"({"type": "object", "properties": {"a": {}, "b": {"type": "object"}}})"},
        echo);
  r.add({.method = "POST",
         .paths = {"/v1/open"},
         .request = R"({"type": "object", "additionalProperties": true, "properties": {"a": {}}})"},
        echo);
  r.add({.method = "POST", .paths = {"/v1/any"}}, echo);
  for (const std::string body :
       {R"({"a":1,"b":{"nested":{"c":2}}})", "{}", R"({"a":[{"zz":1}]})", R"({"b":{"x":null}})"}) {
    EXPECT_EQ(r.handle({"POST", "/v1/strict", "", body}).body, body);
  }
  EXPECT_EQ(reached, 4);
  // Null top-level values are absent, for a declared key and for any other.
  EXPECT_EQ(r.handle({"POST", "/v1/strict", "", R"({"a": null, "n_predict": null, "b": {}})"}).body,
            R"({"b":{}})");
  EXPECT_EQ(reached, 5);
  for (const std::string body :
       {"[1, 2]", R"("text")", "{not json", R"({"n_predict": 5, "a": [}")"}) {
    const Response x = r.handle({"POST", "/v1/strict", "", body});
    EXPECT_EQ(x.status, 400) << body;
    EXPECT_EQ(code(x), "invalid_json") << body;
  }
  EXPECT_EQ(reached, 5);
  for (const std::string body : {R"({"a": 1, "n_predict": 5})", R"({"n_predict": 5, "a": []})",
                                 R"({"b": {}, "n_predict": 0})"}) {
    const Response x = r.handle({"POST", "/v1/strict", "", body});
    EXPECT_EQ(x.status, 400) << body;
    EXPECT_EQ(code(x), "unknown_field") << body;
    EXPECT_NE(message(x).find("'n_predict' is not a field of POST /v1/strict"), std::string::npos)
        << message(x);
    EXPECT_NE(message(x).find("reads a, b"), std::string::npos) << message(x);
  }
  EXPECT_EQ(reached, 5);
  // The empty key is a key like any other (pass 16: it was taken for "none found").
  for (const std::string body : {R"({"": 1})", R"({"a": 1, "": {"b": 2}})"}) {
    const Response x = r.handle({"POST", "/v1/strict", "", body});
    EXPECT_EQ(code(x), "unknown_field") << body;
    EXPECT_NE(message(x).find("'' is not a field"), std::string::npos) << message(x);
  }
  EXPECT_EQ(reached, 5);
  // A client's key is quoted as an excerpt, control bytes escaped.
  const Response long_key =
      r.handle({"POST", "/v1/strict", "", "{\"\\u001b" + std::string(5000, 'k') + "\": 1}"});
  EXPECT_EQ(code(long_key), "unknown_field");
  EXPECT_LT(message(long_key).size(), 600u);
  EXPECT_EQ(message(long_key).find('\x1b'), std::string::npos);
  for (const char* path : {"/v1/open", "/v1/any"})
    EXPECT_EQ(r.handle({"POST", path, "", R"({"n_predict": 5})"}).status, 200) << path;
  EXPECT_EQ(r.handle({"POST", "/v1/any", "", "{not json"}).body, "{not json");
  // A multipart body (taken apart into form fields by the HTTP library, so `body` is empty) is
  // named as such, not "unexpected end of input" (pass 16).
  Request form{"POST", "/v1/strict", "", ""};
  form.multipart = true;
  const Response m = r.handle(form);
  EXPECT_EQ(code(m), "invalid_json");
  EXPECT_NE(message(m).find("multipart/form-data"), std::string::npos) << message(m);
}

// The API document (openapi.h) is built from the tables themselves: every route of every kind of
// server is in it, with its schemas, its error replies and its access; no "$limit" is left.
TEST(OpenApi, EveryRouteOfEveryTableIsDescribed) {
  const OpenApiLimits limits = default_openapi_limits();
  const json doc = json::parse(serve_openapi_text(limits));
  EXPECT_EQ(doc["openapi"], "3.1.0");
  EXPECT_EQ(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
  const json& error = doc["components"]["schemas"]["Error"]["properties"]["error"];
  EXPECT_EQ(error["required"], json({"message", "type", "code"}));
  size_t n = 0;
  for (const auto& [kind, router] : declared_tables(limits)) {
    EXPECT_TRUE(router->has_key());
    for (const Router::Entry& e : router->table()) {
      ++n;
      std::string method = e.method == "GET" ? "get" : "post";
      const std::string what = kind + ": " + e.method + " " + e.path;
      ASSERT_TRUE(doc["paths"].contains(e.path)) << what;
      ASSERT_TRUE(doc["paths"][e.path].contains(method)) << what;
      const json& op = doc["paths"][e.path][method];
      EXPECT_FALSE(op["summary"].get<std::string>().empty()) << what;
      EXPECT_NE(std::find(op["tags"].begin(), op["tags"].end(), kind), op["tags"].end()) << what;
      EXPECT_TRUE(op["responses"]["200"]["content"]["application/json"].contains("schema")) << what;
      EXPECT_EQ(op.contains("requestBody"), e.method == "POST") << what;
      if (e.method == "POST") {
        const json& body = op["requestBody"]["content"]["application/json"]["schema"];
        EXPECT_EQ(body["type"], "object") << what;
        // The router refuses undeclared fields, and the document says so (pass 17); a key whose
        // value is null is a key not given (pass 19: the api tier found the difference).
        EXPECT_EQ(body["additionalProperties"], json({{"type", "null"}})) << what;
        for (const char* status : {"400", "404", "413", "503"})
          EXPECT_TRUE(op["responses"].contains(status)) << what << " " << status;
      }
      const bool open = e.spec->access == Access::Open;
      EXPECT_EQ(op["responses"].contains("401"), !open) << what;
      EXPECT_EQ(op.contains("security") && op["security"].empty(), open) << what;
      EXPECT_EQ(op["responses"]["400"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Error")
          << what;
    }
  }
  EXPECT_GE(n, 20u);
  // The limits are the code's: doc_spans at most kMaxDocSpans, max_tokens the flag's default.
  const json& att = doc["paths"]["/v1/attention"]["post"]["requestBody"]["content"]
                       ["application/json"]["schema"]["properties"];
  EXPECT_EQ(att["doc_spans"]["maxItems"], limits.at("max_doc_spans"));
  EXPECT_EQ(doc["x-ragform-limits"]["max_json_depth"], 128);
  const std::string text = doc.dump();
  EXPECT_EQ(text.find("\": \"$"), std::string::npos);  // every "$limit" filled in
  EXPECT_EQ(text.find("\":\"$"), std::string::npos);
  // ... and every "$limit" word of a description (issue 40, P7: the stop field said "at most
  // $max_stop_strings strings"): the only '$' left are the "$ref" key and a pattern's end.
  for (size_t at = text.find('$'); at != std::string::npos; at = text.find('$', at + 1))
    EXPECT_TRUE(text.compare(at, 5, "$ref\"") == 0 || text.compare(at, 2, "$\"") == 0)
        << text.substr(at, 40);
  EXPECT_NE(text.find("at most " + std::to_string(limits.at("max_stop_strings")) + " strings"),
            std::string::npos);
  EXPECT_EQ(text.find(RAGFORM_SOURCE_DIR), std::string::npos);  // no server-side path
}

// A request field a handler reads from an option declaration (api_json.h read_declared) is
// described by that declaration: in the API document, the type, range, default and help of
// /v1/rag/spotlight's K, k, lambda, order and special_tokens and of the completions' top_k and
// top_p are the declared ones (option_infos), not a copy; the schema's own keywords stay.
TEST(OpenApi, DeclaredFieldsAreTheDeclaration) {
  const json doc = json::parse(serve_openapi_text(default_openapi_limits()));
  auto props = [&](const char* path) {
    return doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
              ["properties"];
  };
  auto check = [](const json& p, const std::vector<ragform::OptionInfo>& infos,
                  std::vector<std::string> keys) {
    size_t n = 0;
    for (const ragform::OptionInfo& o : infos) {
      const ragform::OptionDecl& d = o.decl;
      if (!keys.empty() && std::find(keys.begin(), keys.end(), d.key) == keys.end()) continue;
      ++n;
      SCOPED_TRACE(d.key);
      ASSERT_TRUE(p.contains(d.key));
      const json& f = p[d.key];
      EXPECT_EQ(f["description"].get<std::string>().rfind(d.key_help(), 0), 0u);
      EXPECT_EQ(f.contains("default"), !o.is_optional);
      const bool number =
          d.kind == ragform::OptionKind::Count || d.kind == ragform::OptionKind::Real;
      if (number) {
        EXPECT_EQ(f["minimum"].get<double>(), d.lo);
        EXPECT_EQ(f["maximum"].get<double>(), std::min(d.hi, 2147483647.0));
        if (!o.is_optional) {
          EXPECT_EQ(ragform::option_number_text(f["default"].get<double>()), o.default_text);
        }
      } else if (d.kind == ragform::OptionKind::Switch) {
        EXPECT_EQ(f["type"], json({"boolean", "null"}));
        EXPECT_EQ(f["default"].get<bool>() ? "true" : "false", o.default_text);
      } else {
        EXPECT_EQ(f["type"], json({"string", "null"}));
        EXPECT_EQ(f["default"], o.default_text);
      }
    }
    EXPECT_EQ(n, keys.empty() ? infos.size() : keys.size());
  };
  using namespace ragform;
  check(props("/v1/rag/spotlight"), option_infos<spotlight::ScoreOptions>(), {});
  check(props("/v1/rag/spotlight"), option_infos<spotlight::PromptOptions>(), {});
  for (const char* path : {"/v1/completions", "/v1/chat/completions"})
    check(props(path), option_infos<reader::GenerateRequest>(), {"top_k", "top_p"});
  // /v1/retrieve: retrieve's k and mode, k within the server's own limit (a "$limit").
  const json retrieve = props("/v1/retrieve");
  const retrieval::RetrieveRequest declared;
  EXPECT_EQ(retrieve["k"]["default"], declared.k);
  EXPECT_EQ(retrieve["k"]["minimum"], option_infos<retrieval::RetrieveRequest>()[0].decl.lo);
  EXPECT_EQ(retrieve["k"]["maximum"], server::api_json::kMaxRetrieveK);
  EXPECT_LE(server::api_json::kMaxRetrieveK, option_infos<retrieval::RetrieveRequest>()[0].decl.hi);
  EXPECT_EQ(retrieve["mode"]["default"], declared.mode);
  // The schema's own words beside the declaration's: the nucleus above 0, order's choices.
  EXPECT_EQ(props("/v1/completions")["top_p"]["exclusiveMinimum"], 0);
  EXPECT_EQ(props("/v1/rag/spotlight")["order"]["enum"], json({"doc", "score", nullptr}));
  // A switch the CLI turns off (--no-special-tokens) is described by what its true means (pass
  // 16: the field's description was the flag's "leave out the <Rel> and category tokens").
  EXPECT_EQ(props("/v1/rag/spotlight")["special_tokens"]["description"].get<std::string>().rfind(
                "include the <Rel> and category tokens", 0),
            0u);
}

// GET /openapi.json on a table: behind the key, the document of that table (itself included),
// the bearer scheme only with a key; a declared route without a handler is a 500, not a crash.
TEST(OpenApi, ServedDocumentDescribesItsOwnTable) {
  Router r = table();
  add_openapi_route(r, "test", default_openapi_limits());
  EXPECT_EQ(r.handle({"GET", "/openapi.json", "", ""}).status, 401);
  const Response x = r.handle({"GET", "/openapi.json", "Bearer k3y", ""});
  ASSERT_EQ(x.status, 200);
  const json doc = json::parse(x.body);
  size_t n = 0;
  for (const auto& e : r.table()) {
    ++n;
    EXPECT_TRUE(doc["paths"].contains(e.path)) << e.path;
  }
  EXPECT_EQ(doc["paths"].size(), n);
  EXPECT_TRUE(doc.contains("security"));
  Router open;
  add_openapi_route(open, "test", default_openapi_limits());
  open.add({.method = "GET", .paths = {"/declared"}}, nullptr);
  EXPECT_FALSE(
      json::parse(open.handle({"GET", "/openapi.json", "", ""}).body).contains("security"));
  EXPECT_EQ(open.handle({"GET", "/declared", "", ""}).status, 500);
  EXPECT_THROW(open.add({.method = "POST", .paths = {"/x"}, .request = "{not json"}, nullptr),
               ragform::Error);
}

// Issue 41: the hardening test (serve_hardening_fixture_test.cpp) and the request fuzzer
// (fuzz/fuzz_server_api.cpp) iterate the route tables through server/endpoints.h, not lists of
// their own: a dummy route declared on the tables, as a new endpoint's RouteSpec would be, is in
// the lists of both with no edit to them, once, with its method and access.
TEST(Endpoints, ADeclaredRouteIsInTheHardeningAndFuzzerLists) {
  const Endpoint dummy{"POST", "/v1/test/dummy", Access::Key};
  const Endpoint dummy_alias{"POST", "/test/dummy", Access::Key};
  const RouteDeclarer add_dummy = [](Router& r) {
    r.add({.method = "POST", .paths = {"/v1/test/dummy", "/test/dummy"}}, nullptr);
  };
  auto count = [](const std::vector<Endpoint>& v, const Endpoint& e) {
    return std::count(v.begin(), v.end(), e);
  };
  for (const char* kind : {"reader", "encoder"}) {
    SCOPED_TRACE(kind);
    const std::vector<Endpoint> plain = served_endpoints(kind);
    const std::vector<Endpoint> with = served_endpoints(kind, add_dummy);
    EXPECT_EQ(count(plain, dummy), 0);
    EXPECT_EQ(count(with, dummy), 1);
    EXPECT_EQ(count(with, dummy_alias), 1);
    EXPECT_EQ(with.size(), plain.size() + 2);
    // Every server answers /health without the key, and with --index /v1/retrieve behind it.
    EXPECT_EQ(count(plain, {"GET", "/health", Access::Open}), 1);
    EXPECT_EQ(count(plain, {"POST", "/v1/retrieve", Access::Key}), 1);
    EXPECT_EQ(count(plain, {"GET", "/openapi.json", Access::Key}), 1);
  }
  EXPECT_THROW(served_endpoints("nothing"), std::invalid_argument);
  // The fuzzer's targets: every route Api::handle answers, /v1/rag/present among them (the list
  // the fuzzer kept by hand had missed it), and the dummy when declared.
  const std::vector<Endpoint> api = api_endpoints();
  for (const char* path : {"/v1/completions", "/v1/chat/completions", "/v1/score", "/v1/attention",
                           "/v1/rag/normalize", "/v1/rag/spotlight", "/v1/rag/present"})
    EXPECT_EQ(count(api, {"POST", path, Access::Key}), 1) << path;
  EXPECT_EQ(count(api, dummy), 0);
  EXPECT_EQ(count(api_endpoints(add_dummy), dummy), 1);
  // The fuzz seeds (fuzz/corpus/fuzz_server_api) pick an endpoint by its index in this order:
  // the table adds routes at its end, so their indices keep meaning the same endpoint.
  ASSERT_GE(api.size(), 10u);
  EXPECT_EQ(api[3].path, "/v1/completions");
  EXPECT_EQ(api[9].path, "/v1/rag/present");
}

}  // namespace

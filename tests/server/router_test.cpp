// The route table of `ragform serve` (server/router.h) without a model or sockets: the API key
// is checked before every route but the open ones and before a 404; unknown paths get their hint;
// a known path with another method is 405 (HEAD counts as GET); a handler's exception becomes the
// error JSON; a path cannot be routed twice.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "server/router.h"

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
  r.add(
      "GET", {"/health"}, [](const Request&) { return ok_text("health"); }, Access::Open);
  r.add("GET", {"/v1/models", "/models"}, [](const Request&) { return ok_text("models"); });
  r.add("POST", {"/v1/echo"}, [](const Request& q) { return ok_text(q.body); });
  r.add("POST", {"/v1/throws"},
        [](const Request&) -> Response { throw ragform::UsageError("x", "bad request"); });
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
  open.add("GET", {"/a"}, [](const Request&) { return ok_text("a"); });
  EXPECT_EQ(open.handle({"GET", "/a", "", ""}).body, "a");
  EXPECT_THROW(open.add("POST", {"/a"}, [](const Request&) { return ok_text("again"); }),
               ragform::Error);
  ASSERT_EQ(table().routes().size(), 5u);
  EXPECT_EQ(table().routes()[0], "GET /health");
}

}  // namespace

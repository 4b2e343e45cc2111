// Issue 40, security 1, 2 and 5, through a real `ragform serve` on loopback: a body nested ~75,000
// levels deep (150 KB) in /v1/attention's doc_spans or bias.curve[i], or /v1/rag/present's
// profile.searched[i], killed the server (SIGSEGV in a recursive dump inside an error message):
// now a 400 naming the nesting limit, and the server answers the next request. doc_spans cannot
// amplify one request into gigabytes (100,000 spans, or spans x rows x positions above the
// documented limits, are a 400 naming the limit, answered at once), nor can layers x positions x
// heads. Error replies quote a bounded excerpt of the body (a 900 KB bad body gave a 900 KB 400)
// and never the server's own paths. Each request is bounded in time; the server's memory is read
// after the amplifying ones.
#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

httplib::Result post(int port, const std::string& path, const std::string& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  return c.Post(path.c_str(), body, "application/json");
}

std::string deep(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

// The reply within `seconds`.
httplib::Result timed_post(int port, const std::string& path, const std::string& body,
                           double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = post(port, path, body);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, seconds) << path << " took " << s << " s";
  return r;
}

class ServeSecurity : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = shared_path("fixtures/models/stories260K.gguf");
    if (!fs::exists(model_)) GTEST_SKIP() << "missing " << model_;
    srv_ = std::make_unique<ServeProcess>(
        std::vector<std::string>{"-m", model_.string(), "--ctx", "512"});
  }
  fs::path model_;
  std::unique_ptr<ServeProcess> srv_;
};

TEST_F(ServeSecurity, DeeplyNestedValuesAreA400NotACrash) {
  const int port = srv_->port();
  const std::string bomb = deep(75000);
  const std::string prompt = R"("prompt": "Once upon a time there was a girl")";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/attention", "{" + prompt + R"(, "doc_spans": [)" + bomb + "]}"},
      {"/v1/attention",
       "{" + prompt + R"(, "doc_spans": [[0, 4]], "bias": {"curve": [)" + bomb + "]}}"},
      {"/v1/rag/present", R"({"profile": {"format": "ragform-tune-profile", "schema_version": 1,)"
                          R"( "searched": [)" +
                              bomb + R"(]}, "record": {"question": "q"}})"},
      {"/v1/completions", "{" + prompt + R"(, "stop": )" + bomb + "}"},
  };
  for (const auto& [path, body] : cases) {
    SCOPED_TRACE(path);
    auto r = timed_post(port, path, body, 10);
    const std::string msg = expect_api_error(r, 400);
    EXPECT_NE(msg.find("nesting deeper than 128 levels"), std::string::npos) << msg;
    EXPECT_LT(r ? r->body.size() : 0, 2000u);
    expect_alive(*srv_);
  }
}

TEST_F(ServeSecurity, DocSpansCannotAmplifyARequest) {
  const int port = srv_->port();
  const long rss0 = srv_->rss_kib();
  // 100,000 spans (the issue's 774 KB request): refused before any work.
  std::string spans;
  for (int i = 0; i < 100000; ++i) spans += (i ? ",[0," : "[0,") + std::to_string(1 + i % 30) + "]";
  auto r = timed_post(port, "/v1/attention",
                      R"({"prompt": "Once upon a time there was a girl", "layers": [0,1,2,3,4],)"
                      R"( "query_positions": [-1,-2,-3,-4], "doc_spans": [)" +
                          spans + "]}",
                      10);
  std::string msg = expect_api_error(r, 400);
  EXPECT_NE(msg.find("more than 1024 document spans"), std::string::npos) << msg;

  // Within the span limit, spans x rows above 65,536: named, answered at once.
  spans.clear();
  for (int i = 0; i < 1000; ++i) spans += (i ? ",[0," : "[0,") + std::to_string(1 + i % 30) + "]";
  std::string positions;
  for (int i = 0; i < 100; ++i) positions += (i ? ",-" : "-") + std::to_string(1 + i % 5);
  r = timed_post(port, "/v1/attention",
                 R"({"prompt": "Once upon a time there was a girl", "layers": [0,1,2,3,4],)"
                 R"( "query_positions": [)" +
                     positions + R"(], "doc_spans": [)" + spans + "]}",
                 10);
  msg = expect_api_error(r, 400);
  EXPECT_NE(msg.find("exceed the limit of 65536"), std::string::npos) << msg;
  EXPECT_NE(msg.find("doc_spans"), std::string::npos) << msg;

  // Without doc_spans: layers x positions x heads x tokens above the reply's limit, however the
  // lists repeat themselves.
  std::string layers;
  for (int i = 0; i < 20000; ++i) layers += (i ? ",0" : "0");
  r = timed_post(port, "/v1/attention",
                 R"({"prompt": "Once upon a time there was a girl", "layers": [)" + layers +
                     R"(], "query_positions": [)" + positions + "]}",
                 10);
  msg = expect_api_error(r, 400);
  EXPECT_NE(msg.find("2097152 attention weights"), std::string::npos) << msg;
  if (r) {
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "response_too_large");
  }

  expect_alive(*srv_);
  // Nothing above was built: the server grew by far less than the old replies' gigabytes.
  const long rss1 = srv_->rss_kib();
  if (rss0 > 0 && rss1 > 0) {
    EXPECT_LT(rss1 - rss0, 200 * 1024) << rss0 << " -> " << rss1;
  }

  // A request within the limits still answers with its documents.
  r = post(port, "/v1/attention",
           R"({"prompt": "Once upon a time there was a girl", "doc_spans": [[0, 4], [5, 9]]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["rows"][0]["documents"].size(), 2u);
}

TEST_F(ServeSecurity, ErrorRepliesQuoteABoundedExcerptAndNoServerPath) {
  const int port = srv_->port();
  // A 900 KB body that is not JSON at its end: the reply is short.
  const std::string big = "{\"prompt\": \"" + std::string(900 * 1024, 'x') + "\" oops}";
  auto r = timed_post(port, "/v1/completions", big, 10);
  std::string msg = expect_api_error(r, 400);
  EXPECT_NE(msg.find("malformed JSON body"), std::string::npos) << msg.substr(0, 500);
  EXPECT_LT(r ? r->body.size() : 0, 5000u);

  // A field quoting a long value.
  r = post(port, "/v1/completions",
           R"({"prompt": "hi", "max_tokens": [")" + std::string(500000, 'y') + R"("]})");
  msg = expect_api_error(r, 400);
  EXPECT_LT(r ? r->body.size() : 0, 5000u);

  // No reply names where the server keeps its model, whatever the request got wrong.
  const std::string path = model_.string();
  const std::string abs = fs::absolute(model_).string();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"/v1/completions", R"({"prompt": "hi", "model": "x"})"},
      {"/v1/attention", R"({"prompt": "hi", "layers": [99]})"},
      {"/v1/score", R"({"prompt": "hi", "steer": {"rule": "rescale:2", "spans": [[0, 99]]}})"},
      {"/v1/completions", R"({"prompt": ")" + std::string(4000, 'a') + R"(", "max_tokens": 1})"},
      {"/v1/rag/present", R"({"profile": {"format": "ragform-tune-profile", "schema_version": 1,)"
                          R"( "model_sha256": "00", "presentation": {}, "task": "qa"},)"
                          R"( "record": {"question": "q", "ctxs": [{"text": "t"}]}})"},
  };
  for (const auto& [p, body] : bad) {
    r = post(port, p, body);
    ASSERT_TRUE(r) << p;
    EXPECT_GE(r->status, 400) << p << " " << r->body;
    EXPECT_EQ(r->body.find(abs), std::string::npos) << p << " " << r->body;
    EXPECT_EQ(r->body.find(path), std::string::npos) << p << " " << r->body;
  }
  expect_alive(*srv_);
}

// The encoder's refusal names its model file ("classify: PATH: the model has no classification
// head"): over HTTP, the file name only.
TEST(ServeSecurityEncoder, ErrorRepliesNameTheModelByItsFileNameOnly) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-bert.gguf");
  ServeProcess srv({"-m", model.string()});
  auto r = post(srv.port(), "/v1/rerank", R"({"query": "a", "documents": ["b"]})");
  const std::string msg = expect_api_error(r, 400);
  EXPECT_NE(msg.find("classify: tiny-bert.gguf: the model has no classification head"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find(model.parent_path().string()), std::string::npos) << msg;
  EXPECT_EQ(msg.find(fs::absolute(model).parent_path().string()), std::string::npos) << msg;
}

}  // namespace
}  // namespace ragform::testing

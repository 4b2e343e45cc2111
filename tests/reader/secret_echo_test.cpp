// A remote reader's and encoder's secrets stay out of what they print, raise and store (issue
// 40): a server that quotes the request's "Authorization: Bearer KEY" in its error ("bad key:
// Bearer KEY") gets the key replaced by "***" (reader/http_json.h); a base URL with a query string
// or a fragment ("?api_key=...") is refused without quoting it; a URL's userinfo holding a '/' is
// redacted whole (base/excerpt.h userinfo_end).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "base/error.h"
#include "base/excerpt.h"
#include "echo_server.h"
#include "reader/http_json.h"
#include "reader/openai_reader.h"
#include "reader/remote_encoder.h"

namespace ragform::reader {
namespace {

const std::string kKey = "sk-TOPSECRET-123";

std::string failure(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

using testing::EchoServer;

// No part of the key: neither whole nor its first bytes (an excerpt cut through it).
void expect_no_key(const std::string& text) {
  EXPECT_EQ(text.find(kKey.substr(0, 8)), std::string::npos) << text;
}

std::string error_message(const std::string& m) {
  return nlohmann::json{{"error", {{"message", m}, {"type", "invalid_request_error"}}}}.dump();
}

TEST(SecretEcho, AReadersKeyEchoedByTheServerIsNotRaised) {
  const std::vector<std::function<std::string(const std::string&)>> quotes = {
      // The issue's server: a JSON error message quoting the header.
      [](const std::string& h) { return error_message("bad key: " + h); },
      // The key across the 200-byte excerpt of a message: its first bytes were printed.
      [](const std::string& h) { return error_message(std::string(190, '.') + " " + h + " !"); },
      // {"error": "..."} and a body that is not JSON.
      [](const std::string& h) {
        return nlohmann::json{{"error", "no: " + h}}.dump();
      },
      [](const std::string& h) { return "unauthorized: " + h; },
      // The key alone, JSON-escaped in the body ('/' as "\/").
      [](const std::string&) {
        return R"({"error":{"message":"key sk-TOPSECRET-123\/ refused"}})";
      },
  };
  for (int status : {401, 400, 503}) {
    for (const auto& quote : quotes) {
      EchoServer srv(status, quote);
      OpenAIOptions oo;
      oo.base_url = srv.url();
      oo.model = "m";
      oo.api_key = kKey;
      oo.retries = 0;
      const std::string e = failure([&] {
        OpenAIReader r(oo);
        r.generate("Question: q\nAnswer:", GenerateParams{});
      });
      EXPECT_NE(e.find("HTTP " + std::to_string(status)), std::string::npos) << e;
      expect_no_key(e);

      RemoteEncoderOptions eo;
      eo.base_url = srv.url();
      eo.api_key = kKey;
      eo.retries = 0;
      const std::string ee = failure([&] {
        RemoteEncoder enc(eo);
        enc.embed({"a man sleeps"}, std::nullopt, true);
      });
      EXPECT_NE(ee.find("HTTP " + std::to_string(status)), std::string::npos) << ee;
      expect_no_key(ee);
    }
  }
}

TEST(SecretEcho, AFailedAnswersMessageHoldsNoKey) {
  EchoServer srv(401, [](const std::string& h) { return error_message("bad key: " + h); });
  HttpJsonClient c(srv.url(), "openai reader");
  const std::string body = "{}";
  const HttpAnswer a = c.send_once("/completions", &body, kKey, 10);
  EXPECT_EQ(a.status, 401);
  EXPECT_EQ(a.error, "HTTP 401 from /v1/completions: bad key: Bearer ***");
  // A prompt over the server's context whose message quotes the key: still a ContextOverflow,
  // without the key.
  EchoServer ctx(400, [](const std::string& h) {
    return nlohmann::json{
        {"error", {{"message", "too long for " + h}, {"code", "context_length_exceeded"}}}}
        .dump();
  });
  HttpJsonOptions ho;
  ho.api_key = kKey;
  ho.retries = 0;
  try {
    HttpJsonClient(ctx.url(), "openai reader").post("/completions", body, ho);
    ADD_FAILURE() << "no error";
  } catch (const ContextOverflow& e) {
    expect_no_key(e.what());
    EXPECT_NE(std::string(e.what()).find("too long for Bearer ***"), std::string::npos) << e.what();
  }
  // The message of an answer, for other callers.
  EXPECT_EQ(http_error_text(error_message("x " + kKey + " y"), kKey), "x *** y");
  EXPECT_EQ(http_error_text("Bearer " + kKey, kKey), "Bearer ***");
  EXPECT_EQ(http_error_text("Bearer " + kKey, ""), "Bearer " + kKey);
  EXPECT_EQ(redact_secret("a" + kKey + kKey + "b", kKey), "a******b");
  EXPECT_EQ(redact_secret("abc", ""), "abc");
}

TEST(SecretEcho, ABaseUrlWithAQueryOrFragmentIsRefusedUnquoted) {
  for (const std::string& url : {std::string("http://127.0.0.1:9/v1?api_key=sk-QUERYSECRET"),
                                 std::string("http://127.0.0.1:9/v1/?api_key=sk-QUERYSECRET"),
                                 std::string("http://127.0.0.1:9?api_key=sk-QUERYSECRET"),
                                 std::string("http://127.0.0.1:9/v1#sk-QUERYSECRET"),
                                 std::string("http://u:p@127.0.0.1:9/v1?api_key=sk-QUERYSECRET")}) {
    OpenAIOptions oo;
    oo.base_url = url;
    oo.retries = 0;
    std::string e;
    try {
      OpenAIReader r(oo);
      ADD_FAILURE() << url << " accepted";
    } catch (const UsageError& err) {
      e = err.what();
    }
    EXPECT_EQ(e.find("QUERYSECRET"), std::string::npos) << e;
    EXPECT_NE(e.find("--base-url"), std::string::npos) << e;
    EXPECT_NE(e.find("query string"), std::string::npos) << e;

    RemoteEncoderOptions eo;
    eo.base_url = url;
    e.clear();
    try {
      RemoteEncoder enc(eo);
      ADD_FAILURE() << url << " accepted";
    } catch (const UsageError& err) {
      e = err.what();
    }
    EXPECT_EQ(e.find("QUERYSECRET"), std::string::npos) << e;
    EXPECT_NE(e.find("--base-url"), std::string::npos) << e;
  }
  // A '?' or '#' inside the userinfo is a password's, not a query: accepted (and redacted).
  EXPECT_NO_THROW(HttpJsonClient("http://user:se?cr#et@127.0.0.1:9/v1", "openai reader"));
  const HttpJsonClient c("http://user:se?cr#et@127.0.0.1:9/v2", "openai reader");
  EXPECT_EQ(c.prefix(), "/v2");
}

TEST(SecretEcho, AUserinfoHoldingASlashIsRedactedWhole) {
  EXPECT_EQ(redact_url("http://bob:s3cr/et@127.0.0.1:9/v1"), "http://***@127.0.0.1:9/v1");
  EXPECT_EQ(redact_url("http://bob:a/b/c@h"), "http://***@h");
  EXPECT_EQ(redact_url("https://bob:s3cr/et@h:1"), "https://***@h:1");
  EXPECT_EQ(redact_urls_in("no answer from http://bob:s3cr/et@127.0.0.1:9/v1/completions (x)"),
            "no answer from http://***@127.0.0.1:9/v1/completions (x)");
  EXPECT_EQ(bounded_message("x: 'http://bob:s3cr/et@h:1/v1' and http://a:b/c@g/v1"),
            "x: 'http://***@h:1/v1' and http://***@g/v1");
  EXPECT_EQ(redact_url("bob:s3cr/et@host:1/v1"), "***@host:1/v1");
  // A query or a fragment after a path is not userinfo; neither is anything without an '@'.
  EXPECT_EQ(redact_url("http://host/v1?u=a@b"), "http://host/v1?u=a@b");
  EXPECT_EQ(redact_url("http://host/v1#a@b"), "http://host/v1#a@b");
  EXPECT_EQ(redact_url("http://host/v1/x"), "http://host/v1/x");

  // Through the client: the failure names the server without the password, and the request
  // path is the URL's path after the host, not the password's tail.
  const HttpJsonClient c("http://bob:s3cr/et@127.0.0.1:9/v1", "openai reader");
  EXPECT_EQ(c.prefix(), "/v1");
  OpenAIOptions oo;
  oo.base_url = "http://bob:s3cr/et@127.0.0.1:9/v1";
  oo.retries = 0;
  oo.timeout_s = 2;
  const std::string e = failure([&] {
    OpenAIReader r(oo);
    r.generate("q", GenerateParams{});
  });
  EXPECT_EQ(e.find("s3cr"), std::string::npos) << e;
  EXPECT_EQ(e.find("bob"), std::string::npos) << e;
}

}  // namespace
}  // namespace ragform::reader

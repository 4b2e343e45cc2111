// What issue 40's tenth pass left, through a real `ragform serve` on loopback: the connection's
// life and the request line's answers.
// - J2: HTTP/1.0's "Connection: keep-alive" in any case but "Keep-Alive" closed the connection,
//   the second pipelined request unanswered; responses after which the server closed advertised
//   "Keep-Alive" without "Connection: close"; some error replies said "Connection: close" twice.
// - J3: an HTTP/1.0 request with Transfer-Encoding was served and the connection kept (RFC 9112
//   section 6.1: faulty framing); an HTTP/1.0 "Expect: 100-continue" got a 100 (RFC 9110 section
//   10.1.1: MUST be ignored).
// - J4: a request refused while its request line was read (a NUL or a bare CR in it, a 70 KB
//   line) got no answer at all, and an empty line before the request line (RFC 9112 section 2.2:
//   SHOULD be skipped) closed the connection silently.
// - J7: an absolute-form target ("GET http://x/health") was refused (RFC 9112 section 3.2.2: a
//   server MUST accept it).
// - A single header line over the library's 8 KiB got "HTTP error 400"; now the 431 of the other
//   header limits.
#include <cctype>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "server/raw_cases.h"

namespace ragform::testing {
namespace {

// The values of every `name:` field of a raw response's head, in order (names in any case).
std::vector<std::string> fields(const std::string& response, const std::string& name) {
  std::vector<std::string> out;
  const std::string head = response.substr(0, response.find("\r\n\r\n"));
  for (size_t at = head.find("\r\n"); at != std::string::npos;) {
    const size_t end = head.find("\r\n", at + 2);
    const std::string line = head.substr(at + 2, end == std::string::npos ? end : end - at - 2);
    at = end;
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < colon; ++i)
      same = same && std::tolower(static_cast<unsigned char>(line[i])) ==
                         std::tolower(static_cast<unsigned char>(name[i]));
    if (same) out.push_back(line.substr(line.find_first_not_of(' ', colon + 1)));
  }
  return out;
}

// The responses in a connection's bytes, each from its status line.
std::vector<std::string> split_responses(const std::string& s) {
  std::vector<std::string> out;
  for (size_t at = s.find("HTTP/1.1 "); at != std::string::npos;) {
    const size_t next = s.find("HTTP/1.1 ", at + 1);
    out.push_back(s.substr(at, next == std::string::npos ? next : next - at));
    at = next;
  }
  return out;
}

TEST(ServeConnection, Http10KeepsAConnectionOnlyWhenAskedInAnyCase) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  for (const std::string option : {"Keep-Alive", "keep-alive", "KEEP-ALIVE"}) {
    const std::string request = "GET /health HTTP/1.0\r\nConnection: " + option + "\r\n\r\n";
    RawSocket s(srv.port());
    s.send(request + request + "GET /health HTTP/1.0\r\n\r\n");
    const auto got = s.read_until_close(30);
    ASSERT_TRUE(got) << option << ": the connection was not closed after the third request";
    const auto replies = split_responses(*got);
    ASSERT_EQ(replies.size(), 3u) << option << ": " << *got;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(fields(replies[i], "Connection"), std::vector<std::string>{"keep-alive"})
          << replies[i];
      EXPECT_EQ(fields(replies[i], "Keep-Alive").size(), 1u) << replies[i];
    }
    // The third asked for nothing: HTTP/1.0 closes, and says so.
    EXPECT_EQ(fields(replies[2], "Connection"), std::vector<std::string>{"close"}) << replies[2];
    EXPECT_TRUE(fields(replies[2], "Keep-Alive").empty()) << replies[2];
  }
}

// Every response after which the server closes says "Connection: close", once, and advertises no
// Keep-Alive; one that keeps the connection says how long and for how many more requests.
TEST(ServeConnection, AClosingResponseSaysSoOnce) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  const std::vector<std::string> closing = {
      "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      "GET /health HTTP/1.1\r\nHost: x\r\nConnection: CLOSE\r\n\r\n",
      "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 3\r\n\r\n"
      "{x}",
      // A refused chunked body (a size line over 4,096 bytes), with a request after it.
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;" +
          std::string(5000, 'e') + "\r\n{\r\n0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n",
      // A refused head.
      "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 2\r\n\r\n",
      "POST /v1/completions HTTP/1.0\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\n\r\n" + body,
  };
  for (const std::string& request : closing) {
    RawSocket s(srv.port());
    const auto got = s.exchange(request, 30);
    ASSERT_TRUE(got) << request.substr(0, 80);
    EXPECT_EQ(count_responses(*got), 1u) << *got;
    EXPECT_EQ(fields(*got, "Connection"), std::vector<std::string>{"close"}) << got->substr(0, 400);
    EXPECT_TRUE(fields(*got, "Keep-Alive").empty()) << got->substr(0, 400);
  }
  // Five requests on one connection (the server's keep-alive count): the fifth closes it.
  RawSocket s(srv.port());
  std::string five;
  for (int i = 0; i < 5; ++i) five += "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
  s.send(five);
  const auto got = s.read_until_close(30);
  ASSERT_TRUE(got);
  const auto replies = split_responses(*got);
  ASSERT_EQ(replies.size(), 5u) << *got;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(fields(replies[i], "Connection").empty()) << replies[i];
    EXPECT_EQ(fields(replies[i], "Keep-Alive"),
              std::vector<std::string>{"timeout=5, max=" + std::to_string(4 - i)})
        << replies[i];
  }
  EXPECT_EQ(fields(replies[4], "Connection"), std::vector<std::string>{"close"}) << replies[4];
  EXPECT_TRUE(fields(replies[4], "Keep-Alive").empty()) << replies[4];
}

TEST(ServeConnection, Http10HasNoTransferEncodingAndNoInterimResponse) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  expect_raw_cases(
      srv, {{"HTTP/1.0 with a chunked body, then a request",
             "POST /v1/completions HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: "
             "chunked\r\n\r\n" +
                 std::string(size) + "\r\n" + body + "\r\n0\r\n\r\nGET /health HTTP/1.0\r\n\r\n",
             "400", "an HTTP/1.0 request cannot have a Transfer-Encoding"}});
  // "Expect: 100-continue" gets its 100 only from an HTTP/1.1 request that has a body.
  const std::string expect = "Expect: 100-continue\r\n";
  for (const auto& [request, interim] : std::vector<std::pair<std::string, bool>>{
           {"POST /v1/completions HTTP/1.0\r\n" + expect +
                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
            false},
           {"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + expect + "\r\n", false},
           {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + expect +
                "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body,
            true}}) {
    RawSocket s(srv.port());
    const auto got = s.exchange(request, 30);
    ASSERT_TRUE(got) << request;
    EXPECT_EQ(got->rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0, interim) << *got;
    EXPECT_NE(got->find("HTTP/1.1 200 OK"), std::string::npos) << *got;
  }
  // The expectation in any case gets its 100 before the body is sent (pass 12: "100-Continue"
  // got none, and a client waited out its own timeout).
  RawSocket s(srv.port());
  ASSERT_TRUE(
      s.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
             "Expect: 100-Continue\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n"));
  ASSERT_TRUE(s.readable(10)) << "no 100 before the body";
  s.send(body);
  const auto got = s.read_until_close(30);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->rfind("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK", 0), 0u) << *got;
}

TEST(ServeConnection, ARequestLineRefusedWhileReadIsAnswered) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string rest = "\r\nHost: x\r\nConnection: close\r\n\r\n";
  const char* line_end = "does not end in CRLF, a bare CR, or a NUL byte";
  expect_raw_cases(
      srv,
      {
          {"a NUL in the request line", std::string("GET /hea\0lth HTTP/1.1", 21) + rest, "400",
           line_end},
          {"a bare CR in the request line", "GET /hea\rlth HTTP/1.1" + rest, "400", line_end},
          {"a request line ended by a bare LF",
           "GET /health HTTP/1.1\nHost: x\r\nConnection: close\r\n\r\n", "400", line_end},
          {"a 70 KB request line", "GET /" + std::string(70000, 'a') + " HTTP/1.1" + rest, "414",
           "request target over 2048 bytes"},
          {"a bare LF before the request line", "\nGET /health HTTP/1.1" + rest, "400", line_end},
          {"a 9,000-byte header line",
           "GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(9000, 'v') + "\r\n\r\n",
           "431", "8190 bytes a line"},
          {"300 empty lines before the request line",
           [] {
             std::string s;
             for (int i = 0; i < 300; ++i) s += "\r\n";
             return s;
           }() +
               "GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
           "431", "request headers too large"},
      });
  // Empty lines before a request line are skipped: a client that ends a body with a CRLF too many
  // keeps its next request.
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  for (const std::string& request :
       {"\r\nGET /health HTTP/1.1" + rest, "\r\n\r\nGET /health HTTP/1.1" + rest,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body + "\r\nGET /health HTTP/1.1" + rest}) {
    RawSocket s(srv.port());
    const auto got = s.exchange(request, 30);
    ASSERT_TRUE(got) << request;
    const auto replies = split_responses(*got);
    ASSERT_FALSE(replies.empty()) << request;
    for (const std::string& r : replies) EXPECT_EQ(status_of(r), "200") << r.substr(0, 300);
    EXPECT_EQ(replies.size(), request.rfind("POST", 0) == 0 ? 2u : 1u) << *got;
  }
}

TEST(ServeConnection, AnAbsoluteFormTargetIsServedByItsPath) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--api-key", "K"});
  const std::string rest =
      " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer K\r\nConnection: "
      "close\r\n\r\n";
  for (const auto& [target, status] : std::vector<std::pair<std::string, std::string>>{
           {"http://x/health", "200"},
           {"HTTP://127.0.0.1:8080/v1/models", "200"},
           {"https://[::1]:1/v1/models?x=1", "200"},
           {"http://x", "404"},  // the path "/": no route
           {"http://x/nowhere", "404"},
           {"http://x/v1%2Fmodels", "400"},
           {"http://user@x/health", "400"},
           {"http:///health", "400"},
           {"ftp://x/health", "400"},
           {"http://a b/health", "400"},
           // A request target has no fragment (pass 12: "/health#x" was served as /health).
           {"/health#x", "400"},
           {"http://x/health#x", "400"},
       }) {
    RawSocket s(srv.port());
    const auto got = s.exchange("GET " + target + rest, 30);
    ASSERT_TRUE(got) << target;
    EXPECT_EQ(status_of(*got), status) << target << ": " << got->substr(0, 300);
  }
  // A POST by its absolute form reaches the same endpoint as by its path.
  const std::string body = R"({"prompt":"Once","max_tokens":2,"temperature":0})";
  std::string answers[2];
  int i = 0;
  for (const std::string target : {"/v1/completions", "http://localhost/v1/completions"}) {
    RawSocket s(srv.port());
    const auto got = s.exchange("POST " + target +
                                    " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                    "K\r\nConnection: close\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body,
                                30);
    ASSERT_TRUE(got) << target;
    EXPECT_EQ(status_of(*got), "200") << *got;
    answers[i++] = raw_body(*got).substr(0, raw_body(*got).find("\"created\""));
  }
  EXPECT_EQ(answers[0], answers[1]);
}

// Pass 17: a client that shuts its sending side once the request is out (RFC 9112 section 9.6;
// `nc -N`, Go's CloseWrite) got no answer at all on any route: the check before each write took
// its end of file for a client gone. It is answered now; only a long log-prob listing, which
// cannot tell such a client from one that left, stops and says why (a 499 it can still read).
TEST(ServeConnection, AHalfClosedClientIsAnswered) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-qwen2.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "-t", "1"});
  const auto half_closed = [&](const std::string& method, const std::string& path,
                               const std::string& body) -> std::string {
    RawSocket s(srv.port());
    EXPECT_TRUE(s.ok());
    EXPECT_TRUE(s.send(method + " " + path +
                       " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       "Content-Length: " +
                       std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body));
    EXPECT_TRUE(s.shut_write());
    return s.read_until_close(30).value_or("(no answer in 30 s)");
  };
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(half_closed("GET", "/v1/models", "").substr(0, 12), "HTTP/1.1 200") << i;
    EXPECT_EQ(half_closed("POST", "/v1/completions", R"({"prompt": "hi", "max_tokens": 2})")
                  .substr(0, 12),
              "HTTP/1.1 200")
        << i;
    EXPECT_EQ(
        half_closed("POST", "/v1/score", R"({"prompt": "hi", "continuation": " x"})").substr(0, 12),
        "HTTP/1.1 200")
        << i;
    EXPECT_EQ(half_closed("POST", "/v1/completions", R"({"prompt": 5})").substr(0, 12),
              "HTTP/1.1 400")
        << i;
  }
  // A multipart body in any case of its media type, with a boundary or none, of any multipart
  // type, is named as such, with one code (pass 17: "Multipart/Form-Data" was parsed as JSON, no
  // boundary was "could not be read"; pass 18: multipart/mixed was "malformed JSON", and the
  // code differed with the layer that refused it).
  for (const std::string type :
       {"multipart/form-data; boundary=xyz", "Multipart/Form-Data; boundary=xyz",
        "multipart/form-data", "MULTIPART/FORM-DATA ; boundary=\"b\"",
        "multipart/mixed; boundary=xyz"}) {
    RawSocket s(srv.port());
    const std::string body =
        "--xyz\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhi\r\n--xyz--\r\n";
    const auto got =
        s.exchange("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: " + type +
                       "\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\nConnection: close\r\n\r\n" + body,
                   30);
    ASSERT_TRUE(got) << type;
    EXPECT_EQ(got->substr(0, 12), "HTTP/1.1 400") << type;
    EXPECT_NE(got->find("the body is multipart (multipart/form-data"), std::string::npos) << *got;
    EXPECT_NE(got->find(R"("code":"invalid_json")"), std::string::npos) << *got;
  }
  const std::string listing = half_closed(
      "POST", "/v1/completions", R"({"prompt": "hi there", "max_tokens": 1, "logprobs": 0})");
  // The connection ends with it (pass 18: a request pipelined behind it was served).
  EXPECT_EQ(listing.substr(0, 12), "HTTP/1.1 499") << listing.substr(0, 300);
  EXPECT_EQ(fields(listing, "Connection"), std::vector<std::string>{"close"}) << listing;
  {
    RawSocket s(srv.port());
    const auto request = [](const std::string& body) {
      return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             "Content-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    };
    ASSERT_TRUE(s.send(request(R"({"prompt": "hi there", "max_tokens": 1, "logprobs": 1})") +
                       request(R"({"prompt": "hi", "max_tokens": 1})")));
    ASSERT_TRUE(s.shut_write());
    const std::string got = s.read_until_close(30).value_or("(no answer)");
    const std::vector<std::string> replies = split_responses(got);
    ASSERT_EQ(replies.size(), 1u) << got;
    EXPECT_EQ(replies[0].substr(0, 12), "HTTP/1.1 499");
    EXPECT_EQ(fields(replies[0], "Connection"), std::vector<std::string>{"close"}) << got;
  }
  EXPECT_NE(listing.find("the client closed the connection"), std::string::npos) << listing;
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
}  // namespace ragform::testing

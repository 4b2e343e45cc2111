// Issue 40's ninth pass, through a real `ragform serve` on loopback:
// - H7: a 4,000-byte request path ended the server (SIGSEGV): the library matches routes with
//   std::regex, whose recursion overflowed a connection thread's stack. Targets over 2,048 bytes
//   are a 414 now, before any route is matched.
// - H6: a header line ending in a bare LF ended the head for ragform's checks but not for the
//   library, which skipped the line: the headers after it went unchecked (a second request
//   smuggled in a body, the 64 KiB header limit bypassed). Every line of the head must end in
//   CRLF; a bare CR and a NUL are refused too.
// - H1: a chunk's data not followed by CRLF ended the body for the library, and what followed was
//   answered as a request of its own.
// - H10: routes were matched on the percent-decoded path ("/v1%2Fattention" reached
//   /v1/attention); H8: HTTP/2.0, HTTP/9.9 or no version were served as HTTP/1.1, and
//   "Connection: CLOSE" kept the connection open.
// - H5: a NUL byte ended a JSON body: `{...}\0{...}` was read as its first value.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "server/raw_cases.h"

namespace ragform::testing {
namespace {

const std::string kSmuggled = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

TEST(ServeFramingPass9, RequestTargetsAndVersions) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--api-key", "K"});
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  const std::string post =
      "Host: x\r\nAuthorization: Bearer K\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  expect_raw_cases(
      srv,
      {
          {"a 4,000-byte path", "GET /" + std::string(4000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n",
           "414", "request target over 2048 bytes"},
          {"a 3,000-byte query",
           "GET /health?" + std::string(3000, 'q') + " HTTP/1.1\r\nHost: x\r\n\r\n", "414",
           "request target over 2048 bytes"},
          {"an encoded slash", "POST /v1%2Fcompletions HTTP/1.1\r\n" + post, "400",
           "without percent-escapes"},
          {"a target without its slash", "POST %2Fv1%2Fcompletions HTTP/1.1\r\n" + post, "400",
           "without percent-escapes"},
          {"HTTP/2.0", "POST /v1/completions HTTP/2.0\r\n" + post, "505",
           "HTTP version must be 1.1 or 1.0"},
          {"HTTP/9.9", "GET /health HTTP/9.9\r\nHost: x\r\n\r\n", "505",
           "HTTP version must be 1.1 or 1.0"},
          // HTTP-name is case-sensitive: a malformed line, not a version (pass 10).
          {"a lowercase version", "GET /health http/1.1\r\nHost: x\r\n\r\n", "400",
           "METHOD SP target SP HTTP/x.y"},
      });
  // Within the bound: a 2,000-byte path is an ordinary 404, HTTP/1.0 is served.
  RawSocket s(srv.port());
  auto got = s.exchange("GET /" + std::string(2000, 'a') +
                            " HTTP/1.1\r\nHost: x\r\nAuthorization: "
                            "Bearer K\r\nConnection: close\r\n\r\n",
                        30);
  ASSERT_TRUE(got);
  EXPECT_EQ(status_of(*got), "404") << got->substr(0, 300);
  RawSocket s10(srv.port());
  got = s10.exchange("GET /health HTTP/1.0\r\n\r\n", 30);
  ASSERT_TRUE(got);
  EXPECT_NE(got->find(" 200 "), std::string::npos) << got->substr(0, 300);
}

// Left by the ninth pass: an HTTP/1.1 request without a Host field was served, and one with two
// Host fields too (RFC 9112 section 3.2 makes both a 400: a proxy routing by the field and this
// server could read such a request differently). HTTP/1.0 needs none.
TEST(ServeFramingPass9, Http11NeedsExactlyOneHostField) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const char* why = "exactly one Host header field";
  expect_raw_cases(
      srv,
      {
          {"no Host", "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n", "400", why},
          {"two Host fields", "GET /health HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", "400", why},
          {"two Host fields in 1.0", "GET /health HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", "400",
           why},
          {"no Host, then a request smuggled in its body",
           "POST /v1/completions HTTP/1.1\r\nContent-Length: 0\r\n\r\n" + kSmuggled, "400", why},
      });
  for (const std::string req : {"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                                "GET /health HTTP/1.1\r\nHOST: x\r\nConnection: close\r\n\r\n",
                                "GET /health HTTP/1.0\r\n\r\n"}) {
    RawSocket s(srv.port());
    const auto got = s.exchange(req, 30);
    ASSERT_TRUE(got) << req;
    EXPECT_EQ(status_of(*got), "200") << req << got->substr(0, 300);
  }
}

// The tenth pass, on this file's helpers:
// - J1 (security): a chunk-size line not starting with a hex digit (" 2", "0x2", "+2") read here
//   as the last chunk, which ended these checks, while the library's strtoul read 2 and went on:
//   pass 9's smuggling through chunk data came back, and a size line could grow without bound.
// - J6: a Host value that is not host[:port] ("a b", "evil.com/x@y", control bytes, a port past
//   65535) was served.
TEST(ServeFramingPass10, ChunkSizeLinesStartWithAHexDigit) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string head =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  std::vector<RawCase> cases;
  for (const std::string size : {" 2", "\t2", "0x2", "+2", "-2", ";ext", ""})
    cases.push_back({"size line '" + size + "'",
                     head + size + "\r\n\r\n\r\n1d\r\n" + body + "\n" + kSmuggled, "400",
                     "does not start with a hex digit"});
  for (const RawCase& c : cases) {
    SCOPED_TRACE(c.what);
    expect_raw_cases(srv, {c});
  }
  // Still served: leading zeros, upper-case hex, an extension and a space after the size.
  for (const std::string size : {"001d", "1D", "1d;a=b", "1d "}) {
    RawSocket s(srv.port());
    const auto got = s.exchange(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: "
        "close\r\nTransfer-Encoding: chunked\r\n\r\n" +
            size + "\r\n" + body + "\r\n0\r\n\r\n",
        30);
    ASSERT_TRUE(got) << size;
    EXPECT_EQ(status_of(*got), "200") << size << ": " << got->substr(0, 300);
  }
}

TEST(ServeFramingPass10, HostValuesAreHostAndPort) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  std::vector<RawCase> cases;
  for (const std::string host :
       {"a b", "evil.com/x@y", "x:99999999", "x:8o", "a\x01b", "a\x1b[2Jb", "a\x7f", "[::1", ":80"})
    cases.push_back({"Host '" + host + "'", "GET /health HTTP/1.1\r\nHost: " + host + "\r\n\r\n",
                     "400", "its value is host[:port]"});
  expect_raw_cases(srv, cases);
  for (const std::string host : {"localhost", "127.0.0.1:8080", "[::1]:80", "a-b.example", "x:", "",
                                 "xn--bcher-kva.example"}) {
    RawSocket s(srv.port());
    const auto got =
        s.exchange("GET /health HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n", 30);
    ASSERT_TRUE(got) << host;
    EXPECT_EQ(status_of(*got), "200") << host << ": " << got->substr(0, 300);
  }
}

// J10: a key twice in one object ran with the last one (nlohmann keeps it), while a gateway or a
// validator in front reading the first saw another request.
TEST(ServeFramingPass10, ADuplicateKeyIsRefused) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  std::vector<RawCase> cases;
  for (const std::string body : {R"({"prompt":"a","max_tokens":600,"max_tokens":1})",
                                 R"({"model":"other","model":"stories260K","prompt":"a"})"})
    cases.push_back({body,
                     "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     "Content-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body,
                     "400", "duplicate key"});
  expect_raw_cases(srv, cases);
}

// J5: a malformed request line (two spaces, a space in the target, one after the version, tabs)
// read the rest as the version and was answered 505; `GET *` was a 404 (`*` is OPTIONS' only).
TEST(ServeFramingPass10, AMalformedRequestLineIsA400) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string host = "\r\nHost: x\r\n\r\n";
  std::vector<RawCase> cases;
  for (const std::string line :
       {"GET /health  HTTP/1.1", "GET /a b HTTP/1.1", "GET /health HTTP/1.1 ",
        "GET\t/health\tHTTP/1.1", " GET /health HTTP/1.1", "GET /health HTTP/1.10", "GET /health"})
    cases.push_back({"'" + line + "'", line + host, "400", "METHOD SP target SP HTTP/x.y"});
  cases.push_back({"GET *", "GET * HTTP/1.1" + host, "400", "or '*' for OPTIONS"});
  cases.push_back({"HTTP/2.0 stays 505", "GET /health HTTP/2.0" + host, "505",
                   "HTTP version must be 1.1 or 1.0"});
  expect_raw_cases(srv, cases);
}

TEST(ServeFramingPass9, LinesEndInCrlfAndChunkDataInCrlf) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  std::string flood;
  for (int i = 0; i < 20000; ++i) flood += "X:y\r\n";
  expect_raw_cases(
      srv,
      {
          {"Content-Length after a bare LF",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
               std::to_string(body.size()) + "\n\r\n" + body + kSmuggled,
           "400", "does not end in CRLF"},
          {"a bare LF, then conflicting framing",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-A: 1\nContent-Length: 0, " +
               std::to_string(kSmuggled.size()) + "\r\n\r\n" + kSmuggled,
           "400", "does not end in CRLF"},
          {"a bare LF, then a header flood",
           "GET /health HTTP/1.1\r\nHost: x\r\nX-A: 1\n" + flood + "\r\n", "400",
           "does not end in CRLF"},
          {"a bare CR in a header line",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-A: 1\rTransfer-Encoding: "
           "chunked\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body,
           "400", "does not end in CRLF"},
          {"a NUL in a header value",
           std::string("GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n", 43), "400",
           "a NUL byte"},
          {"chunk data followed by LF",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
               [&] {
                 char hex[16];
                 std::snprintf(hex, sizeof hex, "%zx", body.size());
                 return std::string(hex);
               }() +
               "\r\n" + body + "\n" + kSmuggled,
           "400", "a chunk's data not followed by CRLF"},
          {"chunk data followed by another size",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n" +
               body.substr(0, 1) + "0\r\n\r\n" + kSmuggled,
           "400", "a chunk's data not followed by CRLF"},
      });
  // A well-formed chunked body, and then the same connection again: served.
  RawSocket s(srv.port());
  char hex[16];
  std::snprintf(hex, sizeof hex, "%zx", body.size());
  const auto got =
      s.exchange("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                     std::string(hex) + "\r\n" + body + "\r\n0\r\n\r\n" + kSmuggled,
                 30);
  ASSERT_TRUE(got);
  EXPECT_EQ(status_of(*got), "200") << got->substr(0, 300);
  EXPECT_EQ(count_responses(*got), 2u) << *got;
}

TEST(ServeFramingPass9, ConnectionCloseIsCaseInsensitive) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  for (const std::string value : {"CLOSE", "keep-alive, Close"}) {
    RawSocket s(srv.port());
    ASSERT_TRUE(s.ok());
    s.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: " + value + "\r\n\r\n" +
           "GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
    const auto got = s.read_until_close(30);
    ASSERT_TRUE(got) << value << ": the connection stayed open";
    EXPECT_EQ(count_responses(*got), 1u) << value << ": " << *got;
  }
}

TEST(ServeFramingPass9, ANulByteEndsNoJsonBody) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  httplib::Client c("127.0.0.1", srv.port());
  const std::string body =
      std::string(R"({"prompt":"hi","max_tokens":1})") + '\0' + R"({"prompt":"x","max_tokens":-5})";
  auto r = c.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("a NUL byte"), std::string::npos) << r->body;
}

}  // namespace
}  // namespace ragform::testing

// Issue 40's fifth pass, through a real `ragform serve` on loopback:
// - D3: cpp-httplib 0.11 bounds each header line but not their number or sum: a request of a
//   million `X:y` lines held 100 MB and was answered 200, and 30 at once ended the server under
//   `ulimit -v`. The request line and headers together now stop at 64 KiB and 256 lines: 431, and
//   the connection closes; a request within the limits, and its body after the headers (which is
//   never counted as headers), is served as before, also as the next request of a connection.
// - D1: a 1 MB body of 340,000 empty JSON objects takes 27 MB to parse; 100 of them at once ended
//   a server under `ulimit -v 2000000` ("terminate called after throwing ... bad_alloc"). Parsing
//   now reserves 32 bytes a byte of body in a server-wide budget first (reply_budget.h,
//   admit_body): every request is answered and the server lives on.
#include <sys/resource.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server/raw_http.h"
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

std::string status_of(const std::string& response) {
  return response.size() >= 12 ? response.substr(9, 3) : "";
}

std::string health_request(const std::string& headers, bool close = true) {
  return "GET /health HTTP/1.1\r\nHost: x\r\n" + headers + (close ? "Connection: close\r\n" : "") +
         "\r\n";
}

TEST(ServeHeaderLimits, TooManyOrTooLargeHeadersAre431) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  std::string many;
  for (int i = 0; i < 300; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  std::string large;
  for (int i = 0; i < 20; ++i)
    large += "X-" + std::to_string(i) + ": " + std::string(4000, 'v') + "\r\n";
  for (const std::string& headers : {many, large}) {
    RawSocket s(srv.port());
    ASSERT_TRUE(s.ok());
    const auto got = s.exchange(health_request(headers), 30);
    ASSERT_TRUE(got) << "no answer";
    EXPECT_EQ(status_of(*got), "431") << got->substr(0, 300);
    EXPECT_NE(got->find("request headers too large"), std::string::npos) << *got;
  }
  // A million lines: refused after the first 256, not read into memory.
  {
    RawSocket s(srv.port());
    ASSERT_TRUE(s.ok());
    std::string flood = "GET /health HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 100000; ++i) flood += "X:y\r\n";
    s.send(flood);  // the server may close before all of it is sent
    const auto got = s.read_until_close(30);
    ASSERT_TRUE(got) << "no answer";
    EXPECT_EQ(status_of(*got), "431") << got->substr(0, 300);
  }
  // Within the limits (250 lines), a POST whose body holds blank lines, then a second request on
  // the same connection: both served.
  std::string fine;
  for (int i = 0; i < 240; ++i) fine += "X-" + std::to_string(i) + ": y\r\n";
  const std::string body =
      R"({"prompt": "a\n\n\n", "max_tokens": 1})" + std::string(3000, ' ') + std::string(300, '\n');
  RawSocket s(srv.port());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\n" + fine +
                     "Content-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body));
  ASSERT_TRUE(s.send(health_request(fine)));
  const auto got = s.read_until_close(60);
  ASSERT_TRUE(got) << "no answer";
  EXPECT_EQ(status_of(*got), "200") << got->substr(0, 300);
  const size_t second = got->find("HTTP/1.1 ", 9);
  ASSERT_NE(second, std::string::npos) << *got;
  EXPECT_EQ(got->substr(second + 9, 3), "200") << got->substr(second, 300);
}

TEST(ServeBodyMemory, ManyValuesInConcurrentBodiesUnderUlimitLeaveTheServerUp) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  constexpr rlim_t kLimit = rlim_t(2000000) * 1024;
  ServeProcess srv({"-m", model.string(), "--ctx", "256"}, 120, [] {
    unsetenv("MALLOC_ARENA_MAX");
    rlimit rl{kLimit, kLimit};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(126);
  });
  std::string body = R"({"prompt": "a", "max_tokens": 1, "zz": [)";
  for (int i = 0; i < 340000; ++i) body += i ? ",{}" : "{}";
  body += "]}";
  std::vector<int> status(100, 0);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < status.size(); ++i)
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", srv.port());
      c.set_read_timeout(300, 0);
      c.set_write_timeout(60, 0);
      auto r = c.Post("/v1/completions", body, "application/json");
      status[i] = r ? r->status : -1;
    });
  for (auto& t : clients) t.join();
  for (size_t i = 0; i < status.size(); ++i)
    EXPECT_TRUE(status[i] == 200 || status[i] == 503)
        << "request " << i << ": " << status[i] << " (-1: no answer, the server died)";
  httplib::Client c("127.0.0.1", srv.port());
  auto h = c.Get("/health");
  ASSERT_TRUE(h) << "the server died";
  EXPECT_EQ(h->status, 200);
}

}  // namespace
}  // namespace ragform::testing

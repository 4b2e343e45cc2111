// `ragform serve` under slow and stalled clients, through raw loopback sockets: 80 connections
// stalled mid-request-line leave /health answering at once; a request whose headers or body
// stall, or dribble in a byte at a time, is cut with 408 at --read-timeout / --request-timeout;
// --max-connections bounds the connections served at once and the timeouts free their places;
// stopping the server still writes the responses under way.
#include <chrono>
#include <vector>

#include <gtest/gtest.h>

#include "server/raw_http.h"
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// GET /health through a client that gives up after timeout_s; its status, 0 without an answer.
int health(int port, int timeout_s) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(timeout_s, 0);
  c.set_read_timeout(timeout_s, 0);
  auto r = c.Get("/health");
  return r ? r->status : 0;
}

TEST(ServeSlowClients, StalledConnectionsLeaveHealthAnswering) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "64"});  // the default limits
  std::vector<RawSocket> stalled;
  for (int i = 0; i < 80; ++i) {
    stalled.emplace_back(srv.port());
    ASSERT_TRUE(stalled.back().ok()) << i;
    ASSERT_TRUE(stalled.back().send("GET /hea")) << i;  // half a request line, then nothing
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // all accepted and reading
  const auto t0 = Clock::now();
  EXPECT_EQ(health(srv.port(), 5), 200);
  EXPECT_LT(seconds_since(t0), 5.0);
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(5, 0);
  auto r = c.Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 2})", "application/json");
  ASSERT_TRUE(r) << "no completion while 80 connections stall";
  EXPECT_EQ(r->status, 200) << r->body;
  stalled.clear();
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServeSlowClients, SlowRequestsAreCutWith408) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv(
      {"-m", model.string(), "--ctx", "64", "--read-timeout", "1", "--request-timeout", "3"});
  const std::string head = "GET /health HTTP/1.1\r\nHost: x\r\n";

  // Headers that stop coming: 408 after the read timeout.
  {
    RawSocket s(srv.port());
    ASSERT_TRUE(s.send(head + "X-Slow: a"));
    const auto t0 = Clock::now();
    auto res = s.read_until_close(10);
    ASSERT_TRUE(res) << "the server kept a silent connection";
    EXPECT_EQ(raw_status(*res), 408) << *res;
    EXPECT_GE(seconds_since(t0), 0.8);
    EXPECT_LT(seconds_since(t0), 3.0);
  }
  // A byte every 300 ms never trips the read timeout; the request deadline cuts it (the
  // headers would take 15 s).
  {
    RawSocket s(srv.port());
    const auto t0 = Clock::now();
    ASSERT_TRUE(s.send(head));
    std::optional<std::string> res;
    for (int i = 0; i < 50 && !res; ++i) {
      s.send("a");
      if (s.readable(0.3)) res = s.read_until_close(5);
    }
    ASSERT_TRUE(res) << "the dribbling client was never cut";
    EXPECT_EQ(raw_status(*res), 408) << *res;
    EXPECT_GE(seconds_since(t0), 2.5);
    EXPECT_LT(seconds_since(t0), 6.0);
    EXPECT_NE(raw_body(*res).find("request_timeout"), std::string::npos) << *res;
  }
  // A body that stalls: 408 too.
  {
    RawSocket s(srv.port());
    ASSERT_TRUE(s.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"));
    auto res = s.read_until_close(10);
    ASSERT_TRUE(res);
    EXPECT_EQ(raw_status(*res), 408) << *res;
  }
  EXPECT_EQ(health(srv.port(), 5), 200);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServeSlowClients, MaxConnectionsBoundsWhatIsServedAtOnce) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv(
      {"-m", model.string(), "--ctx", "64", "--max-connections", "2", "--read-timeout", "2"});
  std::vector<RawSocket> stalled;
  for (int i = 0; i < 2; ++i) {
    stalled.emplace_back(srv.port());
    ASSERT_TRUE(stalled.back().send("GET /health HTTP/1.1\r\n"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Both places are taken: /health waits its turn, which comes when the read timeout drops the
  // stalled connections.
  const auto t0 = Clock::now();
  EXPECT_EQ(health(srv.port(), 10), 200);
  EXPECT_GE(seconds_since(t0), 1.0);
  EXPECT_LT(seconds_since(t0), 6.0);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// SIGTERM stops reading new requests at once, but a response under way is still written: the
// connection stream's stop rule applies to reads only.
TEST(ServeSlowClients, StopStillWritesTheResponsesUnderWay) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "64", "--pace-ms", "50"});
  int status = 0;
  std::string body;
  std::thread client([&] {
    httplib::Client c("127.0.0.1", srv.port());
    c.set_read_timeout(30, 0);
    auto r = c.Post("/v1/completions", R"({"prompt": "Once", "max_tokens": 20, "temperature": 0})",
                    "application/json");
    if (r) {
      status = r->status;
      body = r->body;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // generating (20 x 50 ms)
  kill(srv.pid(), SIGTERM);
  client.join();
  EXPECT_EQ(status, 200) << "the response under way was dropped: " << body;
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
}  // namespace ragform::testing

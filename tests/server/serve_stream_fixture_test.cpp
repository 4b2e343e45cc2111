// `ragform serve` streaming and continuous batching on loopback: SSE chunks arrive while the reply
// is still being generated (timestamps of a 64-token reply), reassemble exactly to the non-streamed
// text, concurrent streaming clients share forward passes, a client that hangs up mid-stream frees
// its sequence, a full queue answers 503 with a JSON error, and the server keeps serving after
// each.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Event {
  double ms;  // since the request was sent
  std::string payload;
};

struct Streamed {
  int status = 0;
  std::string content_type;
  std::vector<Event> events;
  double total_ms = 0;
};

// POSTs and records when each "data: ..." event arrived. stop_after > 0 hangs up after that many
// events.
Streamed post_stream(int port, const std::string& path, const json& body, size_t stop_after = 0) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  Streamed s;
  std::string buf;
  auto t0 = Clock::now();
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    buf.append(data, n);
    size_t end;
    while ((end = buf.find("\n\n")) != std::string::npos) {
      std::string ev = buf.substr(0, end);
      buf.erase(0, end + 2);
      EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
      s.events.push_back({ms, ev.substr(6)});
    }
    return stop_after == 0 || s.events.size() < stop_after;
  };
  auto res = c.send(req);
  s.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (res) {
    s.status = res->status;
    s.content_type = res->get_header_value("Content-Type");
  }
  return s;
}

// Concatenated text of a /v1/completions stream; finish_reason of the last chunk.
std::string completion_text(const Streamed& s, std::string* finish, size_t* content_events,
                            double* first_ms) {
  std::string text;
  *content_events = 0;
  EXPECT_FALSE(s.events.empty());
  if (s.events.empty()) return text;
  EXPECT_EQ(s.events.back().payload, "[DONE]");
  for (const auto& e : s.events) {
    if (e.payload == "[DONE]") continue;
    json j = json::parse(e.payload);
    EXPECT_EQ(j["object"], "text_completion");
    auto& ch = j["choices"][0];
    std::string t = ch["text"];
    if (!t.empty()) {
      if (*content_events == 0) *first_ms = e.ms;
      ++*content_events;
    }
    text += t;
    if (!ch["finish_reason"].is_null()) *finish = ch["finish_reason"];
  }
  return text;
}

json health(int port) {
  httplib::Client c("127.0.0.1", port);
  auto r = c.Get("/health");
  EXPECT_TRUE(r);
  return r ? json::parse(r->body) : json();
}

json complete(int port, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body);
}

TEST(ServeStreamFixture, ChunksArriveWhileGenerating) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  // 5 ms after each forward pass: the 64-token reply takes at least 320 ms however fast the
  // machine (unpaced, stories260K writes it in ~6 ms, and a busy client thread then sees the
  // chunks bunched whether the server streams or not).
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--batch", "4", "--pace-ms", "5"});
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"temperature", 0}};
  json plain = complete(srv.port(), body);
  std::string want = plain["choices"][0]["text"];
  ASSERT_EQ(plain["usage"]["completion_tokens"], 64) << "stories260K stops early: " << want;

  body["stream"] = true;
  Streamed s = post_stream(srv.port(), "/v1/completions", body);
  ASSERT_EQ(s.status, 200);
  EXPECT_NE(s.content_type.find("text/event-stream"), std::string::npos);
  std::string finish;
  size_t content = 0;
  double first_ms = 0;
  EXPECT_EQ(completion_text(s, &finish, &content, &first_ms), want);
  EXPECT_EQ(finish, plain["choices"][0]["finish_reason"]);
  // About one chunk per token (pieces are joined only on a split UTF-8 character).
  EXPECT_GE(content, 32u);
  // Streaming, not buffering: the first text arrives within the first half of the reply's time
  // (it needs the prefill and one decode step of 64), and the chunks are spread over the rest. A
  // buffering server would deliver every chunk after the last step, at the same moment.
  double done_ms = s.events.back().ms;
  std::printf("64-token stream: first text at %.1f ms, [DONE] at %.1f ms, %zu text chunks\n",
              first_ms, done_ms, content);
  EXPECT_LT(first_ms, 0.5 * done_ms);
  size_t in_second_half = 0;
  for (const auto& e : s.events)
    if (e.ms > 0.5 * done_ms) ++in_second_half;
  EXPECT_GE(in_second_half, 8u);

  // echo: the prompt is the first chunk.
  body["echo"] = true;
  body["max_tokens"] = 8;
  s = post_stream(srv.port(), "/v1/completions", body);
  ASSERT_EQ(s.status, 200);
  ASSERT_GE(s.events.size(), 2u);
  EXPECT_EQ(json::parse(s.events[0].payload)["choices"][0]["text"], "Once upon a time");
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServeStreamFixture, StreamingClientsShareForwardPasses) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  // Paced (3 ms a forward pass), so the four clients overlap however fast the machine.
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--batch", "4", "--pace-ms", "3"});
  const std::vector<std::string> prompts = {"Once upon a time", "Lily and Tom", "The little dog",
                                            "One day, a girl named"};
  std::vector<std::string> want;
  for (auto& p : prompts)
    want.push_back(complete(
        srv.port(), {{"prompt", p}, {"max_tokens", 48}, {"temperature", 0}})["choices"][0]["text"]);
  json h0 = health(srv.port());
  EXPECT_EQ(h0["largest_batch"], 1);  // so far one request at a time

  std::vector<std::string> got(prompts.size());
  std::vector<std::thread> ts;
  for (size_t i = 0; i < prompts.size(); ++i)
    ts.emplace_back([&, i] {
      Streamed s = post_stream(
          srv.port(), "/v1/completions",
          {{"prompt", prompts[i]}, {"max_tokens", 48}, {"temperature", 0}, {"stream", true}});
      std::string finish;
      size_t content = 0;
      double first = 0;
      got[i] = completion_text(s, &finish, &content, &first);
    });
  for (auto& t : ts) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], want[i]) << prompts[i];
  json h = health(srv.port());
  EXPECT_GE(h["largest_batch"].get<int>(), 2) << h.dump();
  EXPECT_EQ(h["active"], 0);
  EXPECT_EQ(h["sequences"], 8);

  // A client that hangs up after two events: its sequence is freed, the server keeps serving.
  Streamed cut = post_stream(
      srv.port(), "/v1/completions",
      {{"prompt", "Once upon a time"}, {"max_tokens", 200}, {"temperature", 0}, {"stream", true}},
      2);
  EXPECT_EQ(cut.events.size(), 2u);
  json h2;
  for (int i = 0; i < 100; ++i) {
    h2 = health(srv.port());
    if (h2["active"] == 0 && h2["sequences"] == 9) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(h2["active"], 0) << h2.dump();
  EXPECT_EQ(h2["sequences"], 9) << h2.dump();
  EXPECT_EQ(complete(srv.port(), {{"prompt", prompts[0]},
                                  {"max_tokens", 48},
                                  {"temperature", 0}})["choices"][0]["text"],
            want[0]);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServeStreamFixture, FullQueueIs503AndTheServerKeepsServing) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  // One completion at a time, one waiting: of 8 simultaneous 240-token requests, the first runs,
  // one waits, and the others (arriving within the first one's generation, which the 3 ms pace
  // stretches to 0.7 s) get 503.
  ServeProcess srv(
      {"-m", model.string(), "--ctx", "256", "--batch", "1", "--queue", "1", "--pace-ms", "3"});
  std::vector<int> status(8, 0);
  std::vector<std::string> bodies(8);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < status.size(); ++i)
    ts.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", srv.port());
      c.set_read_timeout(120, 0);
      json b = {{"prompt", "Once upon a time"}, {"max_tokens", 240}, {"temperature", 0}};
      auto r = c.Post("/v1/completions", b.dump(), "application/json");
      if (r) {
        status[i] = r->status;
        bodies[i] = r->body;
      }
    });
  for (auto& t : ts) t.join();
  size_t ok = 0, full = 0;
  for (size_t i = 0; i < status.size(); ++i) {
    if (status[i] == 200) {
      ++ok;
    } else {
      EXPECT_EQ(status[i], 503) << bodies[i];
      json e = json::parse(bodies[i], nullptr, false);
      ASSERT_TRUE(e.contains("error")) << bodies[i];
      EXPECT_NE(e["error"]["message"].get<std::string>().find("queue is full"), std::string::npos);
      ++full;
    }
  }
  EXPECT_GE(ok, 1u);
  EXPECT_GE(full, 1u);
  // Streaming requests meet the same limit before the stream starts (a 503, not a broken stream).
  json after = complete(srv.port(), {{"prompt", "Lily"}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(after["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
}  // namespace ragform::testing

// Issue 40's eighth pass, through a real `ragform serve` on loopback:
// - G1: replies that list every token or repeat the request were built outside the reply budget:
//   64 prompts of 2,040 tokens with echo and logprobs made a 784 KB request a 5.1 MB reply, and
//   /health's reply_memory.peak stayed 0 (so clients that never read such replies held memory the
//   budget was meant to bound). /v1/completions' log-probs and echo, /v1/score and /v1/rerank's
//   return_documents are now reserved before they are built: /health's peak shows each.
// - G6: /health counted only what completions prefilled: /v1/score and the log-probs of
//   /v1/completions (jobs run on the reader between steps) added nothing to prompt_tokens or
//   prompt_tokens_computed, and max_tokens 0 completions nothing to prompt_tokens. The body
//   budget's counters are shown beside the reply budget's.
// - A reply held in the budget was handed to the library as a content provider, which writes
//   nothing once the server stops: under SIGTERM such a reply went out as its headers alone.
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using json = nlohmann::json;

json health_of(httplib::Client& c) {
  auto h = c.Get("/health");
  if (!h || h->status != 200) return json::object();
  return json::parse(h->body);
}

size_t peak_of(httplib::Client& c) {
  const json h = health_of(c);
  return h.contains("reply_memory") ? h["reply_memory"]["peak"].get<size_t>() : 0;
}

TEST(ServeReplyBudgetPass8, ScoreAndCompletionLogprobsAreHeld) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  // A control character is a token of its own in stories260K's vocabulary (byte fallback).
  const std::string long_prompt(5000, '\x01');
  {
    ServeProcess srv({"-m", model.string(), "--ctx", "8192"});
    httplib::Client c("127.0.0.1", srv.port());
    c.set_read_timeout(300, 0);
    ASSERT_EQ(peak_of(c), 0u);
    auto r = c.Post("/v1/score", json{{"prompt", long_prompt}}.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
    ASSERT_GT(json::parse(r->body)["tokens"].size(), 4000u);
    EXPECT_GE(peak_of(c), r->body.size()) << "/v1/score's reply was not held";
  }
  {
    ServeProcess srv({"-m", model.string(), "--ctx", "8192"});
    httplib::Client c("127.0.0.1", srv.port());
    c.set_read_timeout(300, 0);
    const json body = {
        {"prompt", {long_prompt, long_prompt}}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 0}};
    auto r = c.Post("/v1/completions", body.dump(), "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
    const json reply = json::parse(r->body);
    ASSERT_EQ(reply["choices"].size(), 2u);
    ASSERT_GT(reply["choices"][0]["logprobs"]["tokens"].size(), 4000u);
    EXPECT_GE(peak_of(c), r->body.size()) << "the log-probs' reply was not held";
  }
}

// SIGTERM while a held reply (log-probs of 5,000 tokens) is being made: it is written in full.
TEST(ServeReplyBudgetPass8, AHeldReplyUnderWayAtStopIsWrittenInFull) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "8192", "--pace-ms", "50"});
  int status = 0;
  std::string body;
  std::thread client([&] {
    httplib::Client c("127.0.0.1", srv.port());
    c.set_read_timeout(60, 0);
    const json req = {{"prompt", std::string(5000, '\x01')},
                      {"max_tokens", 20},
                      {"temperature", 0},
                      {"echo", true},
                      {"logprobs", 0}};
    auto r = c.Post("/v1/completions", req.dump(), "application/json");
    if (r) {
      status = r->status;
      body = r->body;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // generating (20 x 50 ms)
  kill(srv.pid(), SIGTERM);
  client.join();
  ASSERT_EQ(status, 200) << body.substr(0, 300);
  const json reply = json::parse(body, nullptr, false);
  ASSERT_FALSE(reply.is_discarded()) << "a cut reply of " << body.size() << " bytes";
  EXPECT_GT(reply["choices"][0]["logprobs"]["tokens"].size(), 5000u);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServeReplyBudgetPass8, RerankReturningDocumentsIsHeld) {
  REQUIRE_SHARED(nli, "fixtures/models/tiny-bert-nli.gguf");
  // (JSON writes the request's control characters as six bytes too: 1.8 MB, above the default
  // --max-body.)
  ServeProcess srv({"-m", nli.string(), "-t", "1", "--max-body", "4000000"});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(300, 0);
  // Control characters: JSON writes each as six bytes, so the reply is larger than the request.
  json docs = json::array();
  for (int i = 0; i < 100; ++i) docs.push_back(std::string(3000, '\x02') + std::to_string(i));
  auto r = c.Post("/v1/rerank",
                  json{{"query", "q"}, {"documents", docs}, {"return_documents", true}}.dump(),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  ASSERT_GT(r->body.size(), size_t(1) << 20);
  EXPECT_GE(peak_of(c), r->body.size()) << "rerank's documents were not held";
}

TEST(ServeHealthPass8, CountsScoringJobsAndTheirTokens) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "1024", "--prefix-cache", "off"});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(120, 0);
  auto post = [&](const std::string& path, const json& body) {
    auto r = c.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body.substr(0, 300) : "no answer");
    return r ? json::parse(r->body) : json::object();
  };
  json h0 = health_of(c);
  ASSERT_TRUE(h0.contains("jobs")) << h0.dump();
  EXPECT_EQ(h0["jobs"], 0);
  EXPECT_EQ(h0["prompt_tokens"], 0);

  // /v1/score: a job; its prompt is admitted and prefilled.
  const json s = post("/v1/score", {{"prompt", "Once upon a time there was a dog named Max"}});
  const size_t scored = s["tokens"].size();
  ASSERT_GT(scored, 5u);
  json h1 = health_of(c);
  EXPECT_EQ(h1["jobs"], 1);
  EXPECT_GE(h1["prompt_tokens"].get<size_t>(), scored) << h1.dump();
  EXPECT_GE(h1["prompt_tokens_computed"].get<size_t>(), scored) << h1.dump();
  EXPECT_EQ(h1["steps"], 0);

  // max_tokens 0 without log-probs: admitted, nothing prefilled.
  const json m = post("/v1/completions", {{"prompt", "The cat sat on a mat"}, {"max_tokens", 0}});
  const size_t admitted = m["usage"]["prompt_tokens"].get<size_t>();
  json h2 = health_of(c);
  EXPECT_EQ(h2["prompt_tokens"].get<size_t>(), h1["prompt_tokens"].get<size_t>() + admitted);
  EXPECT_EQ(h2["prompt_tokens_computed"], h1["prompt_tokens_computed"]);
  EXPECT_EQ(h2["sequences"].get<int>(), h1["sequences"].get<int>() + 1);

  // echo and logprobs with max_tokens 0: the prompt is scored, a job that prefills it.
  post("/v1/completions", {{"prompt", "A bird flew over the green hill and sang"},
                           {"max_tokens", 0},
                           {"echo", true},
                           {"logprobs", 0}});
  json h3 = health_of(c);
  EXPECT_EQ(h3["jobs"], 2);
  EXPECT_GT(h3["prompt_tokens_computed"].get<size_t>(), h2["prompt_tokens_computed"].get<size_t>());

  // The body budget's counters are shown too: a 64 KiB body held 32 bytes a byte while parsed.
  ASSERT_TRUE(h3.contains("body_memory")) << h3.dump();
  EXPECT_EQ(h3["body_memory"]["peak"], 0);
  const std::string body = R"({"prompt": "Once")" + std::string(65536, ' ') + "}";
  auto r = c.Post("/v1/score", body, "application/json");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_GE(health_of(c)["body_memory"]["peak"].get<size_t>(), 32 * body.size());
}

}  // namespace
}  // namespace ragform::testing

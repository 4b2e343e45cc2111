// `ragform serve` on loopback: concurrent large replies share one server-wide budget of reply
// memory (issue 40, leftover of the last pass; server/reply_budget.h). Each /v1/attention reply
// was bounded (2^21 weights, 64 MiB), but every request built its whole reply at once: 8
// concurrent replies of 39 MB took the server from 18 MB to 1.1 GB, and --max-connections 256 of
// them could ask for 40 GB.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server/raw_http.h"
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;

// The largest reply stories260K gives under the weights limit: a 401-token prompt, 5 layers x 116
// late query positions x (8 heads + the mean) x up to 401 keys = 2,093,220 weights, 39 MB of JSON.
std::string largest_attention_request() {
  std::string prompt = "the";
  for (int i = 1; i < 400; ++i) prompt += " the";
  json q = json::array();
  for (int p = 285; p <= 400; ++p) q.push_back(p);
  return json{{"prompt", prompt}, {"layers", {0, 1, 2, 3, 4}}, {"query_positions", q}}.dump();
}

TEST(ServeHardening4, ConcurrentLargeRepliesShareTheReplyBudget) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "512"});
  const std::string body = largest_attention_request();
  auto ask = [&](std::string* out, int* status) {
    httplib::Client c("127.0.0.1", srv.port());
    c.set_read_timeout(300, 0);
    c.set_write_timeout(300, 0);
    auto r = c.Post("/v1/attention", body, "application/json");
    *status = r ? r->status : -1;
    if (r) *out = std::move(r->body);
  };
  // One alone: its size, and the server's memory with one such reply.
  std::string one;
  int st = 0;
  ask(&one, &st);
  ASSERT_EQ(st, 200) << one.substr(0, 300);
  ASSERT_GT(one.size(), size_t(30) << 20);
  const json first = json::parse(one);
  ASSERT_EQ(first["rows"].size(), 580u);
  const long alone_kib = srv.peak_rss_kib();
  // Eight at once: each is answered in full, and the server holds no more than its budget of
  // replies (256 MiB) beside what it held before. Without the budget: 1.1 GB.
  constexpr int kClients = 8;
  std::vector<std::string> replies(kClients);
  std::vector<int> status(kClients, 0);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back(ask, &replies[size_t(i)], &status[size_t(i)]);
  for (auto& t : clients) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(status[size_t(i)], 200) << replies[size_t(i)].substr(0, 300);
    EXPECT_EQ(replies[size_t(i)], one) << "client " << i;
  }
  const long peak_kib = srv.peak_rss_kib();
  EXPECT_LT(peak_kib, alone_kib + 300 * 1024)
      << "one reply: " << alone_kib << " KiB peak; eight at once: " << peak_kib << " KiB";
  EXPECT_LT(seconds, 120.0);
  // /health answered throughout, and the server is still whole.
  httplib::Client c("127.0.0.1", srv.port());
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// Clients that ask for large replies and never read them hold the budget (until the write
// timeout): the server's memory stays bounded, and /health and small replies are not delayed.
TEST(ServeHardening4, StalledReadersHoldTheBudgetButNotSmallReplies) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "512"});
  const std::string body = largest_attention_request();
  const std::string request =
      "POST /v1/attention HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  std::vector<RawSocket> stalled;
  for (int i = 0; i < 12; ++i) {
    stalled.emplace_back(srv.port());
    ASSERT_TRUE(stalled.back().ok());
    ASSERT_TRUE(stalled.back().send(request));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // replies built and stuck in sockets
  EXPECT_LT(srv.peak_rss_kib(), 450 * 1024) << "12 unread 39 MB replies (old: 12 x 150 MB)";
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(10, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto small = c.Post("/v1/attention", R"({"prompt": "Once upon a time", "layers": [0]})",
                      "application/json");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200) << small->body;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// /v1/retrieve's hits carry their passages, whose size the index decides (second pass): 1,024
// questions x k = 20 over 100 KB passages, a 17 KB request, held 2 GB of hits and their JSON
// twice (5.2 GB, then a 500 bad_alloc). The reply is counted as it is built and refused past
// 64 MiB, before the rest is retrieved.
TEST(ServeHardening4, RetrieveRepliesAreBoundedInBytesNotOnlyInHits) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("serve-hardening4-retrieve");
  {
    std::ofstream c(dir / "corpus.jsonl");
    std::string text;
    for (int w = 0; w < 6000; ++w) text += "river city ";
    for (int i = 0; i < 20; ++i)
      c << json{{"id", "L" + std::to_string(i)},
                {"title", "T" + std::to_string(i)},
                {"text", text + "w" + std::to_string(i)}}
               .dump()
        << "\n";
  }
  auto built = run_ragform("index build --corpus " + quoted(dir / "corpus.jsonl") + " -o " +
                           quoted(dir / "ix"));
  ASSERT_EQ(built.exit_code, 0) << built.err;
  ServeProcess srv({"-m", model.string(), "--ctx", "512", "--index", (dir / "ix").string()});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(120, 0);
  // Small: answered, every hit with its whole passage.
  auto one = c.Post("/v1/retrieve", R"({"question": "river city", "k": 3})", "application/json");
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200) << one->body.substr(0, 300);
  const json j = json::parse(one->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["k"], 3);
  EXPECT_EQ(j["mode"], "bm25");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_GT(one->body.size(), size_t(3 * 60000));
  // 1,024 questions x 20 hits of 66 KB: refused at the limit, quickly and in bounded memory.
  json qs = json::array();
  for (int i = 0; i < 1024; ++i) qs.push_back("river city");
  const auto t0 = std::chrono::steady_clock::now();
  auto big = c.Post("/v1/retrieve", json{{"questions", qs}, {"k", 20}}.dump(), "application/json");
  const std::string msg = expect_api_error(big, 400);
  EXPECT_NE(msg.find("more than 67108864 bytes"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
  EXPECT_LT(srv.peak_rss_kib(), 600 * 1024);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// /v1/rag/spotlight: the sentences of all documents are bounded, not only the documents (second
// pass: 256 documents of 700 one-word sentences, a 904 KB request, took 1.7 GB and 21 s and made
// a 62 MB reply; 256 texts of 1,300 sentences ran 121 s).
TEST(ServeHardening4, SpotlightSentencesAreBounded) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "512", "--spotlight-encoder", "hidden"});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(120, 0);
  auto request = [](size_t docs, size_t sentences) {
    json ds = json::array();
    for (size_t d = 0; d < docs; ++d)
      ds.push_back({{"title", "t"}, {"sentences", std::vector<std::string>(sentences, "a")}});
    return json{{"question", "a a?"}, {"documents", ds}, {"K", 1 << 20}, {"k", 1 << 20}}.dump();
  };
  auto small = c.Post("/v1/rag/spotlight", request(8, 5), "application/json");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200) << small->body.substr(0, 300);
  const auto t0 = std::chrono::steady_clock::now();
  auto big = c.Post("/v1/rag/spotlight", request(256, 700), "application/json");
  const std::string msg = expect_api_error(big, 400);
  EXPECT_NE(msg.find("179200 sentences in the documents, more than the limit of 8192"),
            std::string::npos)
      << msg;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  EXPECT_LT(srv.peak_rss_kib(), 300 * 1024);
}

}  // namespace
}  // namespace ragform::testing

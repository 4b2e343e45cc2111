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

#include <chrono>
#include <cstdio>
#include <fstream>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "server/raw_cases.h"
#include "server/raw_http.h"
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

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
  ServeProcess srv({"-m", model.string(), "--ctx", "256"}, 120, address_space_limit(2000000));
  // The values sit in a field the route declares and does not read (an undeclared one is refused
  // before the body is parsed: request_fields.h), so every body is parsed whole.
  std::string body = R"({"prompt": "a", "max_tokens": 1, "metadata": {"zz": [)";
  for (int i = 0; i < 340000; ++i) body += i ? ",{}" : "{}";
  body += "]}}";
  const std::vector<int> status = post_at_once(srv.port(), "/v1/completions", body, 100);
  for (size_t i = 0; i < status.size(); ++i)
    EXPECT_TRUE(status[i] == 200 || status[i] == 503)
        << "request " << i << ": " << status[i] << " (-1: no answer, the server died)";
  expect_alive(srv);
}

}  // namespace
}  // namespace ragform::testing

namespace ragform::testing {
namespace {

using nlohmann::json;

const std::string kSmuggled = "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

// Sixth pass, E9: a header line over cpp-httplib's 8 KiB got its 400 on a connection kept open,
// so the rest of the request, a request in its body included, was answered on its own (5
// responses to one POST). E7: two different Content-Length values (or one beside
// Transfer-Encoding) were taken as the first, and the bytes after it as the next request. Each is
// now one refusal and a closed connection.
TEST(ServeFraming, RefusedRequestsCloseAndCarryNoSmuggledRequest) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  expect_raw_cases(
      srv,
      {
          {"a 9,000-byte header line",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(9000, 'v') +
               "\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(kSmuggled.size()) + "\r\n\r\n" + kSmuggled,
           "431", "8190 bytes a line"},
          {"two Content-Length values",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\nContent-Length: " +
               std::to_string(body.size() + kSmuggled.size()) + "\r\n\r\n" + body + kSmuggled,
           "400", "conflicting framing"},
          // Seventh pass, F1: a Content-Length that is not one decimal number was read by its
          // leading digits; F2: a Transfer-Encoding but "chunked" was read as no body.
          {"Content-Length '0, 36'",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 0, " +
               std::to_string(kSmuggled.size()) + "\r\n\r\n" + kSmuggled,
           "400", "conflicting framing"},
          {"Content-Length '+0'",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: +0\r\n\r\n" + kSmuggled,
           "400", "conflicting framing"},
          {"Transfer-Encoding gzip",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" +
               kSmuggled,
           "400", "conflicting framing"},
          {"Transfer-Encoding 'gzip, chunked'",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, "
           "chunked\r\n\r\n0\r\n\r\n" +
               kSmuggled,
           "400", "conflicting framing"},
          // Eighth pass, G7: whitespace before a field's colon hid Transfer-Encoding from the check
          // while the library read it; a folded line extended a Content-Length.
          {"'Transfer-Encoding : chunked' beside Content-Length",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\nTransfer-Encoding : chunked\r\n\r\n" + body +
               kSmuggled,
           "400", "conflicting framing"},
          {"a folded Content-Length",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n 5\r\n\r\n" + body + kSmuggled,
           "400", "conflicting framing"},
          {"a header line without a colon",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length " +
               std::to_string(body.size()) + "\r\n\r\n" + body + kSmuggled,
           "400", "conflicting framing"},
          // F6: a declared body over --max-body is refused at the headers, not read and dropped.
          {"Content-Length of 1 TB",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: "
           "1000000000000\r\n\r\n",
           "413", "request body too large"},
          {"Content-Length beside Transfer-Encoding",
           "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: "
           "chunked\r\n\r\n0\r\n\r\n" +
               kSmuggled,
           "400", "conflicting framing"},
      });
  // The same Content-Length twice is one length: served.
  RawSocket s(srv.port());
  const auto same = s.exchange(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: "
      "close\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\n\r\n" + body,
      30);
  ASSERT_TRUE(same);
  EXPECT_EQ(status_of(*same), "200") << *same;
}

// Sixth pass, E2: a chunked body's size line (with a 200 MB extension) and its trailers were read
// whole (one request held 300 MB; 16 at once, 1.3 GB and 500s). Bounded now: 4,096 bytes a size
// line, 64 KiB of trailers; a body with a short extension is served as before.
TEST(ServeFraming, ChunkSizeLinesAndTrailersAreBounded) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const std::string body = R"({"prompt":"a","max_tokens":1})";
  auto chunked = [&](const std::string& size_line_tail, const std::string& trailers) {
    char size[16];
    std::snprintf(size, sizeof size, "%zx", body.size());
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
           "application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
           std::string(size) + size_line_tail + "\r\n" + body + "\r\n0\r\n" + trailers + "\r\n";
  };
  {
    RawSocket s(srv.port());
    const auto got = s.exchange(chunked(";a=b", ""), 30);
    ASSERT_TRUE(got);
    EXPECT_EQ(status_of(*got), "200") << *got;
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {chunked(";a=" + std::string(100000, 'b'), ""), "size line"},
      {chunked("", "X-T: " + std::string(100000, 't') + "\r\n"), "trailer"},
      // Seventh pass, F8: the library refuses any trailer; it is said, not "could not be read".
      {chunked("", "X: y\r\n"), "trailer fields after a chunked body are not accepted"}};
  for (const auto& [request, why] : refused) {
    RawSocket s(srv.port());
    s.send(request);  // the server may close before all of it is sent
    const auto got = s.read_until_close(30);
    ASSERT_TRUE(got) << "no answer";
    EXPECT_EQ(status_of(*got), "400") << got->substr(0, 300);
    EXPECT_NE(got->find(why), std::string::npos) << got->substr(0, 300);
  }
  EXPECT_LT(srv.peak_rss_kib(), 400 * 1024);
}

// Sixth pass, E3: connection threads had 8 MiB stacks, address space `ulimit -v` counts: 200
// connections that sent half a request line and closed left ~190 threads holding 1.5 GB of it,
// and a valid request then got 503 out_of_memory. A connection thread's stack is 2 MiB now.
TEST(ServeFraming, ClosedConnectionsLeaveLittleAddressSpace) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  const long before = srv.vm_kib();
  {
    std::vector<RawSocket> conns;
    for (int i = 0; i < 200; ++i) {
      conns.emplace_back(srv.port());
      conns.back().send("GET /hea");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long after = srv.vm_kib();
  EXPECT_LT(after - before, 800L * 1024) << before << " KiB before, " << after << " after";
  expect_alive(srv);
}

// Sixth pass, E5: /v1/rag/present replies (7.7x their body: each record's documents in its
// prompt and in its list) were built outside the reply budget, and 150 clients that never read
// them ended a server. The reply is reserved before it is built: /health's peak shows it.
TEST(ServeFraming, PresentRepliesAreReservedInTheReplyBudget) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256"});
  json records = json::array();
  for (int i = 0; i < 2000; ++i)
    records.push_back({{"id", "r" + std::to_string(i)},
                       {"question", "q"},
                       {"answers", {"a"}},
                       {"ctxs", {{{"title", "t"}, {"text", "x y z"}}}}});
  const json profile = sample_tune_profile();
  const std::string body = json{{"profile", profile}, {"records", records}}.dump();
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/rag/present", body, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  const json health = json::parse(h->body);
  EXPECT_GE(health["reply_memory"]["peak"].get<size_t>(), r->body.size()) << health.dump();
}

// Sixth pass, E8: /v1/retrieve copies a question object's other fields into its row, outside both
// budgets (1 MB of empty objects in one field: 27 MB a copy; 100 such requests at once ended a
// server). The fields are moved, not copied, and their row's trees are reserved in the reply
// budget: /health's peak shows it.
TEST(ServeFraming, RetrieveCountsTheFieldsItEchoes) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("serve-framing-retrieve");
  {
    std::ofstream c(dir / "corpus.jsonl");
    for (int i = 0; i < 5; ++i)
      c << json{{"id", "L" + std::to_string(i)},
                {"title", "T"},
                {"text", "river city " + std::to_string(i)}}
               .dump()
        << "\n";
  }
  auto built = run_ragform("index build --corpus '" + (dir / "corpus.jsonl").string() + "' -o '" +
                           (dir / "ix").string() + "'");
  ASSERT_EQ(built.exit_code, 0) << built.err;
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--index", (dir / "ix").string()});
  json zz = json::array();
  for (int i = 0; i < 30000; ++i) zz.push_back(json::object());
  const std::string body =
      json{{"questions", {{{"id", "x"}, {"question", "river"}, {"zz", zz}}}}, {"k", 1}}.dump();
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(120, 0);
  auto r = c.Post("/v1/retrieve", body, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  EXPECT_NE(r->body.find("\"zz\""), std::string::npos);  // still echoed
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  const json health = json::parse(h->body);
  EXPECT_GE(health["reply_memory"]["peak"].get<size_t>(), 32 * body.size()) << health.dump();
}

// Seventh pass, F5: /v1/rag/normalize replies (each whitespace run becomes the delimiter, up to 16
// bytes that JSON may write six times over: 48x the body) were outside the reply budget. F7:
// /v1/rag/spotlight repeats each document's title and id in every selected sentence (a 74 KB
// request made a 200 MB reply): counted, and refused past the reply limit.
TEST(ServeFraming, NormalizeAndSpotlightRepliesAreCounted) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(vectors, "data/embeddings/glove-50d-5k.json");
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--vectors", vectors.string()});
  httplib::Client c("127.0.0.1", srv.port());
  c.set_read_timeout(120, 0);
  const json profile = {{"model_sha256", std::string(64, '0')},
                        {"task", "qa"},
                        {"p", 1.0},
                        {"seed", 1},
                        {"S", 6},
                        {"best", "-"},
                        {"candidates",
                         {{{"delimiter", "none"}, {"abs_mean", 0.5}, {"abs_std", 0.1}},
                          {{"delimiter", "-"}, {"abs_mean", 0.6}, {"abs_std", 0.1}}}}};
  std::vector<std::string> docs(2000, "the city by the river had a king and a war and a song");
  auto r = c.Post("/v1/rag/normalize", json{{"profile", profile}, {"documents", docs}}.dump(),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_GE(json::parse(h->body)["reply_memory"]["peak"].get<size_t>(), size_t(1) << 20) << h->body;
  // A 50 KB title over 4,000 one-word sentences: refused before anything is built.
  json sentences = json::array();
  for (int i = 0; i < 4000; ++i) sentences.push_back("a.");
  const std::string spot = json{
      {"question", "a"},
      {"documents", {{{"title", std::string(50000, 't')}, {"sentences", sentences}}}},
      {"K", 4000}}.dump();
  const std::string msg =
      expect_api_error(c.Post("/v1/rag/spotlight", spot, "application/json"), 400);
  EXPECT_NE(msg.find("titles and ids"), std::string::npos) << msg;
  EXPECT_LT(srv.peak_rss_kib(), 600 * 1024);
}

}  // namespace
}  // namespace ragform::testing

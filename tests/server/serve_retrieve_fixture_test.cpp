// POST /v1/retrieve on `ragform serve --index DIR` (server/api_retrieve.h): the answer equals
// `ragform retrieve --json` on the same index for bm25, dense and hybrid; the request errors are
// 4xx in the API's error shape; concurrent requests (served in parallel from a pool of retrievers)
// each get the sequential answer; a reader model without the index's encoder offers bm25 only.
// (Dense queries search FAISS on OpenMP threads: no "_concurrency" in this file's name, so it
// stays out of the TSan build.)
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "retrieval/make_corpus.h"
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

httplib::Result post(const ServeProcess& s, const std::string& body) {
  httplib::Client c("127.0.0.1", s.port());
  return c.Post("/v1/retrieve", body, "application/json");
}

// The first n passages of the NQ corpus as a corpus file; the questions are made from their
// titles so every mode finds something.
fs::path small_corpus(const fs::path& dir, size_t n, std::vector<std::string>* titles) {
  auto corpus = make_corpus(dir, "nq");
  std::ifstream in(corpus);
  std::ofstream out(dir / "small.jsonl");
  std::string line;
  for (size_t i = 0; i < n && std::getline(in, line); ++i) {
    out << line << "\n";
    titles->push_back(json::parse(line)["title"]);
  }
  return dir / "small.jsonl";
}

// ctxs' ids of a row, in rank order.
std::vector<std::string> ids_of(const json& row) {
  std::vector<std::string> v;
  for (const auto& c : row["ctxs"]) v.push_back(c["id"]);
  return v;
}

TEST(ServeRetrieve, MatchesRetrieveCliInEveryModeAndServesInParallel) {
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  auto dir = temp_dir("serve-retrieve");
  std::vector<std::string> titles;
  auto corpus = small_corpus(dir, 200, &titles);
  auto r = run_ragform("index build --corpus " + quoted(corpus) + " -o " + quoted(dir / "ix") +
                       " --dense -m " + quoted(bert) + " --faiss hnsw");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // Questions: "who is <title>?" for a few passages, plus the CLI's answer for each mode.
  std::vector<std::string> qs;
  {
    std::ofstream q(dir / "q.jsonl");
    for (size_t i = 0; i < 6; ++i) {
      qs.push_back("who or what is " + titles[i * 30] + "?");
      q << json{{"id", "q" + std::to_string(i)}, {"question", qs.back()}}.dump() << "\n";
    }
  }
  std::map<std::string, std::vector<json>> cli;
  std::map<std::string, std::vector<std::string>> cli_lines;
  for (const char* mode : {"bm25", "dense", "hybrid"}) {
    auto c = run_ragform("retrieve --index " + quoted(dir / "ix") + " --input " +
                         quoted(dir / "q.jsonl") + " -k 5 --json --mode " + mode +
                         (std::string(mode) == "bm25" ? "" : " -m " + quoted(bert)));
    ASSERT_EQ(c.exit_code, 0) << c.err;
    cli[mode] = json_lines(c.out);
    ASSERT_EQ(cli[mode].size(), qs.size());
    std::istringstream lines(c.out);
    for (std::string line; std::getline(lines, line);) cli_lines[mode].push_back(line);
  }

  ServeProcess s({"-m", bert.string(), "-t", "1", "--index", (dir / "ix").string()});
  for (const char* mode : {"bm25", "dense", "hybrid"}) {
    json req = {{"questions", json::array()}, {"k", 5}, {"mode", mode}};
    for (size_t i = 0; i < qs.size(); ++i)
      req["questions"].push_back({{"id", "q" + std::to_string(i)}, {"question", qs[i]}});
    auto a = post(s, req.dump());
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 200) << a->body;
    json j = json::parse(a->body);
    // Each row is the CLI's line, byte for byte (pass 22: its keys were sorted here).
    const auto ordered = nlohmann::ordered_json::parse(a->body);
    for (size_t i = 0; i < qs.size() && i < cli_lines[mode].size(); ++i)
      EXPECT_EQ(ordered["data"][i].dump(), cli_lines[mode][i]) << mode << " question " << i;
    EXPECT_EQ(j["object"], "list");
    EXPECT_EQ(j["mode"], mode);
    EXPECT_EQ(j["k"], 5);
    ASSERT_EQ(j["data"].size(), qs.size());
    for (size_t i = 0; i < qs.size(); ++i) {
      const json& row = j["data"][i];
      EXPECT_EQ(row["id"], "q" + std::to_string(i));
      ASSERT_EQ(row["ctxs"].size(), 5u) << mode;
      EXPECT_EQ(ids_of(row), ids_of(cli[mode][i])) << mode << " question " << i;
      for (size_t c = 0; c < 5; ++c) {
        EXPECT_EQ(row["ctxs"][c]["rank"], int(c) + 1);
        EXPECT_NEAR(row["ctxs"][c]["score"].get<double>(),
                    cli[mode][i]["ctxs"][c]["score"].get<double>(), 1e-5);
      }
    }
  }
  // A single string question gets the id "q0"; the default k is 20 (the index holds 200).
  {
    auto a = post(s, json{{"question", qs[0]}}.dump());
    ASSERT_TRUE(a);
    ASSERT_EQ(a->status, 200) << a->body;
    json j = json::parse(a->body);
    EXPECT_EQ(j["data"][0]["id"], "q0");
    EXPECT_EQ(j["data"][0]["ctxs"].size(), 20u);
    EXPECT_EQ(j["mode"], "bm25");
  }

  // Errors: 4xx in the API's error shape, naming the field.
  EXPECT_NE(
      expect_api_error(post(s, R"({"question": "x", "mode": "sparse"})"), 400).find("field 'mode'"),
      std::string::npos);
  // k is retrieve's declared option (retrieval/retrieve_options.h): the same 0 is refused by the
  // CLI and the server, each naming it its way; above this server's own limit the server says so.
  EXPECT_NE(expect_api_error(post(s, R"({"question": "x", "k": 0})"), 400)
                .find("'k' = 0 is outside [1, 100000]"),
            std::string::npos);
  EXPECT_NE(expect_api_error(post(s, R"({"question": "x", "k": 1001})"), 400)
                .find("'k' = 1001 is outside [1, 1000] (this server's limit)"),
            std::string::npos);
  {
    const auto c = run_ragform("retrieve --index " + quoted(dir / "ix") + " --input " +
                               quoted(dir / "q.jsonl") + " -k 0");
    EXPECT_EQ(c.exit_code, 2) << c.err;
    EXPECT_NE(c.err.find("ragform: -k: value out of range: 0 (accepted: 1..100000)"),
              std::string::npos)
        << c.err;
  }
  // null is absent, as for every optional field: the declared default mode, bm25.
  {
    auto a = post(s, R"({"question": "x", "k": 2, "mode": null})");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 200) << a->body;
    EXPECT_EQ(json::parse(a->body)["mode"], "bm25");
  }
  expect_api_error(post(s, R"({"questions": []})"), 400);
  expect_api_error(post(s, R"({"questions": [3]})"), 400);
  EXPECT_NE(expect_api_error(post(s, R"({"k": 3})"), 400).find("question"), std::string::npos);
  expect_api_error(post(s, "not json"), 400);
  {
    httplib::Client c("127.0.0.1", s.port());
    expect_api_error(c.Get("/v1/retrieve"), 405);
  }

  // Concurrent requests in every mode: each answer is the sequential one.
  std::vector<std::thread> ts;
  std::atomic<int> wrong{0}, done{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      const char* modes[] = {"bm25", "dense", "hybrid"};
      for (int i = 0; i < 12; ++i) {
        const size_t qi = size_t(t + i) % qs.size();
        const char* mode = modes[size_t(t + i) % 3];
        auto a = post(s, json{{"question", qs[qi]}, {"k", 5}, {"mode", mode}}.dump());
        if (!a || a->status != 200 ||
            ids_of(json::parse(a->body)["data"][0]) != ids_of(cli[mode][qi]))
          ++wrong;
        ++done;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(done.load(), 48);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(s.stop(), 0);
}

TEST(ServeRetrieve, ReaderWithoutTheIndexEncoderOffersBm25Only) {
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  REQUIRE_SHARED(reader, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("serve-retrieve-reader");
  std::vector<std::string> titles;
  auto corpus = small_corpus(dir, 50, &titles);
  auto r = run_ragform("index build --corpus " + quoted(corpus) + " -o " + quoted(dir / "ix") +
                       " --dense -m " + quoted(bert));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ServeProcess s({"-m", reader.string(), "-t", "1", "--index", (dir / "ix").string()});
  auto a = post(s, json{{"question", titles[3]}, {"k", 3}}.dump());
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  EXPECT_EQ(json::parse(a->body)["data"][0]["ctxs"].size(), 3u);
  const std::string m =
      expect_api_error(post(s, json{{"question", titles[3]}, {"mode", "dense"}}.dump()), 400);
  EXPECT_NE(m.find("no encoder model"), std::string::npos) << m;
  // The model's own API still answers beside /v1/retrieve.
  httplib::Client c("127.0.0.1", s.port());
  auto h = c.Get("/v1/models");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);

  // Found by schemathesis (scripts/api-fuzz.sh): a NUL byte in a question ended FTS5's query
  // inside a quoted word, a 500 "query: unterminated string"; now a separator like a space.
  auto nul = post(s, json{{"question", titles[3] + std::string(1, '\0') + "\"x"}, {"k", 3}}.dump());
  ASSERT_TRUE(nul);
  EXPECT_EQ(nul->status, 200) << nul->body;
  // Both 'question' and 'questions': the list was silently ignored; now a 400.
  const std::string both =
      expect_api_error(post(s, json{{"question", "a"}, {"questions", {"b", "c"}}}.dump()), 400);
  EXPECT_NE(both.find("not both"), std::string::npos) << both;
}

}  // namespace
}  // namespace ragform::testing

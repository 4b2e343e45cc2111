// `ragform serve` running an encoder model: /v1/embeddings and /v1/rerank in their documented
// shapes, 4xx on bad input, and the RemoteEncoder (reader/remote_encoder.h) against it giving the
// NativeEncoder's numbers (same model, same engine: equal within float printing), and checking
// every field of a server's answers.
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "reader/native_encoder.h"
#include "reader/remote_encoder.h"
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {
using nlohmann::json;

httplib::Result post(const ServeProcess& s, const std::string& path, const std::string& body) {
  httplib::Client c("127.0.0.1", s.port());
  return c.Post(path, body, "application/json");
}

// The float32 values of a base64 embedding (little-endian bytes), decoded here independently of
// the server's encoder.
std::vector<float> floats_of_base64(const std::string& b64) {
  const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : b64) {
    if (ch == '=') break;
    const size_t d = digits.find(ch);
    EXPECT_NE(d, std::string::npos) << "not a base64 digit: " << ch;
    acc = (acc << 6) | uint32_t(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += char((acc >> bits) & 0xff);
    }
  }
  EXPECT_EQ(bytes.size() % 4, 0u);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

// `encoding_format: "base64"`, what the OpenAI SDKs send unless told otherwise (it was a 400):
// each vector's float32 bytes, the same values as the float reply; per token, a string per token.
// `dimensions` may name the model's width only; `user` is metadata.
TEST(ServeEncoder, Base64EmbeddingsAreTheFloatReplysBytes) {
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  ServeProcess emb({"-m", bert.string(), "-t", "1"});
  const auto reply = [&](const std::string& extra) {
    auto r = post(emb, "/v1/embeddings",
                  R"({"input": ["The capital of France is", "Paris"])" + extra + "}");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    return r ? json::parse(r->body) : json();
  };
  const json f = reply(""), b = reply(R"(, "encoding_format": "base64", "user": "u1")");
  ASSERT_EQ(b["data"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(b["data"][i]["embedding"].is_string());
    const std::vector<float> v = floats_of_base64(b["data"][i]["embedding"]);
    ASSERT_EQ(v.size(), f["data"][i]["embedding"].size());
    for (size_t k = 0; k < v.size(); ++k)
      EXPECT_EQ(v[k], f["data"][i]["embedding"][k].get<float>()) << i << " " << k;
  }
  const size_t width = f["data"][0]["embedding"].size();
  EXPECT_EQ(reply(R"(, "dimensions": )" + std::to_string(width))["data"].size(), 2u);
  auto no = post(emb, "/v1/embeddings", R"({"input": "Paris", "dimensions": 8})");
  ASSERT_TRUE(no);
  EXPECT_EQ(no->status, 400);
  EXPECT_NE(no->body.find("this model's vectors have " + std::to_string(width)), std::string::npos)
      << no->body;
  const json tok = reply(R"(, "encoding_format": "base64", "pooling": "none")");
  const json ftok = reply(R"(, "pooling": "none")");
  ASSERT_TRUE(tok["data"][1]["embedding"].is_array());
  ASSERT_EQ(tok["data"][1]["embedding"].size(), ftok["data"][1]["embedding"].size());
  EXPECT_EQ(floats_of_base64(tok["data"][1]["embedding"][0]).size(), width);
  EXPECT_EQ(emb.stop(), 0) << emb.log();
}

TEST(ServeEncoder, EmbeddingsAndRerankShapesErrorsAndRemoteEncoder) {
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  REQUIRE_SHARED(nli, "fixtures/models/tiny-bert-nli.gguf");
  ServeProcess emb({"-m", bert.string(), "-t", "1"});
  ServeProcess cls({"-m", nli.string(), "-t", "1"});
  {
    httplib::Client c("127.0.0.1", emb.port());
    auto h = c.Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(json::parse(h->body)["encoder"], "native:tiny-bert.gguf");
  }

  // OpenAI shape; normalised by default, as OpenAI-style servers return them.
  auto r = post(emb, "/v1/embeddings", R"({"input": ["The capital of France is", "Paris"]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "tiny-bert");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][0]["object"], "embedding");
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7 + 3);
  double n2 = 0;
  for (auto& v : j["data"][0]["embedding"]) n2 += v.get<double>() * v.get<double>();
  EXPECT_NEAR(n2, 1.0, 1e-5);

  // The remote encoder against the server equals the native one on the same file.
  reader::NativeEncoderOptions no;
  no.engine.threads = 1;
  reader::NativeEncoder native(bert.string(), no);
  reader::RemoteEncoder remote({emb.url(), "", "", 0, 0.1, 30, 64});
  const std::vector<std::string> texts{"The capital of France is", "a second, longer text here"};
  for (auto pooling : {std::optional<reader::Pooling>{}, std::optional(reader::Pooling::Cls),
                       std::optional(reader::Pooling::None)}) {
    auto a = native.embed(texts, pooling, false);
    auto b = remote.embed(texts, pooling, false);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const auto& va = pooling == reader::Pooling::None ? a[i].token_vectors : a[i].vector;
      const auto& vb = pooling == reader::Pooling::None ? b[i].token_vectors : b[i].vector;
      ASSERT_EQ(va.size(), vb.size());
      for (size_t k = 0; k < va.size(); ++k) EXPECT_NEAR(va[k], vb[k], 1e-6);
      EXPECT_EQ(a[i].n_tokens, b[i].n_tokens);
      if (pooling == reader::Pooling::None) {
        EXPECT_EQ(a[i].pieces, b[i].pieces);
      }
    }
  }

  // Rerank: every document scored as a pair, highest first, top_n.
  auto rr = post(
      cls, "/v1/rerank",
      R"({"query": "The capital of France is", "documents": ["Paris.", "Berlin is in Germany.", "cats"], "top_n": 2, "return_documents": true})");
  ASSERT_TRUE(rr);
  ASSERT_EQ(rr->status, 200) << rr->body;
  json jr = json::parse(rr->body);
  ASSERT_EQ(jr["results"].size(), 2u);
  EXPECT_GE(jr["results"][0]["relevance_score"].get<double>(),
            jr["results"][1]["relevance_score"].get<double>());
  EXPECT_EQ(jr["results"][0]["labels"], json({"entailment", "neutral", "contradiction"}));
  EXPECT_TRUE(jr["results"][0]["document"].contains("text"));
  reader::NativeEncoder native_nli(nli.string(), no);
  reader::RemoteEncoder remote_nli({cls.url(), "", "", 0, 0.1, 30, 64});
  const std::vector<reader::TextPair> pairs{{"The capital of France is", std::string("Paris.")},
                                            {"cats", std::string("dogs")}};
  auto ca = native_nli.classify(pairs), cb = remote_nli.classify(pairs);
  ASSERT_EQ(cb.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ca[i].labels, cb[i].labels);
    ASSERT_EQ(ca[i].scores.size(), cb[i].scores.size());
    for (size_t k = 0; k < ca[i].scores.size(); ++k) {
      EXPECT_NEAR(ca[i].scores[k], cb[i].scores[k], 1e-6);
      EXPECT_NEAR(ca[i].probs[k], cb[i].probs[k], 1e-6);
    }
  }
  EXPECT_THROW(remote_nli.classify({{"alone", std::nullopt}}), NotSupported);

  // 4xx on bad input.
  expect_api_error(post(emb, "/v1/embeddings", "not json"), 400);
  expect_api_error(post(emb, "/v1/embeddings", R"({"input": []})"), 400);
  expect_api_error(post(emb, "/v1/embeddings", R"({"input": [1, 2]})"), 400);
  expect_api_error(post(emb, "/v1/embeddings", R"({"input": 5})"), 400);
  expect_api_error(post(emb, "/v1/embeddings", R"({})"), 400);
  expect_api_error(post(emb, "/v1/embeddings", R"({"input": "x", "pooling": "sum"})"), 400);
  expect_api_error(post(emb, "/v1/embeddings", R"({"input": "x", "encoding_format": "binary"})"),
                   400);
  expect_api_error(post(emb, "/v1/embeddings", R"({"input": "x", "model": "other"})"), 404);
  expect_api_error(post(emb, "/v1/rerank", R"({"query": "q", "documents": ["d"]})"),
                   400);  // no head
  expect_api_error(post(emb, "/v1/completions", R"({"prompt": "x"})"), 404);
  expect_api_error(post(cls, "/v1/rerank", R"({"documents": ["d"]})"), 400);
  expect_api_error(post(cls, "/v1/rerank", R"({"query": "q", "documents": []})"), 400);
  expect_api_error(post(cls, "/v1/rerank", R"({"query": "q", "documents": "d"})"), 400);
  expect_api_error(post(cls, "/v1/rerank", R"({"query": "q", "documents": ["d"], "top_n": 0})"),
                   400);
  expect_api_error(post(cls, "/v1/embeddings", R"({"input": "x"})"), 400);  // a classifier
  httplib::Client c("127.0.0.1", emb.port());
  auto g = c.Get("/v1/embeddings");
  expect_api_error(g, 405);

  // Per-token vectors are bounded per reply (issue 40, third pass: 100 texts of 512 tokens made
  // 207 MB of JSON from 120 KB, 1 MiB would have made 1.8 GB): 70 texts of 512 tokens x 64 are
  // over kMaxEmbeddingValues, a 400 response_too_large; the remote encoder asks for them in
  // halves and gets the native numbers.
  std::string words;
  for (int i = 0; i < 600; ++i) words += "word ";
  const std::vector<std::string> many(70, words);
  json big = {{"input", many}, {"pooling", "none"}};
  auto tb = post(emb, "/v1/embeddings", big.dump());
  const std::string msg = expect_api_error(tb, 400);
  EXPECT_EQ(json::parse(tb->body)["error"]["code"], "response_too_large");
  EXPECT_NE(msg.find("more than 2097152 numbers"), std::string::npos) << msg;
  big["pooling"] = "mean";  // one vector a text: served
  tb = post(emb, "/v1/embeddings", big.dump());
  ASSERT_TRUE(tb);
  EXPECT_EQ(tb->status, 200);
  auto ma = native.embed(many, reader::Pooling::None, false);
  auto mb = remote.embed(many, reader::Pooling::None, false);
  ASSERT_EQ(mb.size(), many.size());
  for (size_t i = 0; i < many.size(); i += 23) {
    ASSERT_EQ(ma[i].token_vectors.size(), mb[i].token_vectors.size());
    EXPECT_NEAR(ma[i].token_vectors[100], mb[i].token_vectors[100], 1e-6);
    EXPECT_EQ(mb[i].n_tokens, 512);
  }
  EXPECT_EQ(emb.stop(), 0);
  EXPECT_EQ(cls.stop(), 0);
}

// /v1/rerank holds its query once and tokenises it once (issue 40, third pass): a 500 KB query
// against 2,000 documents was copied into every pair (1.4 GB peak) and tokenised 2,000 times
// (57 s, 18 s now, the rest being 2,000 passes of 512 tokens). The long query is truncated
// longest-first as before: the scores equal the encoder's own classify of each pair.
TEST(ServeEncoder, RerankHoldsAndTokenisesALongQueryOnce) {
  REQUIRE_SHARED(nli, "fixtures/models/tiny-bert-nli.gguf");
  ServeProcess cls({"-m", nli.string(), "-t", "1"});
  std::string query;
  while (query.size() < 500000) query += "the capital of france is paris ";
  json docs = json::array();
  for (int i = 0; i < 300; ++i) {
    std::string d = (i % 3 == 0 ? "Paris " : "a cat ") + std::to_string(i);
    if (i % 3 == 1)  // some longer than half the context
      for (int w = 0; w < 2 * i; ++w) d += " berlin";
    docs.push_back(d);
  }
  httplib::Client c("127.0.0.1", cls.port());
  c.set_read_timeout(120, 0);
  const long before = cls.peak_rss_kib();
  auto r = c.Post("/v1/rerank", json({{"query", query}, {"documents", docs}}).dump(),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 300);
  const long peak = cls.peak_rss_kib();
  std::printf("[measured] rerank 500 KB x 300: peak RSS %ld -> %ld KiB\n", before, peak);
  EXPECT_LT(peak, before + 100 * 1024) << "300 copies of the query are 150 MB";
  const json j = json::parse(r->body);
  ASSERT_EQ(j["results"].size(), 300u);
  reader::NativeEncoderOptions no;
  no.engine.threads = 1;
  reader::NativeEncoder native(nli.string(), no);
  for (const json& res : j["results"]) {
    const size_t i = res["index"].get<size_t>();
    if (i % 50 != 1 && i % 50 != 0 && i % 50 != 2) continue;
    const auto want = native.classify({{query, docs[i].get<std::string>()}});
    ASSERT_EQ(want[0].scores.size(), res["scores"].size());
    for (size_t k = 0; k < want[0].scores.size(); ++k)
      EXPECT_NEAR(res["scores"][k].get<double>(), want[0].scores[k], 1e-6) << i;
    EXPECT_EQ(res["n_tokens"], 512) << i;
  }
  EXPECT_EQ(cls.stop(), 0);
}

// A server's answers are checked where the remote encoder reads them (issue 40, third pass; the
// OpenAIReader's are, openai_reader.cpp): an index twice left a text with an empty vector, a width
// that changes, 1e300 (inf), n_tokens 1e20 (-2147483648), and a string index or n_tokens, or a
// number among the pieces or labels threw nlohmann's type_error.302. Each is RequestFailed naming
// the method, the field and the server.
TEST(RemoteEncoderAnswers, AreCheckedNamingMethodFieldAndServer) {
  httplib::Server fake;
  std::mutex mu;
  std::string mode;
  fake.Post("/v1/embeddings", [&](const httplib::Request& req, httplib::Response& res) {
    std::string m;
    {
      std::lock_guard<std::mutex> lock(mu);
      m = mode;
    }
    const size_t n = json::parse(req.body)["input"].size();
    json data = json::array();
    for (size_t i = 0; i < n; ++i) {
      json d = {{"index", m == "dup" ? 0 : int(i)}, {"embedding", {0.5, 0.5}}};
      if (m == "ragged") d["embedding"] = std::vector<double>(i + 1, 0.5);
      if (m == "inf") d["embedding"] = {1e300, 0.5};
      if (m == "ntok") d["n_tokens"] = 1e20;
      if (m == "ntok_str") d["n_tokens"] = "x";
      if (m == "idx_str") d["index"] = "0";
      if (m == "empty") d["embedding"] = json::array();
      if (m == "pieces") d = {{"index", i}, {"embedding", {{0.5, 0.5}}}, {"pieces", {1}}};
      if (m == "rows") d = {{"index", i}, {"embedding", {{0.5, 0.5}, {0.5}}}};
      data.push_back(d);
    }
    res.set_content(json({{"data", data}}).dump(), "application/json");
  });
  fake.Post("/v1/rerank", [&](const httplib::Request&, httplib::Response& res) {
    std::string m;
    {
      std::lock_guard<std::mutex> lock(mu);
      m = mode;
    }
    json r = {{"index", 0}, {"relevance_score", 0.5}};
    if (m == "labels") r = {{"index", 0}, {"labels", {1, 2}}, {"scores", {1, 2}}};
    if (m == "score_str") r["relevance_score"] = "high";
    res.set_content(json({{"results", {r}}}).dump(), "application/json");
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  std::thread th([&] { fake.listen_after_bind(); });
  for (int i = 0; i < 200 && !fake.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  reader::RemoteEncoder enc({url, "m", "", 0, 0.1, 30, 64});
  auto error_of = [&](const std::string& m, bool per_token, bool rerank) -> std::string {
    {
      std::lock_guard<std::mutex> lock(mu);
      mode = m;
    }
    try {
      if (rerank)
        enc.classify({{"q", std::string("d")}});
      else
        enc.embed({"a", "b"}, per_token ? std::optional(reader::Pooling::None) : std::nullopt,
                  false);
    } catch (const reader::RequestFailed& e) {
      EXPECT_EQ(e.status(), 200) << m;
      return e.what();
    }
    return "(no error)";
  };
  const std::string from = " (from " + url + ")";
  EXPECT_EQ(error_of("ok", false, false), "(no error)");
  EXPECT_EQ(error_of("dup", false, false),
            "remote encoder: embeddings: data[1].index: 0 appears twice" + from);
  EXPECT_EQ(error_of("ragged", false, false),
            "remote encoder: embeddings: data[1].embedding: 2 numbers where the first vector has "
            "1" +
                from);
  EXPECT_EQ(
      error_of("inf", false, false),
      "remote encoder: embeddings: data[0].embedding[0]: 1e+300 is not a finite float" + from);
  EXPECT_EQ(
      error_of("ntok", false, false),
      "remote encoder: embeddings: data[0].n_tokens: expected an integer, got number 1e+20" + from);
  EXPECT_EQ(
      error_of("ntok_str", false, false),
      "remote encoder: embeddings: data[0].n_tokens: expected an integer, got string \"x\"" + from);
  EXPECT_EQ(
      error_of("idx_str", false, false),
      "remote encoder: embeddings: data[0].index: expected an integer, got string \"0\"" + from);
  EXPECT_EQ(error_of("empty", false, false),
            "remote encoder: embeddings: data[0].embedding: expected a non-empty list of numbers, "
            "got an empty list" +
                from);
  EXPECT_EQ(
      error_of("pieces", true, false),
      "remote encoder: embeddings: data[0].pieces[0]: expected a string, got number 1" + from);
  EXPECT_EQ(error_of("rows", true, false),
            "remote encoder: embeddings: data[0].embedding[1]: 1 numbers where the first vector "
            "has 2" +
                from);
  EXPECT_EQ(error_of("ok", false, true), "(no error)");
  EXPECT_EQ(error_of("labels", false, true),
            "remote encoder: rerank: results[0].labels[0]: expected a string, got number 1" + from);
  EXPECT_EQ(
      error_of("score_str", false, true),
      "remote encoder: rerank: results[0].relevance_score: expected a number, got string \"high\"" +
          from);
  fake.stop();
  th.join();
}

TEST(ServeEncoder, SpotlightWithAnEncoderModel) {
  REQUIRE_SHARED(reader_model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  ServeProcess s({"-m", reader_model.string(), "-t", "1", "--spotlight-encoder", "model",
                  "--encoder-model", bert.string()});
  auto r = post(
      s, "/v1/rag/spotlight",
      R"({"question": "Where does Nessie live?", "K": 1, "documents": [{"title": "N", "text": "Nessie lives in Loch Ness. Tokyo is far away."}]})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_TRUE(j.contains("selected")) << r->body;
  EXPECT_EQ(j["selected"].size(), 1u);
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace ragform::testing

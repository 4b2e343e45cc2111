// `ragform serve` running an encoder model: /v1/embeddings and /v1/rerank in their documented
// shapes, 4xx on bad input, and the RemoteEncoder (reader/remote_encoder.h) against it giving the
// NativeEncoder's numbers (same model, same engine: equal within float printing).
#include <cmath>

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
  expect_api_error(post(emb, "/v1/embeddings", R"({"input": "x", "encoding_format": "base64"})"),
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
  EXPECT_EQ(emb.stop(), 0);
  EXPECT_EQ(cls.stop(), 0);
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

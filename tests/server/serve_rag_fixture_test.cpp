// `ragform serve`'s RAG endpoints on loopback: POST /v1/rag/normalize gives what `ragform cnorm
// apply` writes for the same documents and profile (and a hand-checked p = 1 case), POST
// /v1/rag/spotlight gives the object `ragform spotlight select --json` prints for the same
// question — on a HotpotQA dev record (sentences as given) and on plain-text passages; each
// endpoint's 4xx errors, with the server still serving after them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;

httplib::Result post(int port, const std::string& path, const std::string& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  return c.Post(path.c_str(), body, "application/json");
}

json ok_json(const httplib::Result& r) {
  EXPECT_TRUE(r) << "no answer";
  if (!r) return json();
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body, nullptr, false);
}

void expect_serving(int port) {
  auto r = post(port, "/v1/completions", R"({"prompt": "Once upon", "max_tokens": 2})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

// A profile as `ragform cnorm calibrate` writes it (the fields profile_from_json checks).
json profile(const std::string& best, double p, uint64_t seed) {
  return {{"model_sha256", std::string(64, '0')},
          {"task", "qa"},
          {"p", p},
          {"seed", seed},
          {"S", 6},
          {"best", best},
          {"candidates",
           {{{"delimiter", "none"}, {"abs_mean", 0.5}, {"abs_std", 0.1}},
            {{"delimiter", "-"}, {"abs_mean", 0.6}, {"abs_std", 0.1}},
            {{"delimiter", "&"}, {"abs_mean", 0.7}, {"abs_std", 0.1}}}}};
}

const std::vector<std::string> kDocs = {
    "Lily went to the park. She saw a big dog. The dog was named Max. Max liked to run and play. "
    "Lily and Max played all day until the sun went down.",
    "Tom had a red ball. He threw it high in the sky. The ball fell into the pond. Tom was sad, "
    "but a duck brought it back.",
    "One sentence only, with several words in it."};

TEST(ServeRagFixture, NormalizeAgreesWithCnormApply) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("serve-normalize");
  auto prof_path = dir / "profile.json";
  write_file(prof_path, profile("&", 0.5, 1234).dump(2));
  ServeProcess srv({"-m", model.string(), "--ctx", "128", "--cnorm-profile", prof_path.string()});

  // The startup profile: the same documents as `cnorm apply --profile` writes.
  std::string lines;
  for (auto& d : kDocs) lines += json({{"text", d}}).dump() + "\n";
  write_file(dir / "docs.jsonl", lines);
  auto cli = run_ragform("cnorm apply --profile " + prof_path.string() + " --input " +
                         (dir / "docs.jsonl").string());
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  std::vector<std::string> applied;
  std::istringstream in(cli.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) applied.push_back(json::parse(line)["text"]);
  ASSERT_EQ(applied.size(), kDocs.size());

  json j = ok_json(post(srv.port(), "/v1/rag/normalize", json({{"documents", kDocs}}).dump()));
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["documents"].size(), kDocs.size());
  for (size_t i = 0; i < kDocs.size(); ++i) EXPECT_EQ(j["documents"][i], applied[i]) << i;
  EXPECT_EQ(j["delimiter"], "&");
  EXPECT_EQ(j["p"], 0.5);
  EXPECT_EQ(j["seed"], 1234);
  // p = 0.5 of 5 sentences: round(2.5) = 3 reformatted, so the first document changed.
  EXPECT_NE(j["documents"][0], kDocs[0]);

  // A profile in the request wins over the startup one; p = 1 reformats every sentence (by hand).
  j = ok_json(post(
      srv.port(), "/v1/rag/normalize",
      json({{"documents", {"The cat sat.  A dog ran fast."}}, {"profile", profile("-", 1.0, 7)}})
          .dump()));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["documents"][0], "The-cat-sat.  A-dog-ran-fast.");
  EXPECT_EQ(j["delimiter"], "-");
  // p = 0 leaves documents byte for byte.
  j = ok_json(post(srv.port(), "/v1/rag/normalize",
                   json({{"documents", kDocs}, {"profile", profile("-", 0.0, 7)}}).dump()));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["documents"], json(kDocs));
  // No documents: an empty list back.
  j = ok_json(post(srv.port(), "/v1/rag/normalize", R"({"documents": []})"));
  EXPECT_EQ(j["documents"], json::array());

  // Errors: each a JSON 400, and the server keeps serving.
  expect_api_error(post(srv.port(), "/v1/rag/normalize", R"({"documents": ["a", )"), 400);
  expect_api_error(post(srv.port(), "/v1/rag/normalize", R"({"texts": ["a"]})"), 400);
  expect_api_error(post(srv.port(), "/v1/rag/normalize", R"({"documents": ["a", 5]})"), 400);
  std::string msg =
      expect_api_error(post(srv.port(), "/v1/rag/normalize",
                            json({{"documents", {"a b"}}, {"profile", profile("-", 2, 7)}}).dump()),
                       400);
  EXPECT_NE(msg.find("'p'"), std::string::npos) << msg;
  json no_best = profile("|", 0.5, 7);
  msg = expect_api_error(post(srv.port(), "/v1/rag/normalize",
                              json({{"documents", {"a b"}}, {"profile", no_best}}).dump()),
                         400);
  EXPECT_NE(msg.find("best"), std::string::npos) << msg;
  expect_serving(srv.port());
  EXPECT_EQ(srv.stop(), 0) << srv.log();

  // A server without --cnorm-profile needs the profile in the request.
  ServeProcess bare({"-m", model.string(), "--ctx", "128"});
  msg = expect_api_error(post(bare.port(), "/v1/rag/normalize", R"({"documents": ["a b"]})"), 400);
  EXPECT_NE(msg.find("--cnorm-profile"), std::string::npos) << msg;
  // ... and has no spotlight encoder.
  msg = expect_api_error(post(bare.port(), "/v1/rag/spotlight",
                              R"({"question": "q?", "documents": [{"text": "a b."}]})"),
                         400);
  EXPECT_NE(msg.find("--vectors"), std::string::npos) << msg;
  expect_serving(bare.port());
}

// The first HotpotQA dev record, as the server's request body.
json hotpot_request(const json& rec) {
  json docs = json::array();
  for (size_t i = 0; i < rec["context"]["title"].size(); ++i)
    docs.push_back(
        {{"title", rec["context"]["title"][i]}, {"sentences", rec["context"]["sentences"][i]}});
  return {{"id", rec["id"]}, {"question", rec["question"]}, {"documents", docs}};
}

TEST(ServeRagFixture, SpotlightAgreesWithSpotlightSelect) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(vectors, "data/embeddings/glove-50d-5k.json");
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  auto dir = temp_dir("serve-spotlight");
  ServeProcess srv({"-m", model.string(), "--ctx", "128", "--vectors", vectors.string()});

  // (a) HotpotQA: sentences as given, so sent_id is the data's own index.
  std::string first;
  {
    std::ifstream in(hotpot);
    std::getline(in, first);
  }
  write_file(dir / "hotpot1.jsonl", first + "\n");
  for (const char* flags : {"", " -K 3 -k 2 --lambda 0"}) {
    auto cli = run_ragform("spotlight select --input " + (dir / "hotpot1.jsonl").string() +
                           " --vectors " + vectors.string() + " --json" + flags);
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    json want = json::parse(cli.out);
    json req = hotpot_request(json::parse(first));
    if (std::string(flags).size() > 0) {
      req["K"] = 3;
      req["k"] = 2;
      req["lambda"] = 0;
    }
    auto r = post(srv.port(), "/v1/rag/spotlight", req.dump());
    json got = ok_json(r);
    EXPECT_EQ(got, want) << "server: " << r->body << "\ncli: " << cli.out;
    EXPECT_EQ(got["selected"].size(), std::string(flags).empty() ? 6u : 3u);
    // Key order too: the same bytes as the CLI line.
    EXPECT_EQ(r->body + "\n", cli.out);
  }
  // A document's key the route does not read is refused, a null one is absent; "" is no alpha
  // (pass 17: both were served, "" as idf, which the CLI refuses).
  {
    json req = hotpot_request(json::parse(first));
    req["documents"][0]["url"] = "x";
    const std::string msg =
        expect_api_error(post(srv.port(), "/v1/rag/spotlight", req.dump()), 400);
    EXPECT_NE(msg.find("documents[0]: 'url' is not supported"), std::string::npos) << msg;
    req["documents"][0]["url"] = nullptr;
    EXPECT_EQ(ok_json(post(srv.port(), "/v1/rag/spotlight", req.dump()))["selected"].size(), 6u);
    req["alpha"] = "";
    expect_api_error(post(srv.port(), "/v1/rag/spotlight", req.dump()), 400);
  }

  // (b) Plain-text passages, split by the sentence splitter, in litm-qa form for the CLI.
  json rec = {{"id", "story-1"},
              {"question", "What was the name of the dog Lily saw in the park?"},
              {"answers", {"Max"}},
              {"ctxs",
               {{{"title", "Park"}, {"text", kDocs[0]}},
                {{"title", "Ball"}, {"text", kDocs[1]}},
                {{"id", "own-id"}, {"title", "One"}, {"text", kDocs[2]}}}}};
  write_file(dir / "story.jsonl", rec.dump() + "\n");
  auto cli = run_ragform("spotlight select --input " + (dir / "story.jsonl").string() +
                         " --vectors " + vectors.string() + " --json -K 4 --order score");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  json req = {{"id", "story-1"},
              {"question", rec["question"]},
              {"K", 4},
              {"order", "score"},
              {"documents",
               {{{"title", "Park"}, {"text", kDocs[0]}},
                {{"title", "Ball"}, {"text", kDocs[1]}},
                {{"id", "own-id"}, {"title", "One"}, {"text", kDocs[2]}}}}};
  auto r = post(srv.port(), "/v1/rag/spotlight", req.dump());
  json got = ok_json(r);
  EXPECT_EQ(got, json::parse(cli.out)) << r->body << "\n" << cli.out;
  ASSERT_EQ(got["selected"].size(), 4u);
  // Score order: R descending, the best normalised to 1.
  EXPECT_DOUBLE_EQ(got["selected"][0]["R"].get<double>(), 1.0);
  for (size_t i = 1; i < 4; ++i)
    EXPECT_GE(got["selected"][i - 1]["R"].get<double>(), got["selected"][i]["R"].get<double>());

  // Errors: each a JSON 400, and the server keeps serving.
  auto sp = [&](const std::string& b) { return post(srv.port(), "/v1/rag/spotlight", b); };
  expect_api_error(sp(R"({"question": "q?", "documents": )"), 400);
  expect_api_error(sp(R"({"documents": [{"text": "a b."}]})"), 400);
  expect_api_error(sp(R"({"question": "q?", "documents": []})"), 400);
  expect_api_error(sp(R"({"question": "q?", "documents": ["a b."]})"), 400);
  expect_api_error(sp(R"({"question": "q?", "documents": [{"title": "t"}]})"), 400);
  expect_api_error(sp(R"({"question": "q?", "documents": [{"text": "a", "sentences": ["a"]}]})"),
                   400);
  expect_api_error(sp(R"({"question": "q?", "documents": [{"sentences": ["a", 3]}]})"), 400);
  expect_api_error(sp(R"({"question": "q?", "documents": [{"text": "a b."}], "K": 0})"), 400);
  expect_api_error(sp(R"({"question": "q?", "documents": [{"text": "a b."}], "lambda": 2})"), 400);
  expect_api_error(sp(R"({"question": "q?", "documents": [{"text": "a b."}], "alpha": "x"})"), 400);
  expect_serving(srv.port());
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServeRagFixture, SpotlightWithTheServedModelsHiddenStates) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("serve-spotlight-hidden");
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--spotlight-encoder", "hidden",
                    "--spotlight-layer", "2"});
  json rec = {
      {"id", "h1"},
      {"question", "What did Tom throw?"},
      {"answers", {"ball"}},
      {"ctxs", {{{"title", "Park"}, {"text", kDocs[0]}}, {{"title", "Ball"}, {"text", kDocs[1]}}}}};
  write_file(dir / "h.jsonl", rec.dump() + "\n");
  auto cli = run_ragform("spotlight select --input " + (dir / "h.jsonl").string() +
                         " --encoder hidden --layer 2 -m " + model.string() + " --json -K 3");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  json req = {{"id", "h1"},
              {"question", rec["question"]},
              {"K", 3},
              {"documents",
               {{{"title", "Park"}, {"text", kDocs[0]}}, {{"title", "Ball"}, {"text", kDocs[1]}}}}};
  auto r = post(srv.port(), "/v1/rag/spotlight", req.dump());
  json got = ok_json(r);
  json want = json::parse(cli.out);
  ASSERT_EQ(got["selected"].size(), 3u);
  ASSERT_EQ(want["selected"].size(), 3u);
  // Same sentences and prompt; scores within float noise of a separate process's forward pass.
  EXPECT_EQ(got["prompt"], want["prompt"]);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(got["selected"][i]["sent_id"], want["selected"][i]["sent_id"]);
    EXPECT_EQ(got["selected"][i]["doc_id"], want["selected"][i]["doc_id"]);
    EXPECT_NEAR(got["selected"][i]["R_raw"].get<double>(),
                want["selected"][i]["R_raw"].get<double>(), 1e-5);
  }
  expect_serving(srv.port());
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
}  // namespace ragform::testing

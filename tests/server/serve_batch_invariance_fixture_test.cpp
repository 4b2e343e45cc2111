// `ragform serve` gives a greedy prompt the same text and log-probs whether it is sent alone or
// together with others (issue 23): 12 prompts one request at a time, then all 12 in one request
// (they share the engine's forward passes), then as 12 concurrent requests — for F32, F16, BF16
// and quantised fixtures. Before batch invariance, F16 prompts changed text in a batch.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;

const char* const kModels[] = {"tinyq-f32.gguf", "tinyq-f16.gguf", "tinyq-bf16.gguf",
                               "tinyq-q8_0.gguf", "tinyq-q4_k_m.gguf"};

const char* const kPrompts[] = {"Once upon a time",
                                "The cat sat on",
                                "Lily and Tom went to the park and",
                                "A",
                                "In a small village there lived an old man who",
                                "1 2 3 4",
                                "She looked at the sky",
                                "Why is the sea",
                                "The quick brown fox jumps over the lazy dog. Then",
                                "Hello",
                                "Every morning the baker",
                                "It was a dark and stormy night; the"};

struct Choice {
  std::string text;
  json logprobs;
};

std::vector<Choice> complete(int port, const json& prompt) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(300, 0);
  json req = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"logprobs", 0}};
  auto r = c.Post("/v1/completions", req.dump(), "application/json");
  std::vector<Choice> out;
  EXPECT_TRUE(r) << "no answer";
  if (!r) return out;
  EXPECT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  for (const auto& ch : j["choices"])
    out.push_back({ch["text"].get<std::string>(), ch["logprobs"]["token_logprobs"]});
  return out;
}

TEST(ServeBatchInvarianceFixture, SameGreedyTextAloneAndInBatches) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    REQUIRE_SHARED(model, std::string("fixtures/models/") + name);
    ServeProcess srv({"-m", model.string(), "--threads", "2", "--ctx", "256", "--batch", "16"});
    const size_t n = std::size(kPrompts);

    std::vector<Choice> alone;
    for (const char* p : kPrompts) {
      auto c = complete(srv.port(), p);
      ASSERT_EQ(c.size(), 1u);
      alone.push_back(c[0]);
    }

    // All prompts in one request: the engine runs them in the same forward passes.
    json all = json::array();
    for (const char* p : kPrompts) all.push_back(p);
    const auto together = complete(srv.port(), all);
    ASSERT_EQ(together.size(), n);

    // As concurrent requests.
    std::vector<std::future<std::vector<Choice>>> futs;
    for (const char* p : kPrompts)
      futs.push_back(std::async(std::launch::async, [&srv, p] { return complete(srv.port(), p); }));
    std::vector<Choice> concurrent;
    for (auto& f : futs) {
      auto c = f.get();
      ASSERT_EQ(c.size(), 1u);
      concurrent.push_back(c[0]);
    }

    for (size_t i = 0; i < n; ++i) {
      EXPECT_FALSE(alone[i].text.empty()) << "prompt " << i;
      EXPECT_FALSE(alone[i].logprobs.empty()) << "prompt " << i;
      EXPECT_EQ(together[i].text, alone[i].text) << "prompt " << i << " in one request";
      EXPECT_EQ(concurrent[i].text, alone[i].text) << "prompt " << i << " concurrently";
      // JSON numbers print with round-trip precision, so equal text means equal floats.
      EXPECT_EQ(together[i].logprobs.dump(), alone[i].logprobs.dump()) << "prompt " << i;
      EXPECT_EQ(concurrent[i].logprobs.dump(), alone[i].logprobs.dump()) << "prompt " << i;
    }
  }
}

}  // namespace
}  // namespace ragform::testing

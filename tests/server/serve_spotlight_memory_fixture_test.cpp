// `ragform serve` under `ulimit -v 2000000` with concurrent /v1/rag/spotlight requests at the
// documented sentence limit (issue 40, fourth pass, D1): 12 requests of 8,192 sentences at once
// ended the server ("terminate called after throwing an instance of 'std::bad_alloc'") with 680 MB
// resident, because glibc's per-thread arenas held 3.9 GB of address space and a JSON destructor
// allocated while unwinding. Every request must be answered (200, or 503 out_of_memory) and the
// server must live on (about 12 s on 2 cores).
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;

std::string spotlight_body() {
  static const char* kWords[] = {"the",  "city", "river", "king",  "war",   "music", "film",
                                 "team", "year", "world", "house", "water", "game",  "party"};
  std::mt19937 rng(0);
  auto words = [&](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += std::string(i ? " " : "") + kWords[rng() % 14];
    return s;
  };
  json docs = json::array();
  for (int d = 0; d < 256; ++d) {
    json sentences = json::array();
    for (int i = 0; i < 32; ++i) sentences.push_back(words(3) + ".");
    docs.push_back({{"title", "t" + std::to_string(d)}, {"sentences", sentences}});
  }
  return json{{"question", words(20)}, {"documents", docs}, {"K", 8192}}.dump();
}

TEST(ServeSpotlightMemory, ConcurrentRequestsAtTheLimitUnderUlimitLeaveTheServerUp) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(vectors, "data/embeddings/glove-50d-5k.json");
  ServeProcess srv({"-m", model.string(), "--ctx", "512", "--vectors", vectors.string()}, 120,
                   address_space_limit(2000000));
  const std::string body = spotlight_body();
  for (int round = 0; round < 2; ++round) {
    const std::vector<int> status = post_at_once(srv.port(), "/v1/rag/spotlight", body, 12);
    for (size_t i = 0; i < status.size(); ++i)
      EXPECT_TRUE(status[i] == 200 || status[i] == 503)
          << "round " << round << ", request " << i << ": " << status[i]
          << " (-1: no answer, the server died)";
  }
  expect_alive(srv);
}

}  // namespace
}  // namespace ragform::testing

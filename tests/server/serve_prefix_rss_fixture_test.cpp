// Issue 21: "memory stays within --prefix-cache-mb; a long serve load keeps RSS flat". Sends a
// stream of distinct long prompts (nothing to share, so every one becomes a cache entry) to
// `ragform serve` with stories260K and reads the server's resident memory as it goes. With a
// 1 MiB bound the RSS after the warm-up stays flat; with a 512 MiB bound the same load grows it by
// about the prompts' KV rows, which shows the test can tell the two apart.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

// A prompt of `words` words drawn from a small list by an LCG seeded with i: distinct prompts
// from their first words on, so no two share a prefix worth reusing.
std::string distinct_prompt(int i, int words) {
  static const char* kWords[] = {"tom",   "ran", "to",    "the",  "big",  "red",  "ball",
                                 "and",   "sat", "under", "a",    "tree", "lily", "saw",
                                 "happy", "dog", "went",  "home", "with", "her",  "mom",
                                 "sun",   "was", "warm",  "cat",  "jump", "play", "park"};
  constexpr uint32_t kN = sizeof(kWords) / sizeof(kWords[0]);
  uint32_t s = 2654435761u * uint32_t(i + 1);
  std::string p = "Story " + std::to_string(i) + ":";
  for (int w = 0; w < words; ++w) {
    s = s * 1664525u + 1013904223u;
    p += " ";
    p += kWords[(s >> 16) % kN];
  }
  return p;
}

// RSS growth (KiB) of a server over `requests` distinct prompts, measured from after `warmup`.
long rss_growth_kib(const std::string& cache_mb, int warmup, int requests) {
  ServeProcess srv({"-m", shared_path("fixtures/models/stories260K.gguf").string(), "--ctx", "512",
                    "--prefix-cache-mb", cache_mb});
  httplib::Client cli("127.0.0.1", srv.port());
  cli.set_read_timeout(60, 0);
  long base = 0;
  for (int i = 0; i < requests; ++i) {
    if (i == warmup) base = srv.rss_kib();
    nlohmann::json body = {
        {"prompt", distinct_prompt(i, 150)}, {"max_tokens", 1}, {"temperature", 0}};
    auto r = cli.Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : httplib::to_string(r.error()));
    if (!r || r->status != 200) return -1;
  }
  const long end = srv.rss_kib();
  EXPECT_GT(base, 0);
  EXPECT_GT(end, 0);
  return end - base;
}

TEST(ServePrefixCache, RssStaysFlatWithinTheBound) {
  // stories260K keeps 5 layers x 2 x 64 floats = 2.5 KiB of KV per token; 250 prompts of about
  // 300 tokens after the warm-up are ~180 MiB of KV rows if nothing were evicted.
  const long bounded = rss_growth_kib("1", 50, 300);
  const long unbounded = rss_growth_kib("512", 50, 300);
  std::fprintf(stderr,
               "RSS growth over 250 distinct prompts: %ld KiB (1 MiB bound), %ld KiB "
               "(512 MiB bound)\n",
               bounded, unbounded);
  ASSERT_GE(bounded, -1000000);
  EXPECT_LT(bounded, 16 * 1024) << "the 1 MiB prefix cache let the server grow";
  EXPECT_GT(unbounded, 64 * 1024) << "a large bound should keep the prompts' rows (control)";
}

}  // namespace
}  // namespace ragform::testing

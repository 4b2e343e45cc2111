// Load test of `ragform serve` (label slow): 16 concurrent loopback clients for 60 s, greedy
// 16-token completions on stories260K. Zero failed requests, p50/p99 latency, throughput, resident
// memory stable; then the batching gain: the same 16-client load for 20 s with --batch 1 and with
// --batch 8, stated as a ratio. Bounded in time and count; loopback only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

struct LoadResult {
  size_t ok = 0, failed = 0;
  double seconds = 0, p50_ms = 0, p99_ms = 0;
  long rss_start = 0, rss_mid = 0, rss_end = 0;
};

LoadResult load(ServeProcess& srv, int clients, double seconds) {
  const std::vector<std::string> prompts = {"Once upon a time", "Lily and Tom", "The little dog",
                                            "One day, a girl named", "The sun was"};
  std::vector<double> lat;
  std::mutex mu;
  std::atomic<size_t> failed{0};
  LoadResult r;
  r.rss_start = srv.rss_kib();
  auto t0 = std::chrono::steady_clock::now();
  auto end = t0 + std::chrono::duration<double>(seconds);
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c)
    ts.emplace_back([&, c] {
      for (int n = 0; std::chrono::steady_clock::now() < end && n < 100000; ++n) {
        nlohmann::json body = {{"prompt", prompts[size_t(c + n) % prompts.size()]},
                               {"max_tokens", 16},
                               {"temperature", 0}};
        httplib::Client cli("127.0.0.1", srv.port());
        cli.set_read_timeout(60, 0);
        auto t = std::chrono::steady_clock::now();
        auto res = cli.Post("/v1/completions", body.dump(), "application/json");
        double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
        if (res && res->status == 200) {
          std::lock_guard<std::mutex> lock(mu);
          lat.push_back(ms);
        } else {
          failed++;
        }
      }
    });
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds / 2));
  r.rss_mid = srv.rss_kib();
  for (auto& t : ts) t.join();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.rss_end = srv.rss_kib();
  std::sort(lat.begin(), lat.end());
  r.ok = lat.size();
  r.failed = failed;
  if (!lat.empty()) {
    r.p50_ms = lat[lat.size() / 2];
    r.p99_ms = lat[std::min(lat.size() - 1, size_t(double(lat.size()) * 0.99))];
  }
  return r;
}

void report(const char* what, const LoadResult& r) {
  std::printf(
      "%s: %zu ok, %zu failed in %.1f s = %.2f req/s; p50 %.1f ms, p99 %.1f ms; RSS %ld -> %ld -> "
      "%ld KiB\n",
      what, r.ok, r.failed, r.seconds, double(r.ok) / r.seconds, r.p50_ms, r.p99_ms, r.rss_start,
      r.rss_mid, r.rss_end);
}

TEST(ServeLoadSlow, SixteenClientsSixtySecondsAndBatchingGain) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  {
    ServeProcess srv({"-m", model.string(), "--ctx", "256", "--batch", "8"});
    auto r = load(srv, 16, 60);
    report("16 clients, 60 s, --batch 8", r);
    EXPECT_EQ(r.failed, 0u);
    EXPECT_GT(r.ok, 16u);
    // Resident memory stable: the second half of the run grows it by less than 10%.
    EXPECT_LT(double(r.rss_end), 1.10 * double(r.rss_mid)) << r.rss_mid << " -> " << r.rss_end;
    EXPECT_EQ(srv.stop(), 0);
  }
  double tput[2];
  int batches[2] = {1, 8};
  for (int i = 0; i < 2; ++i) {
    ServeProcess srv({"-m", model.string(), "--ctx", "256", "--batch", std::to_string(batches[i])});
    auto r = load(srv, 16, 20);
    report(batches[i] == 1 ? "16 clients, 20 s, --batch 1" : "16 clients, 20 s, --batch 8", r);
    EXPECT_EQ(r.failed, 0u);
    tput[i] = double(r.ok) / r.seconds;
    EXPECT_EQ(srv.stop(), 0);
  }
  std::printf("batching gain (--batch 8 / --batch 1 throughput): %.2fx\n", tput[1] / tput[0]);
  EXPECT_GT(tput[1], tput[0]);
}

}  // namespace
}  // namespace ragform::testing

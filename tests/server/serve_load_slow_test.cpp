// Load test of `ragform serve` (label slow): 16 concurrent loopback clients for 60 s against
// stories260K, greedy 16-token completions, half of the clients streaming. Asserts zero failed
// requests and bounded resident memory (sampled every second); prints p50/p99 latency, time to
// first token of the streams, throughput and the RSS series. Then the batching gain: the same
// 16-client load against --batch 1 (one completion at a time) and --batch 8, alternating 10 s
// slices twice each in this run, stated as a throughput ratio. Bounded in time and count; loopback
// only.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct LoadResult {
  size_t ok = 0, failed = 0, tokens = 0;
  std::vector<std::string> failures;  // the first few, described
  double seconds = 0;
  std::vector<double> latency_ms, ttft_ms;
  std::vector<long> rss_kib;  // one sample per second
};

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(double(v.size()) * q))];
}

// One request; returns false on any failure. Streams count the text events as tokens.
bool one_request(int port, const std::string& prompt, bool stream, double* ms, double* ttft,
                 size_t* tokens, std::string* why) {
  nlohmann::json body = {{"prompt", prompt}, {"max_tokens", 16}, {"temperature", 0}};
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);
  auto t0 = Clock::now();
  auto since = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); };
  if (!stream) {
    auto res = cli.Post("/v1/completions", body.dump(), "application/json");
    *ms = since();
    if (!res) *why = "no response: " + httplib::to_string(res.error());
    if (res && res->status != 200)
      *why = "HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300);
    if (!res || res->status != 200) return false;
    auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.contains("usage")) return false;
    *tokens = j["usage"]["completion_tokens"].get<size_t>();
    return true;
  }
  body["stream"] = true;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  std::string buf;
  bool done = false;
  *tokens = 0;
  *ttft = -1;
  req.content_receiver = [&](const char* d, size_t n, uint64_t, uint64_t) {
    buf.append(d, n);
    size_t end;
    while ((end = buf.find("\n\n")) != std::string::npos) {
      std::string ev = buf.substr(6, end - 6);
      buf.erase(0, end + 2);
      if (ev == "[DONE]") {
        done = true;
        continue;
      }
      auto j = nlohmann::json::parse(ev, nullptr, false);
      if (j.is_discarded() || !j.contains("choices")) return false;
      if (!j["choices"][0]["text"].get<std::string>().empty()) {
        if (*ttft < 0) *ttft = since();
        ++*tokens;
      }
    }
    return true;
  };
  auto res = cli.send(req);
  *ms = since();
  if (!res) *why = "stream: no response: " + httplib::to_string(res.error());
  if (res && (res->status != 200 || !done))
    *why = "stream: HTTP " + std::to_string(res->status) + (done ? "" : " without [DONE]");
  return res && res->status == 200 && done;
}

// `clients` threads, each sending requests back to back for `seconds`; client c streams when
// c % stream_every == 0 (stream_every 0 = never).
LoadResult load(ServeProcess& srv, int clients, double seconds, int stream_every) {
  const std::vector<std::string> prompts = {"Once upon a time", "Lily and Tom", "The little dog",
                                            "One day, a girl named", "The sun was"};
  LoadResult r;
  std::mutex mu;
  std::atomic<size_t> failed{0}, tokens{0};
  std::atomic<bool> running{true};
  auto t0 = Clock::now();
  auto end = t0 + std::chrono::duration<double>(seconds);
  std::thread sampler([&] {
    while (running) {
      long kib = srv.rss_kib();
      {
        std::lock_guard<std::mutex> lock(mu);
        r.rss_kib.push_back(kib);
      }
      for (int i = 0; i < 10 && running; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c)
    ts.emplace_back([&, c] {
      bool stream = stream_every > 0 && c % stream_every == 0;
      for (int n = 0; Clock::now() < end && n < 100000; ++n) {
        double ms = 0, ttft = -1;
        size_t tok = 0;
        std::string why;
        if (one_request(srv.port(), prompts[size_t(c + n) % prompts.size()], stream, &ms, &ttft,
                        &tok, &why)) {
          tokens += tok;
          std::lock_guard<std::mutex> lock(mu);
          r.latency_ms.push_back(ms);
          if (ttft >= 0) r.ttft_ms.push_back(ttft);
        } else {
          failed++;
          std::lock_guard<std::mutex> lock(mu);
          if (r.failures.size() < 5)
            r.failures.push_back(why + " (after " + std::to_string(ms) + " ms)");
        }
      }
    });
  for (auto& t : ts) t.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  running = false;
  sampler.join();
  r.ok = r.latency_ms.size();
  r.failed = failed;
  r.tokens = tokens;
  return r;
}

void report(const char* what, const LoadResult& r) {
  std::printf(
      "%s: %zu ok, %zu failed in %.1f s = %.1f req/s, %.0f tok/s; latency p50 %.1f ms, p99 %.1f "
      "ms",
      what, r.ok, r.failed, r.seconds, double(r.ok) / r.seconds, double(r.tokens) / r.seconds,
      pct(r.latency_ms, 0.5), pct(r.latency_ms, 0.99));
  if (!r.ttft_ms.empty())
    std::printf("; streams: %zu, first token p50 %.1f ms, p99 %.1f ms", r.ttft_ms.size(),
                pct(r.ttft_ms, 0.5), pct(r.ttft_ms, 0.99));
  std::printf("\n");
  for (const auto& f : r.failures) std::printf("  failed: %s\n", f.c_str());
}

TEST(ServeLoadSlow, SixteenClientsSixtySecondsAndBatchingGain) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  {
    ServeProcess srv({"-m", model.string(), "--ctx", "256", "--batch", "8", "--queue", "64"});
    auto r = load(srv, 16, 60, 2);
    report("16 clients (8 streaming), 60 s, --batch 8", r);
    std::printf("RSS every 10 s (MiB):");
    for (size_t i = 0; i < r.rss_kib.size(); i += 10) std::printf(" %.1f", r.rss_kib[i] / 1024.0);
    std::printf(" | end %.1f\n", r.rss_kib.empty() ? 0.0 : r.rss_kib.back() / 1024.0);
    EXPECT_EQ(r.failed, 0u);
    EXPECT_GT(r.ok, 16u);
    EXPECT_FALSE(r.ttft_ms.empty());
    // Resident memory stable: after a 10 s warm-up it never exceeds the warm-up level by 10%.
    ASSERT_GT(r.rss_kib.size(), 20u);
    long warm = r.rss_kib[10], peak = *std::max_element(r.rss_kib.begin() + 10, r.rss_kib.end());
    std::printf("RSS after warm-up %.1f MiB, peak after it %.1f MiB (+%.1f%%)\n", warm / 1024.0,
                peak / 1024.0, 100.0 * double(peak - warm) / double(warm));
    EXPECT_LT(double(peak), 1.10 * double(warm));
    // How much the completions shared the forward passes (streaming and plain clients alike).
    httplib::Client hc("127.0.0.1", srv.port());
    auto h = hc.Get("/health");
    ASSERT_TRUE(h);
    auto hj = nlohmann::json::parse(h->body);
    double steps = hj["steps"].get<double>(), seqs = hj["sequences"].get<double>();
    std::printf(
        "engine: %.0f completions in %.0f forward passes (%.2f tokens per pass), largest batch "
        "%d\n",
        seqs, steps, double(r.tokens) / steps, hj["largest_batch"].get<int>());
    EXPECT_EQ(hj["largest_batch"].get<int>(), 8);
    EXPECT_EQ(srv.stop(), 0);
  }
  // Batching gain: alternate 10 s slices of --batch 1 and --batch 8 (twice each) so that the
  // machine's other load falls on both alike; sum the completions of each.
  size_t ok[2] = {0, 0}, failed[2] = {0, 0};
  double secs[2] = {0, 0};
  std::vector<double> lat[2];
  const int batch[2] = {1, 8};
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < 2; ++i) {
      ServeProcess srv({"-m", model.string(), "--ctx", "256", "--batch", std::to_string(batch[i]),
                        "--queue", "64"});
      auto r = load(srv, 16, 10, 0);
      ok[i] += r.ok;
      failed[i] += r.failed;
      secs[i] += r.seconds;
      lat[i].insert(lat[i].end(), r.latency_ms.begin(), r.latency_ms.end());
      for (const auto& f : r.failures)
        std::printf("  --batch %d failed: %s\n", batch[i], f.c_str());
      EXPECT_EQ(srv.stop(), 0);
    }
  double tput[2];
  for (int i = 0; i < 2; ++i) {
    tput[i] = double(ok[i]) / secs[i];
    std::printf("--batch %d: %zu ok, %zu failed in %.1f s = %.1f req/s; p50 %.1f ms, p99 %.1f ms\n",
                batch[i], ok[i], failed[i], secs[i], tput[i], pct(lat[i], 0.5), pct(lat[i], 0.99));
    EXPECT_EQ(failed[i], 0u);
  }
  std::printf("batching gain (--batch 8 / --batch 1 throughput, same run): %.2fx\n",
              tput[1] / tput[0]);
  EXPECT_GT(tput[1], tput[0]);
}

}  // namespace
}  // namespace ragform::testing

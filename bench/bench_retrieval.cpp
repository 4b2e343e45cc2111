// Retrieval at scale (issue 19; numbers in docs/performance.md). Not a Google Benchmark loop: one
// pass that reports what a user sizing a deployment needs.
//   BM25:  builds an FTS5 index (retrieval/bm25_index.h, as `index build` does: a transaction per
//          20,000 passages, `optimize` at the end) of N synthetic passages of 100 words each, cut
//          from the shared HotpotQA + NQ paragraphs (word windows at seeded random offsets of their
//          concatenated text, so the vocabulary and term statistics are those of real Wikipedia
//          text); then queries the shared questions (HotpotQA dev/train + NQ oracle, OR of quoted
//          words), top 10, on 1 and on 2 threads (one SQLite connection each).
//   dense: a FAISS HNSW index (M = 32, efConstruction 40, efSearch 64; retrieval/dense_index.h)
//          of N_dense random 384-d unit vectors (Gaussian, normalised; no encoder is involved, so
//          the numbers are FAISS's own), queried with 1,000 other random unit vectors, top 10.
// Reports build seconds, index bytes on disk, peak RSS (getrusage ru_maxrss: the BM25 phase runs
// first, so its figure is the BM25 peak; the dense figure is the process peak after both), and the
// p50 / p99 latency of single queries.
//
// usage: bench_retrieval [--n=1000000] [--dense-n=1000000] [--queries=2000] [--dir=DIR]
//                        [--compare-stop-words=N]
// (--queries: how many of the shared questions time BM25; --compare-stop-words: N questions timed
// with and without the stop words in the OR query, alternated; other flags ignored, so
// ctest's --benchmark_min_time does no harm; label slow).
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "eval/datasets.h"
#include "retrieval/bm25_index.h"
#include "retrieval/dense_index.h"

namespace fs = std::filesystem;
using namespace ragform;
using clk = std::chrono::steady_clock;

namespace {

double secs(clk::time_point a, clk::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU time of the calling thread (ms) and of the whole process (s): on a machine shared with other
// jobs the wall-clock latency mostly measures the scheduler, the CPU time the work.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_maxrss) / 1024.0;
}

uint64_t dir_bytes(const fs::path& d) {
  uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(d))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

// Per-query latencies (ms) of `qs` spread over `threads` threads, each with its own connection.
std::vector<double> bm25_latencies(const std::string& dir, const std::vector<std::string>& qs,
                                   int threads, double* wall, std::vector<double>* cpu) {
  std::vector<std::vector<double>> per(static_cast<size_t>(threads)), per_cpu(per.size());
  auto t0 = clk::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      retrieval::Bm25Index ix(dir, retrieval::Bm25Index::Open::Read);
      for (size_t i = size_t(t); i < qs.size(); i += size_t(threads)) {
        auto a = clk::now();
        const double c = thread_cpu_ms();
        auto h = ix.search(qs[i], 10);
        per_cpu[size_t(t)].push_back(thread_cpu_ms() - c);
        per[size_t(t)].push_back(secs(a, clk::now()) * 1e3);
        if (h.size() > 10) std::abort();
      }
    });
  for (auto& t : ts) t.join();
  *wall = secs(t0, clk::now());
  std::vector<double> all;
  for (auto& p : per) all.insert(all.end(), p.begin(), p.end());
  for (auto& p : per_cpu) cpu->insert(cpu->end(), p.begin(), p.end());
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each result line as soon as it is measured
  size_t n = 1000000, dense_n = 1000000, max_queries = 2000, compare = 0;
  std::string dir = "bench-retrieval";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--n=", 0) == 0) n = std::stoull(a.substr(4));
    if (a.rfind("--dense-n=", 0) == 0) dense_n = std::stoull(a.substr(10));
    if (a.rfind("--dir=", 0) == 0) dir = a.substr(6);
    if (a.rfind("--queries=", 0) == 0) max_queries = std::stoull(a.substr(10));
    if (a.rfind("--compare-stop-words=", 0) == 0) compare = std::stoull(a.substr(21));
  }
  const std::string shared = RAGFORM_SHARED_DIR;
  std::vector<std::string> words, questions;
  for (const char* f :
       {"/data/hotpotqa-distractor/dev.jsonl", "/data/hotpotqa-distractor/train.jsonl",
        "/data/lost-in-the-middle/nq-open-oracle.jsonl.gz"}) {
    for (const auto& r : eval::load_qa_file(shared + f).records) {
      questions.push_back(r.question);
      for (const auto& c : r.ctxs) {
        size_t i = 0;
        const std::string& t = c.text;
        while (i < t.size()) {
          while (i < t.size() && t[i] == ' ') ++i;
          size_t j = t.find(' ', i);
          if (j == std::string::npos) j = t.size();
          if (j > i) words.push_back(t.substr(i, j - i));
          i = j;
        }
      }
    }
  }
  // The first max_queries questions of a seeded shuffle (HotpotQA and NQ mixed), so the latency
  // run is bounded and the same on every run.
  std::shuffle(questions.begin(), questions.end(), std::mt19937_64(20));
  if (questions.size() > max_queries) questions.resize(max_queries);
  std::printf("source: %zu words, %zu questions used\n", words.size(), questions.size());

  // ---- BM25
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string bdir = dir + "/bm25";
  std::mt19937_64 rng(19);
  auto t0 = clk::now();
  const double cpu0 = process_cpu_s();
  {
    retrieval::Bm25Index ix(bdir, retrieval::Bm25Index::Open::Create);
    ix.begin();
    retrieval::Passage p;
    for (size_t i = 0; i < n; ++i) {
      const size_t start = size_t(rng() % (words.size() - 100));
      p.id = "s" + std::to_string(i);
      p.title = words[start];
      p.text.clear();
      for (size_t w = 0; w < 100; ++w) {
        if (w) p.text += ' ';
        p.text += words[start + w];
      }
      p.line = i + 1;
      ix.add(p, "synthetic");
      if ((i + 1) % 20000 == 0) {
        ix.commit();
        ix.begin();
      }
    }
    ix.commit();
    ix.optimize();
  }
  const double bm25_build = secs(t0, clk::now()), bm25_cpu = process_cpu_s() - cpu0;
  std::printf(
      "bm25: %zu passages, build %.1f s wall, %.1f s CPU (%.0f passages/CPU-s), index %.1f MiB, "
      "peak RSS %.0f MiB\n",
      n, bm25_build, bm25_cpu, double(n) / bm25_cpu, double(dir_bytes(bdir)) / 1048576.0,
      peak_rss_mib());
  for (int threads : {1, 2}) {
    double wall = 0;
    std::vector<double> cpu;
    auto lat = bm25_latencies(bdir, questions, threads, &wall, &cpu);
    std::printf(
        "bm25 top-10, %d thread%s: %zu queries, wall p50 %.2f ms p99 %.2f ms, CPU p50 %.2f ms "
        "p99 %.2f ms, %.1f queries/s\n",
        threads, threads > 1 ? "s" : "", lat.size(), pct(lat, 0.5), pct(lat, 0.99), pct(cpu, 0.5),
        pct(cpu, 0.99), double(lat.size()) / wall);
  }

  // Stop words dropped (fts5_query) against every word kept, the same questions alternated on
  // one connection (which goes first alternates too), so both see the same cache and load.
  if (compare > 0) {
    retrieval::Bm25Index ix(bdir, retrieval::Bm25Index::Open::Read);
    std::vector<double> drop, keep, ratio;
    for (size_t i = 0; i < std::min(compare, questions.size()); ++i) {
      const std::string a = retrieval::fts5_query(questions[i]),
                        b = retrieval::fts5_query(questions[i], retrieval::StopWords::keep);
      double ta = 0, tb = 0;
      for (int order = 0; order < 2; ++order) {
        const bool first_drop = (i + size_t(order)) % 2 == 0;
        const double t = thread_cpu_ms();
        ix.search_match(first_drop ? a : b, 10);
        (first_drop ? ta : tb) = thread_cpu_ms() - t;
      }
      drop.push_back(ta);
      keep.push_back(tb);
      ratio.push_back(tb / std::max(ta, 1e-6));
    }
    std::printf(
        "bm25 stop words, %zu queries, 1 thread, CPU: dropped p50 %.2f ms p99 %.2f ms; kept p50 "
        "%.2f "
        "ms p99 %.2f ms; per-query time ratio kept/dropped p50 %.2f\n",
        drop.size(), pct(drop, 0.5), pct(drop, 0.99), pct(keep, 0.5), pct(keep, 0.99),
        pct(ratio, 0.5));
  }

  // ---- FAISS HNSW
  if (dense_n > 0) {
    const int d = 384;
    std::normal_distribution<float> g;
    auto unit = [&](float* v) {
      double s = 0;
      for (int j = 0; j < d; ++j) {
        v[j] = g(rng);
        s += double(v[j]) * v[j];
      }
      const float inv = float(1.0 / std::sqrt(s));
      for (int j = 0; j < d; ++j) v[j] *= inv;
    };
    retrieval::DenseMeta m;
    m.encoder = "random";
    m.encoder_sha256 = "none";
    m.pooling = "mean";
    m.dims = d;
    m.kind = retrieval::FaissKind::Hnsw;
    const std::string ddir = dir + "/dense";
    fs::create_directories(ddir);
    retrieval::DenseIndex::set_threads(2);
    retrieval::DenseIndex di(ddir, m);
    const size_t chunk = 50000;
    std::vector<float> x(chunk * d);
    std::vector<int64_t> ids(chunk);
    auto d0 = clk::now();
    const double dcpu0 = process_cpu_s();
    for (size_t b = 0; b < dense_n; b += chunk) {
      const size_t e = std::min(dense_n, b + chunk);
      for (size_t i = b; i < e; ++i) {
        unit(&x[(i - b) * d]);
        ids[i - b] = int64_t(i + 1);
      }
      di.add(x.data(), ids.data(), e - b);
      // a line per chunk: a 1M build runs for most of an hour on two cores
      std::fprintf(stderr, "hnsw: %zu / %zu vectors added, %.0f s wall, %.0f s CPU\n", e, dense_n,
                   secs(d0, clk::now()), process_cpu_s() - dcpu0);
    }
    di.save();
    const double dense_build = secs(d0, clk::now()), dense_cpu = process_cpu_s() - dcpu0;
    std::printf(
        "hnsw: %zu x %d-d, build %.1f s wall, %.1f s CPU on 2 OpenMP threads, index %.1f MiB, "
        "peak RSS %.0f MiB\n",
        dense_n, d, dense_build, dense_cpu, double(dir_bytes(ddir)) / 1048576.0, peak_rss_mib());
    std::vector<float> q(1000 * size_t(d));
    for (size_t i = 0; i < 1000; ++i) unit(&q[i * d]);
    for (int threads : {1, 2}) {
      retrieval::DenseIndex::set_threads(1);  // one query per call: parallelism across callers
      std::vector<std::vector<double>> per(static_cast<size_t>(threads)), per_cpu(per.size());
      auto w0 = clk::now();
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; ++t)
        ts.emplace_back([&, t] {
          for (size_t i = size_t(t); i < 1000; i += size_t(threads)) {
            auto a = clk::now();
            const double c = thread_cpu_ms();
            auto h = di.search(&q[i * d], 1, 10);
            per_cpu[size_t(t)].push_back(thread_cpu_ms() - c);
            per[size_t(t)].push_back(secs(a, clk::now()) * 1e3);
            if (h[0].size() != 10) std::abort();
          }
        });
      for (auto& t : ts) t.join();
      const double wall = secs(w0, clk::now());
      std::vector<double> all, cpu;
      for (auto& p : per) all.insert(all.end(), p.begin(), p.end());
      for (auto& p : per_cpu) cpu.insert(cpu.end(), p.begin(), p.end());
      std::printf(
          "hnsw top-10, %d thread%s: 1000 queries, wall p50 %.3f ms p99 %.3f ms, CPU p50 %.3f ms "
          "p99 %.3f ms, %.0f queries/s\n",
          threads, threads > 1 ? "s" : "", pct(all, 0.5), pct(all, 0.99), pct(cpu, 0.5),
          pct(cpu, 0.99), 1000.0 / wall);
    }
  }
  fs::remove_all(dir);
  return 0;
}

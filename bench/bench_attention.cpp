// Attention kernel throughput (runtime/attention.h), one layer, on the global thread pool, per
// SIMD tier this CPU runs:
// - the Qwen2.5-0.5B shape (14 query heads, 2 kv heads, head_dim 64): prefill of 512 tokens
//   (causal, positions 0..511) and decode of one token at context 512 and 2048, F32 and F16 caches;
// - Gemma 3 270M's shape (4 query heads, 1 kv head, head_dim 256), F32 cache (issue 45's long
//   contexts): a global layer's prefill of 4,096 tokens in one call, the last 512-token pass of a
//   16,384-token prompt on a global layer and on a local one (window 512).
// Counters: GFLOP (4 * head_dim * keys per query head, shown per second) and
// `of_peak`, the fraction of the machine's fp32 FMA peak (RAGFORM_PEAK_GFLOPS, default 365 =
// 2 cores of AVX-512 on the reference machine, issue 5); `vs_scalar` is the speed relative to the
// scalar tier of the same case measured in this process, the number to compare across runs.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/ops/fp16.h"
#include "engine/runtime/attention.h"

using namespace ragform;
using namespace ragform::runtime;

namespace {

const AttnShape kQwen{14, 2, 64, 0.125f};

AttnShape gemma(int window) {
  AttnShape a{4, 1, 256, 1.0f / 16.0f};
  a.window = window;
  return a;
}

double peak_gflops() {
  const char* e = std::getenv("RAGFORM_PEAK_GFLOPS");
  return e ? std::atof(e) : 365.0;
}

struct Data {
  std::vector<float> q, out, k32, v32;
  std::vector<uint16_t> k16, v16;
};

Data make_data(const AttnShape& shape, int n_keys, int n_rows) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Data d;
  d.q.resize(size_t(n_rows) * size_t(shape.q_dim()));
  d.out.resize(d.q.size());
  d.k32.resize(key_cache_elems(n_keys, shape.kv_dim()));
  d.k16.resize(d.k32.size());
  d.v32.resize(size_t(n_keys) * size_t(shape.kv_dim()));
  for (float& x : d.q) x = nd(rng);
  std::vector<float> krow(size_t(shape.kv_dim()));
  for (int j = 0; j < n_keys; ++j) {
    for (float& x : krow) x = nd(rng);
    store_key(d.k32.data(), j, krow.data(), shape.n_head_kv, shape.head_dim);
    store_key(d.k16.data(), j, krow.data(), shape.n_head_kv, shape.head_dim);
  }
  for (float& x : d.v32) x = nd(rng);
  for (float x : d.v32) d.v16.push_back(ops::fp32_to_fp16(x));
  return d;
}

// Seconds per call of the scalar tier for a case, measured once per process.
std::map<std::string, double>& scalar_seconds() {
  static std::map<std::string, double> m;
  return m;
}

void BM_Attention(benchmark::State& state, const AttnShape& shape, const std::string& name,
                  int pos0, int n_rows, bool f16, SimdLevel level) {
  if (level > cpu_simd_level()) {
    state.SkipWithError("tier not supported by this CPU");
    return;
  }
  Data d = make_data(shape, pos0 + n_rows, n_rows);
  AttnSeq s;
  s.kv = f16 ? KvView{nullptr, nullptr, d.k16.data(), d.v16.data()}
             : KvView{d.k32.data(), d.v32.data(), nullptr, nullptr};
  s.q = d.q.data();
  s.out = d.out.data();
  s.pos0 = pos0;
  s.n_rows = n_rows;
  const std::vector<AttnSeq> seqs{s};
  static ThreadPool pool;  // all cores, built once for every benchmark of this binary
  AttnScratch scratch;
  const double flops = attention_flops(shape, seqs);
  const std::string key = name + (f16 ? "h" : "f");
  auto& sc = scalar_seconds();
  if (!sc.count(key)) {  // scalar reference timing for vs_scalar, same process
    AttnScratch s2;
    const int reps = n_rows > 1 ? 1 : 20;
    attention(shape, seqs, pool, s2, SimdLevel::Scalar);
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) attention(shape, seqs, pool, s2, SimdLevel::Scalar);
    sc[key] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  }
  for (auto _ : state) {
    attention(shape, seqs, pool, scratch, level);
    benchmark::DoNotOptimize(d.out.data());
  }
  state.counters["GFLOP"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = pool.size();
  state.counters["peak_GFLOPs"] = peak_gflops();
  // Per second of the measured time: GFLOP/s / peak, and scalar seconds per call / kernel's.
  state.counters["of_peak"] = benchmark::Counter(flops * 1e-9 / peak_gflops(),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["vs_scalar"] =
      benchmark::Counter(sc[key], benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  struct CaseDef {
    const char* name;
    AttnShape shape;
    int pos0, n_rows;
    bool with_f16;
  };
  const CaseDef cases[] = {{"prefill512", kQwen, 0, 512, true},
                           {"decode_ctx512", kQwen, 511, 1, true},
                           {"decode_ctx2048", kQwen, 2047, 1, true},
                           {"gemma_global_prefill4096", gemma(0), 0, 4096, false},
                           {"gemma_global_pass512_at16k", gemma(0), 16384 - 512, 512, false},
                           {"gemma_local_pass512_at16k", gemma(512), 16384 - 512, 512, false}};
  for (const CaseDef& c : cases)
    for (bool f16 : {false, true}) {
      if (f16 && !c.with_f16) continue;
      for (SimdLevel lv : {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512}) {
        const std::string name =
            std::string("attention/") + c.name + (f16 ? "/f16" : "/f32") + "/" + simd_name(lv);
        benchmark::RegisterBenchmark(name.c_str(), BM_Attention, c.shape, std::string(c.name),
                                     c.pos0, c.n_rows, f16, lv)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

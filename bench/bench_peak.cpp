// The machine's measured ceilings (machine_peak.h) on 1 and 2 threads: fp32 FMA, AVX512-BF16
// and AVX512-VNNI arithmetic, and DRAM read bandwidth. These are the denominators of every
// "fraction of peak" in docs/performance.md; run them in the same window as the benchmark they
// divide.
//   bench_peak                      # counters GFLOP/s (or GOP/s) and GB/s
#include <benchmark/benchmark.h>

#include <string>

#include "machine_peak.h"

using namespace ragform::bench;

namespace {

void BM_Arithmetic(benchmark::State& state, PeakKind k) {
  const int threads = int(state.range(0));
  if (!peak_supported(k)) {
    state.SkipWithError("this CPU lacks the instructions");
    return;
  }
  double ops = 0.0;
  for (auto _ : state) ops = arithmetic_peak(k, threads, 1);
  state.counters[k == PeakKind::Int8Vnni || k == PeakKind::Int16Vnni ? "GOP/s" : "GFLOP/s"] =
      ops * 1e-9;
  state.counters["per_thread"] = ops * 1e-9 / threads;
}

void BM_ReadBandwidth(benchmark::State& state) {
  const int threads = int(state.range(0));
  double bytes = 0.0;
  for (auto _ : state) bytes = read_bandwidth(threads, 1);
  state.counters["GB/s"] = bytes * 1e-9;
}

}  // namespace

BENCHMARK_CAPTURE(BM_Arithmetic, fp32_fma, PeakKind::Fp32Fma)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Arithmetic, bf16_dot, PeakKind::Bf16Dot)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Arithmetic, int8_vnni, PeakKind::Int8Vnni)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_Arithmetic, int16_vnni, PeakKind::Int16Vnni)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_ReadBandwidth)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(3);

BENCHMARK_MAIN();

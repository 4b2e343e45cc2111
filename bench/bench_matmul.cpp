// Matmul throughput per weight type and CPU tier (ops::matmul_tier) at the Qwen2.5-0.5B matrix
// shapes, n_in x n_out = 896x896 (attention q/o), 896x4864 (FFN gate/up), 4864x896 (FFN down),
// for prefill (512 tokens), the decode step of 16 and of 4 sequences decoded together, and decode
// (1 token), on a 2-thread pool.
//
// Counters, all computed in this process so they compare across runs of a noisy machine:
//   GFLOP/s       2 * n_in * n_out * tokens per second;
//   peak_fp32     GFLOP/s over the fp32 FMA peak of kThreads threads, measured at start-up in
//                 this process (machine_peak.h; about 234 GFLOP/s on the project's VM);
//   peak_int8     GFLOP/s over the measured AVX512-VNNI int8 peak (quantised types);
//   peak_int16    F16 where the int16 GEMM runs (gemm.h; the ".../int16" entries, the approximate
//                 --f16-gemm int16 path beside the exact default): over the measured vpdpwssd peak;
//   peak_bf16     BF16 on a CPU with AVX512-BF16: over the measured vdpbf16ps peak (the default
//                 AVX-512 entry runs the kernel matmul picks on this CPU, gemm.h bf16_kernel_here;
//                 ".../dot" and ".../fma" each of the two, vdpbf16ps and FMAs under FTZ/DAZ);
//   GB/s, peak_bw decode only: weight bytes read per second, and that over the measured DRAM
//                 read bandwidth of kThreads threads;
//                 one 0.5B matrix (<= 9 MB) stays in the 32 MB L3 between iterations, so these
//                 measure the cache-resident kernel and can exceed 1; the model's decode
//                 (`ragform bench --tg`) is the DRAM-bound figure;
//   vs_scalar     speed over the scalar tier for the same type/shape/tokens (same run).
// Float weights are packed into panels first, as a loaded model holds them (float_panels.h).
// K-quant rows must be multiples of 256, so their 896-long rows use 1024 (llama-quantize falls
// back to Q5_0/Q8_0 for such tensors in real 0.5B files). "kernel1/..." entries: the float kernels
// on one thread, best of 300 products (BM_FloatKernelOneThread). Filter with --benchmark_filter,
// e.g.
//   bench_matmul --benchmark_filter='Q8_0/.*/tokens:512'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "engine/gguf/types.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/float_panels.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/ops.h"
#include "engine/ops/quantize_weights.h"
#include "machine_peak.h"

using namespace ragform;
using namespace ragform::ops;
using gguf::TensorType;

namespace {

constexpr int kThreads = 2;

// The denominators of the peak_* counters, measured once per process (machine_peak.h).
struct Peaks {
  double fp32, int8, int16, bf16, bandwidth;
};
const Peaks& peaks() {
  static const Peaks p{bench::arithmetic_peak(bench::PeakKind::Fp32Fma, kThreads),
                       bench::arithmetic_peak(bench::PeakKind::Int8Vnni, kThreads),
                       bench::arithmetic_peak(bench::PeakKind::Int16Vnni, kThreads),
                       bench::arithmetic_peak(bench::PeakKind::Bf16Dot, kThreads),
                       bench::read_bandwidth(kThreads)};
  return p;
}

// peak_* counters are left out where the ceiling could not be measured (no AVX-512).
void set_fraction(benchmark::State& state, const char* name, double value, double peak) {
  if (peak > 0) state.counters[name] = value / peak;
}

// Weights of type t with realistic values (random normal rows quantised with our quantiser for
// quantised types), so the kernels see well-formed scales.
std::vector<uint8_t> make_weights(TensorType t, int64_t n_in, int64_t n_out) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::vector<float> f(size_t(n_in * n_out));
  for (auto& v : f) v = nd(rng);
  std::vector<uint8_t> out(gguf::row_bytes(t, n_in) * size_t(n_out));
  if (t == TensorType::F32) {
    std::memcpy(out.data(), f.data(), out.size());
  } else if (t == TensorType::F16 || t == TensorType::BF16) {
    auto* h = reinterpret_cast<uint16_t*>(out.data());
    for (size_t i = 0; i < f.size(); ++i)
      h[i] = t == TensorType::F16 ? fp32_to_fp16(f[i]) : fp32_to_bf16(f[i]);
  } else {
    for (int64_t r = 0; r < n_out; ++r)
      quantize_row(t, f.data() + r * n_in, out.data() + size_t(r) * gguf::row_bytes(t, n_in), n_in);
  }
  return out;
}

using Key = std::tuple<int, int64_t, int64_t, int64_t>;  // type, n_in, n_out, tokens
std::map<Key, double>& scalar_seconds() {
  static std::map<Key, double> m;
  return m;
}

// n standard normal activations, the same for every benchmark of a shape (seed 7).
std::vector<float> activations(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  return x;
}

// bf16 other than automatic: BF16 on AVX-512 through that kernel of gemm_f16 instead of matmul.
void BM_Matmul(benchmark::State& state, TensorType t, CpuTier tier, int64_t n_in_nominal,
               int64_t n_out, int64_t n_tokens, F16Gemm f16, Bf16Kernel bf16) {
  const bool k_quant = gguf::type_info(t).block_size == 256;
  const int64_t n_in = k_quant ? (n_in_nominal + 255) / 256 * 256 : n_in_nominal;
  const auto data = make_weights(t, n_in, n_out);
  WeightView w{t, data.data(), n_in, n_out};
  w.policy.f16 = f16;
  // Float weights packed into panels as a loaded model holds them (packed_weights.h).
  std::vector<uint8_t> panels;
  if (matmul_uses_panels(t, tier)) {
    panels.resize(panels_bytes(w));
    pack_panels(w, 0, panel_count(n_out), panels.data());
    w.panels = panels.data();
  }
  const std::vector<float> x = activations(n_in * n_tokens);
  std::vector<float> y(size_t(n_out * n_tokens), 0.0f);
  ThreadPool pool(kThreads);
  const auto run = [&] {
    if (bf16 == Bf16Kernel::automatic)
      matmul_tier(w, x.data(), n_tokens, y.data(), pool, tier);
    else
      gemm_f16(w, x.data(), n_tokens, y.data(), pool, tier, bf16);
  };
  run();  // warm scratch buffers
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      double(std::max<benchmark::IterationCount>(1, state.iterations()));
  const double flops = 2.0 * double(n_in) * double(n_out) * double(n_tokens);
  const double gflops = flops / secs;
  state.counters["GFLOP/s"] = gflops * 1e-9;
  set_fraction(state, "peak_fp32", gflops, peaks().fp32);
  const bool quantised = t != TensorType::F32 && t != TensorType::F16 && t != TensorType::BF16;
  if (quantised) set_fraction(state, "peak_int8", gflops, peaks().int8);
  if (gemm_f16_int16_supported(w, n_tokens, clamp_tier(tier)))
    set_fraction(state, "peak_int16", gflops, peaks().int16);
  if (t == TensorType::BF16 && clamp_tier(tier) == CpuTier::Avx512)
    set_fraction(state, "peak_bf16", gflops, peaks().bf16);
  if (n_tokens == 1) {
    const double bytes = double(data.size()) / secs;
    state.counters["GB/s"] = bytes * 1e-9;
    set_fraction(state, "peak_bw", bytes, peaks().bandwidth);
  }
  const Key key{int(t), n_in, n_out, n_tokens};
  if (tier == CpuTier::Scalar) scalar_seconds()[key] = secs;
  const auto it = scalar_seconds().find(key);
  if (it != scalar_seconds().end()) state.counters["vs_scalar"] = it->second / secs;
  const Bf16Kernel ran = bf16 == Bf16Kernel::automatic ? bf16_kernel_here() : bf16;
  const bool bf16_avx512 = t == TensorType::BF16 && clamp_tier(tier) == CpuTier::Avx512;
  state.SetLabel(std::string(tier_name(clamp_tier(tier))) +
                 (!bf16_avx512             ? " "
                  : ran == Bf16Kernel::dot ? " vdpbf16ps "
                                           : " fma ") +
                 cpu_summary());
}

// The float kernels on one thread, 896x896 against 96 tokens, each iteration timed on its own:
// best_GFLOP/s is the fastest iteration's rate and best_peak_fp32 that over the one-thread fp32
// FMA peak. On a shared machine the best of a few hundred 1 ms products is what the kernel does
// when it has the core; the means of the 2-thread entries above are what it gets.
void BM_FloatKernelOneThread(benchmark::State& state, TensorType t, Bf16Kernel bf16) {
  constexpr int64_t n_in = 896, n_out = 896, n_tokens = 96;
  const auto data = make_weights(t, n_in, n_out);
  WeightView w{t, data.data(), n_in, n_out};
  std::vector<uint8_t> panels(panels_bytes(w));
  pack_panels(w, 0, panel_count(n_out), panels.data());
  w.panels = panels.data();
  const std::vector<float> x = activations(n_in * n_tokens);
  std::vector<float> y(size_t(n_out * n_tokens), 0.0f);
  ThreadPool pool(1);
  gemm_f16(w, x.data(), n_tokens, y.data(), pool, CpuTier::Avx512, bf16);
  double best = 1e30;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    gemm_f16(w, x.data(), n_tokens, y.data(), pool, CpuTier::Avx512, bf16);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(y.data());
  }
  // The peak measured the same way: the best of many short runs.
  static const double peak1 = bench::arithmetic_peak(bench::PeakKind::Fp32Fma, 1, 100, 1'000'000);
  const double gflops = 2.0 * double(n_in * n_out * n_tokens) / best;
  state.counters["best_GFLOP/s"] = gflops * 1e-9;
  set_fraction(state, "best_peak_fp32", gflops, peak1);
}

const TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                             TensorType::Q8_0, TensorType::Q5_0, TensorType::Q4_0,
                             TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

const int kRegistered = [] {
  peaks();  // measured before any benchmark starts its thread pool
  const int64_t shapes[][2] = {{896, 896}, {896, 4864}, {4864, 896}};
  for (TensorType t : kTypes)
    for (const auto& s : shapes)
      for (int64_t tokens : {512, 16, 4, 1})
        for (CpuTier tier : {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512}) {
          if (clamp_tier(tier) != tier) continue;  // not on this CPU
          const std::string name = std::string("matmul/") + gguf::type_name(t) + "/" +
                                   tier_name(tier) + "/" + std::to_string(s[0]) + "x" +
                                   std::to_string(s[1]) + "/tokens:" + std::to_string(tokens);
          benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, t, tier, s[0], s[1], tokens,
                                       F16Gemm::exact, Bf16Kernel::automatic)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
          // The approximate int16 F16 prefill (--f16-gemm int16), beside the exact default.
          if (t == TensorType::F16 && tier == CpuTier::Avx512 && tokens > 1)
            benchmark::RegisterBenchmark((name + "/int16").c_str(), BM_Matmul, t, tier, s[0], s[1],
                                         tokens, F16Gemm::int16, Bf16Kernel::automatic)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
          // BF16's two kernels on a CPU with AVX512-BF16: vdpbf16ps, and the same order on FMAs
          // under FTZ/DAZ.
          if (t == TensorType::BF16 && tier == CpuTier::Avx512 && cpu_features().avx512bf16)
            for (Bf16Kernel k : {Bf16Kernel::dot, Bf16Kernel::fma})
              benchmark::RegisterBenchmark(
                  (name + (k == Bf16Kernel::dot ? "/dot" : "/fma")).c_str(), BM_Matmul, t, tier,
                  s[0], s[1], tokens, F16Gemm::exact, k)
                  ->Unit(benchmark::kMillisecond)
                  ->UseRealTime();
        }
  if (clamp_tier(CpuTier::Avx512) == CpuTier::Avx512) {
    benchmark::RegisterBenchmark("kernel1/f16", BM_FloatKernelOneThread, TensorType::F16,
                                 Bf16Kernel::automatic)
        ->Iterations(300);
    benchmark::RegisterBenchmark("kernel1/bf16/fma", BM_FloatKernelOneThread, TensorType::BF16,
                                 Bf16Kernel::fma)
        ->Iterations(300);
    if (cpu_features().avx512bf16)
      benchmark::RegisterBenchmark("kernel1/bf16/dot", BM_FloatKernelOneThread, TensorType::BF16,
                                   Bf16Kernel::dot)
          ->Iterations(300);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();

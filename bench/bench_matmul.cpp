// Matmul throughput per weight type at a Qwen2.5-0.5B FFN shape (n_in 896 -> n_out 4864: the
// gate/up projections), for 1 token (decode) and 64 tokens (prefill). Reports GFLOP/s (counter
// "GFLOP", shown per second; 2 * n_in * n_out * n_tokens per iteration) and the speed relative
// to F32 measured in the same process (`speed_vs_f32`), so numbers compare across machines.
//
// Row length 896 is not a multiple of 256, so K-quant types use n_in = 1024 here (the nearest
// multiple; real 0.5B files fall back to Q5_0/Q8_0 for such rows, as llama-quantize does).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/gguf/types.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"

using namespace ragform;
using namespace ragform::ops;
using gguf::TensorType;

namespace {

// Random but well-formed weights: random quant bytes with finite f16 scales.
std::vector<uint8_t> make_weights(TensorType t, int64_t n_in, int64_t n_out) {
  std::mt19937 rng(1234);
  const auto& ti = gguf::type_info(t);
  std::vector<uint8_t> data(gguf::row_bytes(t, n_in) * size_t(n_out));
  for (auto& b : data) b = uint8_t(rng());
  if (t == TensorType::F32) {
    auto* f = reinterpret_cast<float*>(data.data());
    std::normal_distribution<float> nd(0.0f, 0.05f);
    for (size_t i = 0; i < data.size() / 4; ++i) f[i] = nd(rng);
    return data;
  }
  if (t == TensorType::F16 || t == TensorType::BF16) {
    auto* h = reinterpret_cast<uint16_t*>(data.data());
    std::normal_distribution<float> nd(0.0f, 0.05f);
    for (size_t i = 0; i < data.size() / 2; ++i)
      h[i] = t == TensorType::F16 ? fp32_to_fp16(nd(rng)) : fp32_to_bf16(nd(rng));
    return data;
  }
  // Overwrite the f16 scale fields (offsets from ggml-common.h) with a finite scale.
  std::vector<int> offs;
  switch (t) {
    case TensorType::Q2_K:
      offs = {80, 82};
      break;
    case TensorType::Q3_K:
      offs = {108};
      break;
    case TensorType::Q6_K:
      offs = {208};
      break;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
      offs = {0, 2};
      break;
    default:
      offs = {0};
  }
  const uint16_t scale = fp32_to_fp16(0.01f);
  for (size_t b = 0; b < data.size() / size_t(ti.type_size); ++b)
    for (int o : offs) std::memcpy(data.data() + b * size_t(ti.type_size) + size_t(o), &scale, 2);
  return data;
}

// Seconds per iteration of F32 for each (tokens, threads), the baseline of the same run.
std::map<std::pair<int64_t, int64_t>, double>& f32_seconds() {
  static std::map<std::pair<int64_t, int64_t>, double> m;
  return m;
}

void BM_Matmul(benchmark::State& state, TensorType t) {
  const int64_t n_tokens = state.range(0);
  const int threads = int(state.range(1));
  const int64_t n_in = gguf::type_info(t).block_size == 256 ? 1024 : 896;
  const int64_t n_out = 4864;
  const auto data = make_weights(t, n_in, n_out);
  const WeightView w{t, data.data(), n_in, n_out};
  std::vector<float> x(size_t(n_in * n_tokens)), y(size_t(n_out * n_tokens));
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(threads);
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    matmul(w, x.data(), n_tokens, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      double(std::max<benchmark::IterationCount>(1, state.iterations()));
  const double flops = 2.0 * double(n_in) * double(n_out) * double(n_tokens);
  state.counters["GFLOP"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  // Speed relative to F32 at the same tokens/threads (F32 is registered, so run, first).
  const auto key = std::make_pair(n_tokens, state.range(1));
  if (t == TensorType::F32) f32_seconds()[key] = secs;
  const auto it = f32_seconds().find(key);
  if (it != f32_seconds().end() && secs > 0) state.counters["speed_vs_f32"] = it->second / secs;
  state.SetLabel(gguf::type_name(t));
}

const TensorType kTypes[] = {TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0,
                             TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
                             TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
                             TensorType::Q6_K};

const int kRegistered = [] {
  for (TensorType t : kTypes) {
    benchmark::RegisterBenchmark((std::string("matmul/") + gguf::type_name(t)).c_str(), BM_Matmul,
                                 t)
        ->ArgNames({"tokens", "threads"})
        ->Args({1, 1})
        ->Args({1, 2})
        ->Args({64, 2})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();

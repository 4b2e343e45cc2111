// The machine's ceilings, measured in the benchmark's own process, so "fraction of peak" is a
// same-run ratio on a machine whose clock and neighbours drift: fp32 FMA, AVX512-BF16 and
// AVX512-VNNI arithmetic peaks and the DRAM read bandwidth, each with 1..N threads running at
// once (wall time over the whole parallel section, so a busy machine shows up as a lower peak).
//
// The arithmetic loops keep 16 independent accumulators (more than FMA latency x pipes on any
// current core) and touch no memory; the bandwidth loop streams a buffer 16x the size of L3.
// On the project's VM (2 cores of an AMD EPYC Zen 5) these measured fp32 ~117 GFLOP/s per core,
// which is one 512-bit FMA per cycle, not the two that a 365 GFLOP/s estimate assumes.
#pragma once
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 _mm512_undefined_* in reductions
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "engine/ops/cpu_features.h"

namespace ragform::bench {

enum class PeakKind { Fp32Fma, Bf16Dot, Int8Vnni, Int16Vnni };

namespace detail {

constexpr int kAcc = 16;
constexpr long kIters = 4'000'000;  // ~25-50 ms per thread

// Operations per instruction: FMA 16 lanes x 2; vdpbf16ps 16 lanes x 2 pairs x 2;
// vpdpbusd 16 lanes x 4 byte products x 2; vpdpwssd 16 lanes x 2 word products x 2.
inline double ops_per_instruction(PeakKind k) {
  return k == PeakKind::Fp32Fma                               ? 32
         : k == PeakKind::Bf16Dot || k == PeakKind::Int16Vnni ? 64
                                                              : 128;
}

__attribute__((target("avx512f"))) inline float fma_loop(long iters) {
  __m512 acc[kAcc];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512 b = _mm512_set1_ps(1.0f), c = _mm512_set1_ps(1e-9f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_fmadd_ps(b, c, acc[j]);
    __asm__ volatile("" : "+v"(b));  // keeps the loop from being folded
  }
  __m512 s = acc[0];
  for (int j = 1; j < kAcc; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

// The fp32 peak of a CPU without AVX-512: 8-lane FMAs (16 operations per instruction).
__attribute__((target("avx2,fma"))) inline float fma_loop_avx2(long iters) {
  __m256 acc[kAcc];
  for (auto& a : acc) a = _mm256_setzero_ps();
  __m256 b = _mm256_set1_ps(1.0f), c = _mm256_set1_ps(1e-9f);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm256_fmadd_ps(b, c, acc[j]);
    __asm__ volatile("" : "+x"(b));
  }
  __m256 s = acc[0];
  for (int j = 1; j < kAcc; ++j) s = _mm256_add_ps(s, acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0] + lanes[7];
}

__attribute__((target("avx512f,avx512bf16"))) inline float bf16_loop(long iters) {
  __m512 acc[kAcc];
  for (auto& a : acc) a = _mm512_setzero_ps();
  __m512bh b = (__m512bh)_mm512_set1_epi16(0x3f80), c = (__m512bh)_mm512_set1_epi16(0x3000);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], b, c);
    __asm__ volatile("" : "+v"(b));
  }
  __m512 s = acc[0];
  for (int j = 1; j < kAcc; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

// Words = false: vpdpbusd (int8 products); true: vpdpwssd (int16 products, the F16 GEMM's).
template <bool Words>
__attribute__((target("avx512f,avx512vnni"))) inline float vnni_loop(long iters) {
  __m512i acc[kAcc];
  for (auto& a : acc) a = _mm512_setzero_si512();
  __m512i b = _mm512_set1_epi8(1), c = _mm512_set1_epi8(1);
  for (long i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAcc; ++j)
      acc[j] = Words ? _mm512_dpwssd_epi32(acc[j], b, c) : _mm512_dpbusd_epi32(acc[j], b, c);
    __asm__ volatile("" : "+v"(b));
  }
  __m512i s = acc[0];
  for (int j = 1; j < kAcc; ++j) s = _mm512_add_epi32(s, acc[j]);
  return float(_mm512_reduce_add_epi32(s));
}

template <typename Fn>
double seconds_on_threads(int threads, Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&fn, t] { fn(t); });
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

__attribute__((target("avx512f"))) inline float sum_avx512(const float* p, size_t n) {
  __m512 a = _mm512_setzero_ps(), b = a, c = a, d = a;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a = _mm512_add_ps(a, _mm512_load_ps(p + i));
    b = _mm512_add_ps(b, _mm512_load_ps(p + i + 16));
    c = _mm512_add_ps(c, _mm512_load_ps(p + i + 32));
    d = _mm512_add_ps(d, _mm512_load_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}

}  // namespace detail

// Whether this CPU can run the loop for `k` (the fp32 one on AVX2 + FMA too, at 8 lanes; the
// others need AVX-512).
inline bool peak_supported(PeakKind k) {
  const auto& f = ops::cpu_features();
  if (k == PeakKind::Fp32Fma && !f.avx512f) return f.avx2 && f.fma;
  if (!f.avx512f) return false;
  if (k == PeakKind::Bf16Dot) return f.avx512bf16;
  if (k == PeakKind::Int8Vnni || k == PeakKind::Int16Vnni) return f.avx512vnni;
  return true;
}

// Operations per second (FLOP/s, or integer multiply-adds x 2 for VNNI) of `threads` threads at
// once; best of `reps` runs of `iters` loop iterations (16 instructions each); 0 when the CPU
// lacks the instructions. Many short runs (say 100 of 1,000,000) give a busy machine's ceiling when
// a thread has its core, where the default's three long runs give what it gets on average.
inline double arithmetic_peak(PeakKind k, int threads, int reps = 3, long iters = detail::kIters) {
  if (!peak_supported(k)) return 0.0;
  const bool avx512 = ops::cpu_features().avx512f;
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    std::vector<float> sink(static_cast<size_t>(threads));
    const double s = detail::seconds_on_threads(threads, [&](int t) {
      sink[size_t(t)] = k == PeakKind::Fp32Fma
                            ? (avx512 ? detail::fma_loop(iters) : detail::fma_loop_avx2(iters))
                        : k == PeakKind::Bf16Dot  ? detail::bf16_loop(iters)
                        : k == PeakKind::Int8Vnni ? detail::vnni_loop<false>(iters)
                                                  : detail::vnni_loop<true>(iters);
    });
    if (sink[0] == 1.5f) std::abort();  // uses the result; the sums are never exactly 1.5
    const double lanes_scale = k == PeakKind::Fp32Fma && !avx512 ? 0.5 : 1.0;  // ymm: 8 lanes
    const double ops = double(threads) * double(iters) * detail::kAcc *
                       detail::ops_per_instruction(k) * lanes_scale;
    best = std::max(best, ops / s);
  }
  return best;
}

// DRAM read bandwidth in bytes/s: `threads` threads each summing their share of a 512 MiB
// buffer (touched once beforehand, so no page faults are timed); best of `reps`.
inline double read_bandwidth(int threads, int reps = 3) {
  if (!ops::cpu_features().avx512f) return 0.0;
  constexpr size_t kBytes = size_t(512) << 20;
  static const std::unique_ptr<float, decltype(&std::free)> buf(
      [] {
        auto* p = static_cast<float*>(std::aligned_alloc(64, kBytes));
        std::memset(p, 0, kBytes);
        return p;
      }(),
      &std::free);
  const size_t n = kBytes / sizeof(float), share = n / size_t(threads) / 64 * 64;
  double best = 0.0;
  for (int r = 0; r < reps; ++r) {
    std::vector<float> sink(static_cast<size_t>(threads));
    const double s = detail::seconds_on_threads(threads, [&](int t) {
      sink[size_t(t)] = detail::sum_avx512(buf.get() + size_t(t) * share, share);
    });
    if (sink[0] == 1.5f) std::abort();
    best = std::max(best, double(share * size_t(threads) * sizeof(float)) / s);
  }
  return best;
}

}  // namespace ragform::bench

#pragma GCC diagnostic pop

// BF16's order is the order of AVX512-BF16's vdpbf16ps (bf16_dot.h): each 32-bit lane computes
// F(w[2j] a[2j] + F(w[2j+1] a[2j+1] + acc)), odd element first, one rounding per step, subnormal
// inputs read as zero and results below 2^-126 after rounding flushed to a zero of their sign.
// Every BF16 kernel returns the bits of that scalar order (float_panels_test.cpp), so the
// instruction must too, on every CPU that has it: this test checks it wherever it runs, on cases
// chosen to tell the candidate orders apart and on millions of random lanes (3.2 M by default, in
// under a second; RAGFORM_BF16_LANES=N for more), and prints what it compared. A CPU whose bits
// differ fails here, with a table of the input classes that differ and examples; docs/
// performance.md keeps the vendors measured so far.
//
// The FMA path of the kernels without the instruction (gemm_f16.cpp kBF16: AVX2, AVX-512 without
// BF16) rests on MXCSR's FTZ/DAZ giving the same steps; checked here the same way on any CPU with
// FMA.
#include <gtest/gtest.h>

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/ops/bf16_dot.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/fp16.h"
#include "engine/ops/simd_target.h"

using namespace ragform::ops;

namespace {

// One lane: the accumulator and the pair (element 2j in the low half of w and a).
struct Lane {
  float acc;
  uint32_t w, a;
};

float lo(uint32_t p) { return bf16_to_fp32(uint16_t(p & 0xffffu)); }
float hi(uint32_t p) { return bf16_to_fp32(uint16_t(p >> 16)); }
uint32_t pair(float even, float odd) {
  return uint32_t(fp32_to_bf16(even)) | uint32_t(fp32_to_bf16(odd)) << 16;
}

float scalar_lane(const Lane& l) {
  return bf16_pair_step(l.acc, lo(l.w), lo(l.a), hi(l.w), hi(l.a));
}

}  // namespace

RAGFORM_AVX512_WARNINGS_OFF
RAGFORM_TARGET_BEGIN("avx2,fma,avx512f,avx512bw,avx512vl,avx512bf16")
namespace {
// vdpbf16ps over lanes (a multiple of 16).
void dpbf16_lanes(const std::vector<Lane>& lanes, std::vector<float>& out) {
  out.resize(lanes.size());
  for (size_t i = 0; i + 16 <= lanes.size(); i += 16) {
    alignas(64) float acc[16];
    alignas(64) uint32_t w[16], a[16];
    for (int j = 0; j < 16; ++j) {
      acc[j] = lanes[i + size_t(j)].acc;
      w[j] = lanes[i + size_t(j)].w;
      a[j] = lanes[i + size_t(j)].a;
    }
    const __m512 r = _mm512_dpbf16_ps(_mm512_load_ps(acc), (__m512bh)_mm512_load_si512(w),
                                      (__m512bh)_mm512_load_si512(a));
    _mm512_storeu_ps(out.data() + i, r);
  }
}
}  // namespace
RAGFORM_TARGET_END
RAGFORM_AVX512_WARNINGS_ON

RAGFORM_TARGET_BEGIN("avx2,fma")
namespace {
// Two scalar FMAs per lane, odd element first, with MXCSR's FTZ and DAZ bits set (the kernels'
// kBF16 path), in a function of its own so no FP operation moves across the MXCSR writes.
__attribute__((noinline)) void fma_lanes(const std::vector<Lane>& lanes, std::vector<float>& out) {
  out.resize(lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Lane& l = lanes[i];
    __m128 r = _mm_fmadd_ss(_mm_set_ss(hi(l.w)), _mm_set_ss(hi(l.a)), _mm_set_ss(l.acc));
    r = _mm_fmadd_ss(_mm_set_ss(lo(l.w)), _mm_set_ss(lo(l.a)), r);
    out[i] = _mm_cvtss_f32(r);
  }
}
void fma_lanes_ftz_daz(const std::vector<Lane>& lanes, std::vector<float>& out) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u);
  fma_lanes(lanes, out);
  _mm_setcsr(saved);
}
}  // namespace
RAGFORM_TARGET_END

namespace {

bool same(float got, float want) {
  return std::isnan(want) ? std::isnan(got)
                          : std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want);
}

std::string hex(float f) {
  std::ostringstream o;
  o << std::hexfloat << f << " (0x" << std::hex << std::bit_cast<uint32_t>(f) << ")";
  return o.str();
}

// Cases that tell the candidate orders apart, with the result the order gives (written out, not
// computed): w0 a0 is the even element's product, w1 a1 the odd one's. All inputs are bf16.
struct Case {
  const char* what;
  float acc, w0, a0, w1, a1, want;
};
constexpr float kMax = 0x1.fffffep127f;
const Case kCases[] = {
    {"plain", 1.0f, 2.0f, 3.0f, 0.5f, 0.25f, 7.125f},
    // 1 + (2^-24 + 2^-30) -> 1 + 2^-23; + 3 * 2^-24 -> tie -> 1 + 2^-22. Even first: 1 + 3 * 2^-23.
    {"odd element first", 1.0f, 1.5f, 0x1p-23f, 0x1.04p0f, 0x1p-24f, 0x1.000004p0f},
    {"cancellation to +0", -6.0f, 2.0f, 3.0f, 0.0f, 0.0f, 0.0f},
    {"-0 + -0 stays -0", -0.0f, -0.0f, 1.0f, -0.0f, 1.0f, -0.0f},
    {"+0 + -0 is +0", 0.0f, -0.0f, 1.0f, -0.0f, 1.0f, 0.0f},
    {"tiny product flushed, sign kept", 0.0f, -0x1p-65f, 0x1p-65f, 0.0f, 0.0f, -0.0f},
    {"tiny product flushed, positive", 0.0f, 0x1p-65f, 0x1p-65f, 0.0f, 0.0f, 0.0f},
    {"odd step's -0 meets the even step's +0", 0.0f, 0.0f, 0.0f, -0x1p-65f, 0x1p-65f, 0.0f},
    {"normal acc, subnormal sum: flushed", 0x1.8p-126f, -0x1p-63f, 0x1p-63f, 0.0f, 0.0f, 0.0f},
    // 2^-126 - 2^-151: a tie at the unbounded exponent's grid, to even: 2^-126.
    {"2^-126 - 2^-151 rounds to 2^-126", 0x1p-126f, -0x1p-76f, 0x1p-75f, 0.0f, 0.0f, 0x1p-126f},
    // 2^-126 - 2^-150: exact at the unbounded exponent, so tiny: flushed (IEEE gives 2^-126).
    {"2^-126 - 2^-150 is tiny after rounding", 0x1p-126f, -0x1p-75f, 0x1p-75f, 0.0f, 0.0f, 0.0f},
    {"-(2^-126 - 2^-150) flushed to -0", -0x1p-126f, 0x1p-75f, 0x1p-75f, 0.0f, 0.0f, -0.0f},
    {"2^-126 + 2^-150 ties to 2^-126", 0x1.000002p-126f, -0x1p-75f, 0x1p-75f, 0.0f, 0.0f,
     0x1p-126f},
    {"a product of 2^-150 moves a tie (fused)", 0x1.000002p-126f, 0x1p-75f, 0x1p-75f, 0.0f, 0.0f,
     0x1.000004p-126f},
    // (2^-127)(2^126) would be 0.5 and move the sum to 1.5 or 0.5.
    {"subnormal weight read as zero", 1.0f, 0x1p-127f, 0x1p126f, 0.0f, 0.0f, 1.0f},
    {"subnormal activation read as zero", 1.0f, 0x1p126f, -0x1p-127f, 0.0f, 0.0f, 1.0f},
    {"subnormal accumulator read as zero", 0x1p-140f, -0x1p-70f, 0x1p-70f, 0.0f, 0.0f, -0.0f},
    {"overflow to +inf", 0.0f, 0x1p100f, 0x1p100f, 0.0f, 0.0f, INFINITY},
    {"overflow to -inf", 1.0f, -0x1p100f, 0x1p100f, 0.0f, 0.0f, -INFINITY},
    {"an overflowing product cancelled (fused)", -kMax, 0x1p64f, 0x1p64f, 0.0f, 0.0f, 0x1p104f},
    {"max + 2^104 rounds to inf", kMax, 0x1p52f, 0x1p52f, 0.0f, 0.0f, INFINITY},
    {"max + 2^102 stays max", kMax, 0x1p51f, 0x1p51f, 0.0f, 0.0f, kMax},
    {"inf - inf", INFINITY, -INFINITY, 1.0f, 0.0f, 0.0f, NAN},
    {"0 x inf", 0.0f, 0.0f, INFINITY, 0.0f, 0.0f, NAN},
    {"subnormal x inf (DAZ: 0 x inf)", 0.0f, 0x1p-130f, INFINITY, 0.0f, 0.0f, NAN},
    {"NaN weight", 1.0f, NAN, 1.0f, 0.0f, 0.0f, NAN},
};

std::vector<Lane> case_lanes() {
  std::vector<Lane> lanes;
  for (const Case& c : kCases) lanes.push_back({c.acc, pair(c.w0, c.w1), pair(c.a0, c.a1)});
  while (lanes.size() % 16 != 0) lanes.push_back({0.0f, 0u, 0u});
  return lanes;
}

// Random lanes in classes of inputs; each lane's class is kept for the report.
enum Class {
  kBits,       // every bit random: NaN, inf, subnormal and huge inputs all occur
  kCancel,     // ordinary magnitudes, accumulator near -(odd product): cancellation
  kTiny,       // products and accumulator near 2^-126: subnormal results, flushes
  kHuge,       // products and accumulator near fp32's largest: overflow, cancelled overflow
  kSubnormal,  // some inputs bf16 subnormals
  kSpecial,    // inputs from {+-0, +-inf, NaN, +-min normal, +-max, +-subnormal, +-1}
  kClasses
};
const char* const kClassNames[] = {"random bits",          "cancellation",     "tiny (near 2^-126)",
                                   "huge (near overflow)", "subnormal inputs", "special values"};

uint16_t bf16_with_exp(std::mt19937_64& rng, int lo_exp, int hi_exp) {
  const uint64_t r = rng();
  const int e = lo_exp + int(r % uint64_t(hi_exp - lo_exp + 1));
  return uint16_t(((r >> 20) & 1u) << 15 | uint32_t(e + 127) << 7 | ((r >> 24) & 0x7fu));
}

Lane random_lane(std::mt19937_64& rng, Class c) {
  static const uint16_t kSpecials[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x0080,
                                       0x8080, 0x7f7f, 0xff7f, 0x0001, 0x807f, 0x3f80, 0xbf80};
  uint16_t v[4];
  float acc = 0.0f;
  const uint64_t r = rng();
  switch (c) {
    case kBits:
      for (auto& x : v) x = uint16_t(rng());
      acc = std::bit_cast<float>(uint32_t(rng()));
      break;
    case kCancel: {
      for (auto& x : v) x = bf16_with_exp(rng, -6, 6);
      const float p = bf16_to_fp32(v[1]) * bf16_to_fp32(v[3]);  // exact: 16 bits
      acc = std::bit_cast<float>(std::bit_cast<uint32_t>(-p) + uint32_t(r % 5) - 2u);
      if (r & 0x100) acc = -p - bf16_to_fp32(v[0]) * bf16_to_fp32(v[2]);
      break;
    }
    case kTiny:
      for (auto& x : v) x = bf16_with_exp(rng, -70, -56);
      acc = std::bit_cast<float>(uint32_t((r >> 8) & 1u) << 31 | uint32_t(r % 3) << 23 |
                                 uint32_t((r >> 12) & 0x7fffffu));  // subnormal or just above
      break;
    case kHuge:
      for (auto& x : v) x = bf16_with_exp(rng, 58, 70);
      acc = std::bit_cast<float>(uint32_t((r >> 8) & 1u) << 31 | uint32_t(250 + r % 5) << 23 |
                                 uint32_t((r >> 12) & 0x7fffffu));
      break;
    case kSubnormal:
      for (auto& x : v)
        x = (rng() & 1) ? uint16_t(rng() & 0x807f) : bf16_with_exp(rng, -130 + 4, 10);
      acc = (r & 1) ? std::bit_cast<float>(uint32_t(r >> 8) & 0x807fffffu)
                    : bf16_to_fp32(bf16_with_exp(rng, -126, 0));
      break;
    default:
      for (auto& x : v) x = kSpecials[rng() % std::size(kSpecials)];
      acc = bf16_to_fp32(kSpecials[r % std::size(kSpecials)]);
      break;
  }
  return {acc, uint32_t(v[0]) | uint32_t(v[1]) << 16, uint32_t(v[2]) | uint32_t(v[3]) << 16};
}

// Compares `run` with the scalar order over n random lanes (RAGFORM_BF16_LANES overrides n) of
// every class; prints a table (per class: lanes, differing lanes, NaN lanes, NaN lanes whose
// payload differs: not part of the order) and fails with examples of the differing lanes.
void compare_random(const char* what, void (*run)(const std::vector<Lane>&, std::vector<float>&),
                    int64_t n) {
  if (const char* e = std::getenv("RAGFORM_BF16_LANES")) n = std::max<int64_t>(16, std::atoll(e));
  n = (n + 15) / 16 * 16;
  std::mt19937_64 rng(45);
  constexpr int64_t kChunk = 1 << 16;
  int64_t lanes_of[kClasses] = {}, diff_of[kClasses] = {}, nan_of[kClasses] = {},
          payload_of[kClasses] = {};
  std::ostringstream examples;
  int shown = 0;
  std::vector<Lane> lanes;
  std::vector<Class> cls;
  std::vector<float> got;
  for (int64_t done = 0; done < n; done += kChunk) {
    const int64_t m = std::min(kChunk, n - done);
    lanes.clear();
    cls.clear();
    for (int64_t i = 0; i < m; ++i) {
      const auto c = Class((done + i) % kClasses);
      cls.push_back(c);
      lanes.push_back(random_lane(rng, c));
    }
    run(lanes, got);
    for (size_t i = 0; i < lanes.size(); ++i) {
      const float want = scalar_lane(lanes[i]);
      ++lanes_of[cls[i]];
      if (std::isnan(want) && std::isnan(got[i])) {
        ++nan_of[cls[i]];
        if (std::bit_cast<uint32_t>(want) != std::bit_cast<uint32_t>(got[i])) ++payload_of[cls[i]];
      }
      if (same(got[i], want)) continue;
      ++diff_of[cls[i]];
      if (shown++ < 12)
        examples << "  [" << kClassNames[cls[i]] << "] acc " << hex(lanes[i].acc) << " w0 "
                 << hex(lo(lanes[i].w)) << " a0 " << hex(lo(lanes[i].a)) << " w1 "
                 << hex(hi(lanes[i].w)) << " a1 " << hex(hi(lanes[i].a)) << ": got " << hex(got[i])
                 << ", scalar order " << hex(want) << "\n";
    }
  }
  std::ostringstream table;
  table << what << " against the scalar order (bf16_dot.h), " << n << " random lanes:\n"
        << "  | class | lanes | differ | NaN | NaN payload differs |\n";
  int64_t total_diff = 0;
  for (int c = 0; c < kClasses; ++c) {
    table << "  | " << kClassNames[c] << " | " << lanes_of[c] << " | " << diff_of[c] << " | "
          << nan_of[c] << " | " << payload_of[c] << " |\n";
    total_diff += diff_of[c];
  }
  std::cout << table.str();
  EXPECT_EQ(total_diff, 0) << table.str() << "first differing lanes:\n" << examples.str();
}

}  // namespace

// The scalar order itself, everywhere: the written-out results of the cases.
TEST(Bf16Dot, ScalarOrderGivesTheCases) {
  for (const Case& c : kCases) {
    for (float v : {c.w0, c.a0, c.w1, c.a1})  // the cases' inputs are bf16 values
      ASSERT_EQ(std::bit_cast<uint32_t>(v) & 0xffffu, 0u) << c.what;
    const float got = bf16_pair_step(c.acc, c.w0, c.a0, c.w1, c.a1);
    EXPECT_TRUE(same(got, c.want)) << c.what << ": " << hex(got) << ", want " << hex(c.want);
  }
}

TEST(Bf16Dot, InstructionGivesTheCases) {
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "CPU lacks AVX512-BF16: " << cpu_summary();
  const auto lanes = case_lanes();
  std::vector<float> got;
  dpbf16_lanes(lanes, got);
  for (size_t i = 0; i < std::size(kCases); ++i)
    EXPECT_TRUE(same(got[i], kCases[i].want))
        << kCases[i].what << ": vdpbf16ps " << hex(got[i]) << ", want " << hex(kCases[i].want);
}

TEST(Bf16Dot, InstructionFollowsTheScalarOrderOnRandomLanes) {
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "CPU lacks AVX512-BF16: " << cpu_summary();
  compare_random("vdpbf16ps", dpbf16_lanes, 3'200'000);
}

TEST(Bf16Dot, FmaUnderFtzDazGivesTheCasesAndTheScalarOrder) {
  if (!(cpu_features().avx2 && cpu_features().fma)) GTEST_SKIP() << "CPU lacks FMA";
  const auto lanes = case_lanes();
  std::vector<float> got;
  fma_lanes_ftz_daz(lanes, got);
  for (size_t i = 0; i < std::size(kCases); ++i)
    EXPECT_TRUE(same(got[i], kCases[i].want))
        << kCases[i].what << ": FMAs " << hex(got[i]) << ", want " << hex(kCases[i].want);
  compare_random("two FMAs under FTZ/DAZ", fma_lanes_ftz_daz, 1'000'000);
}

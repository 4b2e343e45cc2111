// The exact float weights' order and layout: every output of an F16 weight is one fused
// multiply-add chain along k, every output of a BF16 weight the chain of pairs of vdpbf16ps
// (bf16_dot.h: odd element first, DAZ/FTZ) (vec_dot.cpp), and the panel kernels (gemm_f16.cpp)
// over weights packed into panels (float_panels.h) return that chain's bits for every output on
// every path (scalar, AVX2, AVX-512 with FMAs, AVX-512 with vdpbf16ps), packed at load or on the
// fly, alone or in any batch, at any position of a few hundred tokens.
#include "engine/ops/float_panels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/ops/bf16_dot.h"
#include "engine/ops/cpu_features.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/ops.h"
#include "random_weights.h"

using namespace ragform;
using namespace ragform::ops;
using namespace ragform::ops::testing;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float weight(TensorType t, const uint8_t* data, int64_t n_in, int64_t r, int64_t k) {
  const size_t i = size_t(r * n_in + k);
  uint16_t h;
  std::memcpy(&h, data + 2 * i, 2);
  return t == TensorType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
}

// The specification, written out: activations rounded to the weight's vec_dot type, then for F16
// acc = fma(w[k], a[k], acc) for k ascending from +0, in one scalar chain per output; for BF16
// the pairs (2j, 2j + 1) from +0, each the odd element's step then the even one's, one rounding
// each with DAZ/FTZ (bf16_pair_step), an odd row's last element paired with zeros.
std::vector<float> chain_reference(TensorType t, const std::vector<uint8_t>& data, int64_t n_in,
                                   int64_t n_out, const std::vector<float>& x, int64_t n_tokens) {
  std::vector<float> y(size_t(n_tokens * n_out));
  for (int64_t tok = 0; tok < n_tokens; ++tok)
    for (int64_t r = 0; r < n_out; ++r) {
      const auto a = [&](int64_t k) {
        const float v = x[size_t(tok * n_in + k)];
        return t == TensorType::F16 ? round_fp16(v) : round_bf16(v);
      };
      float acc = 0.0f;
      if (t == TensorType::F16) {
        for (int64_t k = 0; k < n_in; ++k)
          acc = std::fma(weight(t, data.data(), n_in, r, k), a(k), acc);
      } else {
        for (int64_t k = 0; k < n_in; k += 2) {
          const bool odd = k + 1 < n_in;
          acc = bf16_pair_step(acc, weight(t, data.data(), n_in, r, k), a(k),
                               odd ? weight(t, data.data(), n_in, r, k + 1) : 0.0f,
                               odd ? a(k + 1) : 0.0f);
        }
      }
      y[size_t(tok * n_out + r)] = acc;
    }
  return y;
}

const TensorType kFloatTypes[] = {TensorType::F16, TensorType::BF16};

// The ways a float matmul runs here: the scalar tier (vec_dot), AVX2, AVX-512 as matmul runs it,
// and for BF16 on AVX-512 each of its two kernels (FMAs under FTZ/DAZ; vdpbf16ps where the CPU
// has AVX512-BF16), whichever matmul picks.
struct Path {
  const char* name;
  CpuTier tier;
  Bf16Kernel bf16;
};
std::vector<Path> paths(TensorType t) {
  std::vector<Path> out;
  const bool bf16 = t == TensorType::BF16;
  for (Path p : {Path{"scalar", CpuTier::Scalar, Bf16Kernel::automatic},
                 Path{"avx2", CpuTier::Avx2, Bf16Kernel::automatic},
                 Path{"avx512", CpuTier::Avx512, Bf16Kernel::automatic},
                 Path{"avx512-fma", CpuTier::Avx512, Bf16Kernel::fma},
                 Path{"avx512-vdpbf16ps", CpuTier::Avx512, Bf16Kernel::dot}})
    if (clamp_tier(p.tier) == p.tier &&
        (p.bf16 == Bf16Kernel::automatic ||
         (bf16 && (p.bf16 == Bf16Kernel::fma || cpu_features().avx512bf16))))
      out.push_back(p);
  return out;
}
void run_path(const Path& p, const WeightView& w, const float* x, int64_t n_tokens, float* y,
              ThreadPool& pool) {
  if (p.bf16 == Bf16Kernel::automatic)
    matmul_tier(w, x, n_tokens, y, pool, p.tier);
  else
    gemm_f16(w, x, n_tokens, y, pool, p.tier, p.bf16);
}

// Bits, with every NaN the same (the kernels' NaN payloads are not part of the order).
uint32_t key(float f) { return std::isnan(f) ? 0x7fc00000u : bits(f); }

}  // namespace

TEST(FloatPanels, LayoutInterleavesSixteenRowsAlongK) {
  for (TensorType t : kFloatTypes) {
    const int64_t n_in = 5, n_out = 70;  // five panels of rows, the fifth 10 rows short
    const auto data = random_rows(t, n_in, n_out, 3);
    const WeightView w{t, data.data(), n_in, n_out};
    EXPECT_EQ(panel_count(n_out), 2 * kPanelGroup);    // 5 panels padded to whole groups
    const int64_t kp = t == TensorType::BF16 ? 6 : 5;  // BF16: whole pairs
    EXPECT_EQ(panel_k(t, n_in), kp);
    EXPECT_EQ(panels_bytes(w), size_t(panel_count(n_out) * kPanelRows * kp * 2));
    std::vector<uint8_t> panels(panels_bytes(w));
    pack_panels(w, 0, panel_count(n_out), panels.data());
    for (int64_t p = 0; p < panel_count(n_out); ++p)
      for (int64_t k = 0; k < kp; ++k)
        for (int64_t l = 0; l < kPanelRows; ++l) {
          const int64_t r = p * kPanelRows + l;
          // F16: row 64g + 16q + l, element k, at index (g * n_in + k) * 64 + q * 16 + l.
          // BF16: at ((g * K2 + k / 2) * 64 + q * 16 + l) * 2 + k % 2 (K2 pairs, zero-padded).
          const int64_t g = p / kPanelGroup, q = p % kPanelGroup;
          const int64_t flat =
              t == TensorType::F16
                  ? ((g * n_in + k) * kPanelGroup + q) * kPanelRows + l
                  : (((g * kp / 2 + k / 2) * kPanelGroup + q) * kPanelRows + l) * 2 + k % 2;
          const float got = weight(t, panels.data(), 1, flat, 0);
          const float want = r < n_out && k < n_in ? weight(t, data.data(), n_in, r, k) : 0.0f;
          ASSERT_EQ(bits(got), bits(want)) << gguf::type_name(t) << " row " << r << " k " << k;
        }
  }
  const std::vector<uint8_t> q(64);
  const WeightView q8{TensorType::Q8_0, q.data(), 32, 1};
  std::vector<uint8_t> out(1024);
  EXPECT_THROW(pack_panels(q8, 0, 1, out.data()), Error);
  const std::vector<uint8_t> f16(2 * 32 * 16);
  EXPECT_THROW(pack_panels({TensorType::F16, f16.data(), 32, 16}, 0, 1, out.data()), Error);
  EXPECT_FALSE(has_panel_layout(TensorType::F32));  // F32 keeps vec_dot's 16 lanes
  EXPECT_FALSE(matmul_uses_panels(TensorType::F16, CpuTier::Scalar));
  EXPECT_FALSE(matmul_uses_panels(TensorType::Q8_0, CpuTier::Avx512));
}

// vec_dot, the scalar tier's path, is the chain itself.
TEST(FloatPanels, VecDotIsOneFusedChainAlongK) {
  for (TensorType t : kFloatTypes)
    for (int64_t n_in : {1, 3, 17, 896}) {
      const int64_t n_out = 9, n_tokens = 3;
      const auto data = random_rows(t, n_in, n_out, uint32_t(n_in) + uint32_t(t));
      const auto x = random_activations(n_in * n_tokens, uint32_t(n_in) * 7);
      const auto want = chain_reference(t, data, n_in, n_out, x, n_tokens);
      std::vector<uint8_t> act(activation_row_bytes(t, n_in));
      for (int64_t tok = 0; tok < n_tokens; ++tok) {
        convert_activations(t, x.data() + tok * n_in, n_in, act.data());
        for (int64_t r = 0; r < n_out; ++r)
          ASSERT_EQ(bits(vec_dot(t, n_in, data.data() + size_t(r) * gguf::row_bytes(t, n_in),
                                 act.data())),
                    bits(want[size_t(tok * n_out + r)]))
              << gguf::type_name(t) << " n_in " << n_in << " row " << r;
      }
    }
}

// Every tier and both ways of holding the weights (packed at load, or packed by the kernel a group
// at a time) give the chain's bits for every token of a 300-token batch and for each token alone:
// the sum of a late position is the same formula as the first's (no drift with position).
TEST(FloatPanels, EveryTierGivesTheChainAtEveryPosition) {
  ThreadPool pool(2);
  for (TensorType t : kFloatTypes) {
    const int64_t n_in = 200, n_out = 37, n_tokens = 300;
    const auto data = random_rows(t, n_in, n_out, 11 + uint32_t(t));
    const auto x = random_activations(n_in * n_tokens, 29 + uint32_t(t));
    const auto want = chain_reference(t, data, n_in, n_out, x, n_tokens);
    WeightView w{t, data.data(), n_in, n_out};
    std::vector<uint8_t> panels(panels_bytes(w));
    pack_panels(w, 0, panel_count(n_out), panels.data());
    for (const Path& path : paths(t)) {
      const uint8_t* const holdings[] = {nullptr, panels.data()};
      for (const uint8_t* p : holdings) {
        w.panels = p;
        std::vector<float> y(want.size(), NAN);
        run_path(path, w, x.data(), n_tokens, y.data(), pool);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(bits(y[i]), bits(want[i]))
              << gguf::type_name(t) << " " << path.name << (p ? " packed" : " unpacked")
              << " token " << i / size_t(n_out) << " row " << i % size_t(n_out);
        // Decode of 1, 2, 5 and 16 sequences at the batch's last positions: the same bits.
        for (int64_t n : {1, 2, 5, 16}) {
          std::vector<float> part(size_t(n * n_out), NAN);
          const int64_t t0 = n_tokens - n;
          run_path(path, w, x.data() + size_t(t0 * n_in), n, part.data(), pool);
          for (size_t i = 0; i < part.size(); ++i)
            ASSERT_EQ(bits(part[i]), bits(want[size_t(t0 * n_out) + i]))
                << gguf::type_name(t) << " " << path.name << " " << n << " tokens";
        }
      }
    }
  }
}

// A packed token embedding (a tied output) is read back from its panels: the same floats as the
// row layout gives, for rows in every panel of a group and in a partial last group.
TEST(FloatPanels, GetRowsReadsPanelsAsRows) {
  for (TensorType t : kFloatTypes) {
    const int64_t n_in = 33, n_out = 150;
    const auto data = random_rows(t, n_in, n_out, 5 + uint32_t(t));
    WeightView w{t, data.data(), n_in, n_out};
    std::vector<uint8_t> panels(panels_bytes(w));
    pack_panels(w, 0, panel_count(n_out), panels.data());
    const std::vector<int32_t> ids = {0, 15, 16, 63, 64, 100, 128, 149};
    std::vector<float> want(ids.size() * size_t(n_in)), got(want.size(), NAN);
    get_rows(w, ids.data(), int64_t(ids.size()), want.data());
    w.panels = panels.data();
    get_rows(w, ids.data(), int64_t(ids.size()), got.data());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(bits(got[i]), bits(want[i])) << gguf::type_name(t) << " at " << i;
    const int32_t bad = int32_t(n_out);
    EXPECT_THROW(get_rows(w, &bad, 1, got.data()), Error);
  }
}

// Activations over the whole range a half can hold (subnormal halves, ties, values near 65504)
// and weights with subnormal halves / bf16s: the kernels' rounding (vcvtps2ph, bf16's integer
// rounding) and products give the scalar chain's bits (BF16: the subnormal weights read as zero).
TEST(FloatPanels, EveryMagnitudeGivesTheChain) {
  ThreadPool pool(2);
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> expo(-30.0f, 15.9f), mant(1.0f, 2.0f);
  for (TensorType t : kFloatTypes) {
    const int64_t n_in = 96, n_out = 20, n_tokens = 9;
    auto data = random_rows(t, n_in, n_out, 41 + uint32_t(t));
    // A few subnormal half / tiny bf16 weights.
    auto* h = reinterpret_cast<uint16_t*>(data.data());
    for (size_t i = 0; i < size_t(n_in * n_out); i += 7) h[i] = uint16_t(1 + i % 1000);
    std::vector<float> x(size_t(n_in * n_tokens));
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = (i % 2 ? -1.0f : 1.0f) * mant(rng) * std::exp2(std::floor(expo(rng)));
    const auto want = chain_reference(t, data, n_in, n_out, x, n_tokens);
    WeightView w{t, data.data(), n_in, n_out};
    for (const Path& path : paths(t)) {
      std::vector<float> y(want.size(), NAN);
      run_path(path, w, x.data(), n_tokens, y.data(), pool);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(bits(y[i]), bits(want[i]))
            << gguf::type_name(t) << " " << path.name << " at " << i;
    }
  }
}

// BF16 where the order shows: weights and activations over fp32's whole exponent range (bf16
// subnormals, products that underflow or overflow, sums that cancel, tiny sums flushed with their
// sign), rows of odd and even length, every path against the scalar pairs. Then a row built to
// land on the flush boundary: after (2^-63)(2^-63) = 2^-126, the product -2^-150 leaves a sum IEEE
// rounding would keep at 2^-126 and the instruction flushes to +0 (bf16_dot.h).
TEST(FloatPanels, Bf16EdgeValuesGiveThePairChainOnEveryPath) {
  ThreadPool pool(2);
  std::mt19937 rng(23);
  const auto edge_bf16 = [&](int kind) -> uint16_t {
    const uint32_t r = rng();
    const uint32_t sign = (r & 1u) << 15, mant = (r >> 1) & 0x7fu;
    switch (kind % 4) {
      case 0:  // a bf16 subnormal (or zero)
        return uint16_t(sign | mant);
      case 1:  // around 2^-63: products near 2^-126
        return uint16_t(sign | (uint32_t(64 - 4 + int((r >> 8) % 9)) << 7) | mant);
      case 2:  // around 2^64: products near overflow
        return uint16_t(sign | (uint32_t(190 - 3 + int((r >> 8) % 7)) << 7) | mant);
      default:  // ordinary magnitudes
        return uint16_t(sign | (uint32_t(127 - 3 + int((r >> 8) % 7)) << 7) | mant);
    }
  };
  for (int64_t n_in : {1, 2, 3, 7, 32, 33}) {
    const int64_t n_out = 70, n_tokens = 8;
    std::vector<uint8_t> data(size_t(2 * n_in * n_out));
    auto* h = reinterpret_cast<uint16_t*>(data.data());
    // Each row keeps one magnitude class, so its products meet each other's size.
    for (int64_t r = 0; r < n_out; ++r)
      for (int64_t k = 0; k < n_in; ++k) h[size_t(r * n_in + k)] = edge_bf16(int(r));
    std::vector<float> x(size_t(n_in * n_tokens));
    for (int64_t tok = 0; tok < n_tokens; ++tok)
      for (int64_t k = 0; k < n_in; ++k)
        x[size_t(tok * n_in + k)] = bf16_to_fp32(edge_bf16(int(tok + k % 2)));
    const auto want = chain_reference(TensorType::BF16, data, n_in, n_out, x, n_tokens);
    const WeightView w{TensorType::BF16, data.data(), n_in, n_out};
    for (const Path& path : paths(TensorType::BF16)) {
      std::vector<float> y(want.size(), 1.0f);
      run_path(path, w, x.data(), n_tokens, y.data(), pool);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(key(y[i]), key(want[i]))
            << path.name << " n_in " << n_in << " token " << i / size_t(n_out) << " row "
            << i % size_t(n_out) << ": " << y[i] << " want " << want[i];
    }
  }
  // The boundary: w = (0, 2^-63, -2^-75, 0), a = (0, 2^-63, 2^-75, 0): pair 0 gives 2^-126, pair
  // 1's odd step adds +0 and its even step -2^-150 (exact), then flushes: +0, where IEEE gives
  // 2^-126. Its mirror (signs swapped) gives -0: a flushed zero keeps its sign.
  for (float s : {1.0f, -1.0f}) {
    const float wv[4] = {0.0f, s * 0x1p-63f, -s * 0x1p-75f, 0.0f};
    const float av[4] = {0.0f, 0x1p-63f, 0x1p-75f, 0.0f};
    std::vector<uint8_t> data(2 * 4 * 16);
    auto* h = reinterpret_cast<uint16_t*>(data.data());
    for (int r = 0; r < 16; ++r)
      for (int k = 0; k < 4; ++k) h[r * 4 + k] = fp32_to_bf16(wv[k]);
    std::vector<float> x(av, av + 4);
    const auto want = chain_reference(TensorType::BF16, data, 4, 16, x, 1);
    ASSERT_EQ(bits(want[0]), bits(std::copysign(0.0f, s)));
    ASSERT_EQ(bits(std::fma(wv[2], av[2], s * 0x1p-126f)), bits(s * 0x1p-126f));  // IEEE
    const WeightView w{TensorType::BF16, data.data(), 4, 16};
    for (const Path& path : paths(TensorType::BF16)) {
      std::vector<float> y(16, 1.0f);
      run_path(path, w, x.data(), 1, y.data(), pool);
      for (int r = 0; r < 16; ++r) ASSERT_EQ(bits(y[size_t(r)]), bits(want[0])) << path.name;
    }
  }
}

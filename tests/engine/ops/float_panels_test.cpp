// The exact float weights' order and layout: every output of an F16/BF16 weight is one fused
// multiply-add chain along k (vec_dot.cpp), and the panel kernels (gemm_f16.cpp) over weights
// packed into panels (float_panels.h) return that chain's bits for every output, packed at load or
// on the fly, alone or in any batch, at any position of a few hundred tokens.
#include "engine/ops/float_panels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"
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

// The specification, written out: activations rounded to the weight's vec_dot type, then
// acc = fma(w[k], a[k], acc) for k ascending from +0, in one scalar chain per output.
std::vector<float> chain_reference(TensorType t, const std::vector<uint8_t>& data, int64_t n_in,
                                   int64_t n_out, const std::vector<float>& x, int64_t n_tokens) {
  std::vector<float> y(size_t(n_tokens * n_out));
  for (int64_t tok = 0; tok < n_tokens; ++tok)
    for (int64_t r = 0; r < n_out; ++r) {
      float acc = 0.0f;
      for (int64_t k = 0; k < n_in; ++k) {
        float a = x[size_t(tok * n_in + k)];
        if (t == TensorType::F16) a = round_fp16(a);
        if (t == TensorType::BF16) a = round_bf16(a);
        acc = std::fma(weight(t, data.data(), n_in, r, k), a, acc);
      }
      y[size_t(tok * n_out + r)] = acc;
    }
  return y;
}

const TensorType kFloatTypes[] = {TensorType::F16, TensorType::BF16};

}  // namespace

TEST(FloatPanels, LayoutInterleavesSixteenRowsAlongK) {
  for (TensorType t : kFloatTypes) {
    const int64_t n_in = 5, n_out = 70;  // five panels of rows, the fifth 10 rows short
    const auto data = random_rows(t, n_in, n_out, 3);
    const WeightView w{t, data.data(), n_in, n_out};
    EXPECT_EQ(panel_count(n_out), 2 * kPanelGroup);  // 5 panels padded to whole groups
    std::vector<uint8_t> panels(panels_bytes(w));
    pack_panels(w, 0, panel_count(n_out), panels.data());
    for (int64_t p = 0; p < panel_count(n_out); ++p)
      for (int64_t k = 0; k < n_in; ++k)
        for (int64_t l = 0; l < kPanelRows; ++l) {
          const int64_t r = p * kPanelRows + l;
          // Row 64g + 16q + l, element k, at index (g * n_in + k) * 64 + q * 16 + l.
          const int64_t g = p / kPanelGroup, q = p % kPanelGroup;
          const int64_t flat = ((g * n_in + k) * kPanelGroup + q) * kPanelRows + l;
          const float got = weight(t, panels.data(), 1, flat, 0);
          const float want = r < n_out ? weight(t, data.data(), n_in, r, k) : 0.0f;
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
    for (CpuTier tier : {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512}) {
      if (clamp_tier(tier) != tier) continue;  // not on this CPU
      const uint8_t* const holdings[] = {nullptr, panels.data()};
      for (const uint8_t* p : holdings) {
        w.panels = p;
        std::vector<float> y(want.size(), NAN);
        matmul_tier(w, x.data(), n_tokens, y.data(), pool, tier);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(bits(y[i]), bits(want[i]))
              << gguf::type_name(t) << " " << tier_name(tier) << (p ? " packed" : " unpacked")
              << " token " << i / size_t(n_out) << " row " << i % size_t(n_out);
        // Decode of 1, 2, 5 and 16 sequences at the batch's last positions: the same bits.
        for (int64_t n : {1, 2, 5, 16}) {
          std::vector<float> part(size_t(n * n_out), NAN);
          const int64_t t0 = n_tokens - n;
          matmul_tier(w, x.data() + size_t(t0 * n_in), n, part.data(), pool, tier);
          for (size_t i = 0; i < part.size(); ++i)
            ASSERT_EQ(bits(part[i]), bits(want[size_t(t0 * n_out) + i]))
                << gguf::type_name(t) << " " << tier_name(tier) << " " << n << " tokens";
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
// and weights with subnormal halves: the kernels' rounding (vcvtps2ph) and products give the
// scalar chain's bits.
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
    for (CpuTier tier : {CpuTier::Scalar, CpuTier::Avx2, CpuTier::Avx512}) {
      if (clamp_tier(tier) != tier) continue;
      std::vector<float> y(want.size(), NAN);
      matmul_tier(w, x.data(), n_tokens, y.data(), pool, tier);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(bits(y[i]), bits(want[i]))
            << gguf::type_name(t) << " " << tier_name(tier) << " at " << i;
    }
  }
}

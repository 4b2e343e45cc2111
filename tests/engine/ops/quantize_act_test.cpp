// Activation quantisers on hand values. The x values are chosen so x * (127/amax) lands exactly
// on .5 ties: ggml's AVX path (and so llama.cpp's fixtures) rounds ties to even, where the scalar
// reference (roundf) would round them away from zero.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"

using namespace ragform;
using namespace ragform::ops;

namespace {
// amax = 127 -> id = 1 exactly, so q = round_half_even(x).
std::vector<float> tie_block() {
  std::vector<float> x(32, 0.0f);
  const float v[8] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -127.0f, 3.5f};
  for (int i = 0; i < 8; ++i) x[size_t(i)] = v[i];
  return x;
}
const int kTieQ[8] = {127, 0, 2, 2, 0, -2, -127, 4};
}  // namespace

TEST(QuantizeAct, Q8_0TiesToEven) {
  auto x = tie_block();
  BlockQ8_0 b{};
  quantize_row_q8_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x3c00);  // 127 / 127 = 1.0 as f16
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b.qs[i], kTieQ[i]) << i;
  EXPECT_EQ(b.qs[31], 0);
}

TEST(QuantizeAct, Q8_0ScaleIsAmaxOver127InF16) {
  // amax = 1: d = 1/127 rounded to f16 (0x2008 = 0.0078773...), q = round(x * 127).
  std::vector<float> x(32, 0.0f);
  x[0] = -1.0f;
  x[1] = 0.25f;  // 31.75 -> 32
  x[2] = 0.5f;   // 63.5 -> 64 (tie, even)
  BlockQ8_0 b{};
  quantize_row_q8_0(x.data(), &b, 32);
  EXPECT_EQ(b.d, fp32_to_fp16(1.0f / 127.0f));
  EXPECT_EQ(b.d, 0x2008);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 32);
  EXPECT_EQ(b.qs[2], 64);
}

TEST(QuantizeAct, Q8_0AllZero) {
  std::vector<float> x(64, 0.0f);
  BlockQ8_0 b[2]{};
  b[1].qs[3] = 9;
  quantize_row_q8_0(x.data(), b, 64);
  EXPECT_EQ(b[1].d, 0);
  EXPECT_EQ(b[1].qs[3], 0);
}

TEST(QuantizeAct, Q8_1SumUsesUnroundedD) {
  auto x = tie_block();
  BlockQ8_1 b{};
  quantize_row_q8_1(x.data(), &b, 32);
  EXPECT_EQ(b.d, 0x3c00);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b.qs[i], kTieQ[i]) << i;
  EXPECT_EQ(b.s, 0x4600);  // 1.0 * (127+0+2+2+0-2-127+4) = 6
  // amax = 0.125, x1 = 0.125 * 40/127 -> q1 = 40; s = f16(d * 167) with d = 0.125/127 unrounded
  // (the f16-rounded d would give a different s for this block).
  std::vector<float> y(32, 0.0f);
  y[0] = 0.125f;
  y[1] = 40 * 0.125f / 127.f;
  quantize_row_q8_1(y.data(), &b, 32);
  EXPECT_EQ(b.qs[1], 40);
  EXPECT_EQ(b.s, fp32_to_fp16((0.125f / 127.f) * 167.0f));
  EXPECT_NE(b.s, fp32_to_fp16(fp16_to_fp32(b.d) * 167.0f));
}

TEST(QuantizeAct, Q8_KSignedMaxAndIscale) {
  std::vector<float> x(256, 0.0f);
  // max is the first element of largest magnitude, with its sign: -127 here, so
  // iscale = -127 / -127 = 1 and d = 1.
  x[0] = -127.0f;
  x[1] = 127.0f;
  x[2] = 0.5f;
  x[3] = 1.5f;
  x[4] = 2.5f;
  x[5] = -0.5f;
  x[20] = 7.0f;
  BlockQ8_K b{};
  quantize_row_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.d, 1.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 127);
  EXPECT_EQ(b.qs[2], 0);
  EXPECT_EQ(b.qs[3], 2);
  EXPECT_EQ(b.qs[4], 2);
  EXPECT_EQ(b.qs[5], 0);
  EXPECT_EQ(b.bsums[0], -127 + 127 + 0 + 2 + 2 + 0);
  EXPECT_EQ(b.bsums[1], 7);
  EXPECT_EQ(b.bsums[2], 0);

  // A positive max flips the sign: iscale = -1, d = -1, qs = -x.
  x[0] = 127.0f;
  x[1] = -64.0f;
  quantize_row_q8_K(x.data(), &b, 256);
  EXPECT_EQ(b.d, -1.0f);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 64);
  EXPECT_EQ(b.qs[3], -2);
  EXPECT_EQ(b.qs[20], -7);

  // -127/max, not -128/max: max 2 -> iscale -63.5, element -2 maps to +127 (not 128/overflow).
  std::vector<float> z(256, 0.0f);
  z[0] = 2.0f;
  z[1] = -2.0f;
  z[2] = 1.0f;  // -63.5 -> -64 (tie, even)
  quantize_row_q8_K(z.data(), &b, 256);
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[1], 127);
  EXPECT_EQ(b.qs[2], -64);
  EXPECT_EQ(b.d, 1.0f / (-127.0f / 2.0f));

  std::vector<float> zero(256, 0.0f);
  quantize_row_q8_K(zero.data(), &b, 256);
  EXPECT_EQ(b.d, 0.0f);
  EXPECT_EQ(b.bsums[0], 0);
}

TEST(QuantizeAct, FloatActivationsRounded) {
  const float x[2] = {1.0f + 0x1p-11f + 0x1p-20f, 1.0f + 0x1p-8f};
  float out[2];
  convert_activations(TensorType::F16, x, 2, out);
  EXPECT_EQ(out[0], 1.0f + 0x1p-10f);
  EXPECT_EQ(out[1], 1.0f + 0x1p-8f);  // exact in f16
  convert_activations(TensorType::BF16, x, 2, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);  // tie -> even
  convert_activations(TensorType::F32, x, 2, out);
  EXPECT_EQ(out[0], x[0]);
}

TEST(QuantizeAct, ActivationTypes) {
  EXPECT_EQ(activation_type(TensorType::Q4_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q5_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q8_0), TensorType::Q8_0);
  EXPECT_EQ(activation_type(TensorType::Q4_1), TensorType::Q8_1);
  EXPECT_EQ(activation_type(TensorType::Q5_1), TensorType::Q8_1);
  for (auto t :
       {TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K})
    EXPECT_EQ(activation_type(t), TensorType::Q8_K);
  EXPECT_EQ(activation_type(TensorType::BF16), TensorType::BF16);
  EXPECT_THROW(activation_type(TensorType::Q8_K), Error);
  EXPECT_EQ(activation_row_bytes(TensorType::Q4_K, 512), 2u * 292u);
  EXPECT_EQ(activation_row_bytes(TensorType::F16, 10), 40u);
  std::vector<float> x(40, 1.0f);
  std::vector<uint8_t> buf(1000);
  EXPECT_THROW(convert_activations(TensorType::Q4_0, x.data(), 40, buf.data()), Error);
}

// The dispatching quantisers (AVX-512 where the CPU has it) give the scalar references' bytes:
// random rows with exact ties, an all-zero block, NaN and infinities, a block whose largest
// magnitude appears twice with both signs (the reference takes the first).
TEST(QuantizeAct, FastQuantisersGiveTheReferenceBytes) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const int64_t n = 256 * 12;
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = nd(rng);
  for (int64_t i = 256; i < 512; ++i) x[size_t(i)] = 0.0f;                 // a zero Q8_K block
  for (int64_t i = 512; i < 544; ++i) x[size_t(i)] = float(i % 9) - 4.5f;  // ties at amax 127/4.5
  x[700] = std::nanf("");
  x[900] = INFINITY;
  x[1300] = -INFINITY;
  x[1600] = 50.0f, x[1610] = -50.0f;  // the same magnitude twice: first one wins
  x[2100] = -50.0f, x[2110] = 50.0f;
  for (int64_t i = 2304; i < 2560; ++i) x[size_t(i)] = std::nanf("");  // a NaN Q8_K block
  std::vector<BlockQ8_0> a(size_t(n / 32)), b(size_t(n / 32));
  quantize_row_q8_0(x.data(), a.data(), n);
  quantize_row_q8_0_ref(x.data(), b.data(), n);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ8_0)), 0);
  std::vector<BlockQ8_K> c(size_t(n / 256)), d(size_t(n / 256));
  quantize_row_q8_K(x.data(), c.data(), n);
  quantize_row_q8_K_ref(x.data(), d.data(), n);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_EQ(std::memcmp(&c[i], &d[i], sizeof(BlockQ8_K)), 0) << "block " << i;
}

// Scalar dequantisers on hand-built blocks: each expected value below is worked out by hand from
// the block layout in ggml-common.h (scale/min packing, nibble order, high-bit planes, signs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/ops.h"
#include "engine/ops/quant_blocks.h"

using namespace ragform;
using namespace ragform::ops;

namespace {
template <typename Block>
std::vector<float> deq(TensorType t, const Block& b, int n) {
  std::vector<float> out(size_t(n), -999.0f);
  dequantize_row(t, &b, out.data(), n);
  return out;
}
constexpr uint16_t kHalf1 = 0x3c00, kHalf05 = 0x3800, kHalf025 = 0x3400, kHalf2 = 0x4000;
constexpr uint16_t kHalfMinus1 = 0xbc00;
}  // namespace

TEST(Dequant, Q4_0) {
  BlockQ4_0 b{};
  b.d = kHalf05;
  std::memset(b.qs, 0x88, sizeof b.qs);  // 8 - 8 = 0 everywhere
  b.qs[0] = 0x1F;                        // low 15 -> elt 0, high 1 -> elt 16
  auto y = deq(TensorType::Q4_0, b, 32);
  EXPECT_EQ(y[0], 3.5f);    // (15 - 8) * 0.5
  EXPECT_EQ(y[16], -3.5f);  // (1 - 8) * 0.5
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[31], 0.0f);
}

TEST(Dequant, Q4_1) {
  BlockQ4_1 b{};
  b.d = kHalf05;
  b.m = kHalfMinus1;
  b.qs[3] = 0xA2;
  auto y = deq(TensorType::Q4_1, b, 32);
  EXPECT_EQ(y[3], 0.0f);   // 2 * 0.5 - 1
  EXPECT_EQ(y[19], 4.0f);  // 10 * 0.5 - 1
  EXPECT_EQ(y[0], -1.0f);
}

TEST(Dequant, Q5_0) {
  BlockQ5_0 b{};
  b.d = kHalf025;
  const uint32_t qh = (1u << 0) | (1u << 21);  // 5th bit of elements 0 and 21
  std::memcpy(b.qh, &qh, 4);
  b.qs[5] = 0x30;  // element 21 = high nibble of qs[5]
  auto y = deq(TensorType::Q5_0, b, 32);
  EXPECT_EQ(y[0], 0.0f);    // (0 | 16) - 16
  EXPECT_EQ(y[1], -4.0f);   // (0 - 16) * 0.25
  EXPECT_EQ(y[5], -4.0f);   // low nibble 0, no 5th bit
  EXPECT_EQ(y[21], 0.75f);  // (3 | 16) - 16 = 3
  EXPECT_EQ(y[16], -4.0f);
}

TEST(Dequant, Q5_1) {
  BlockQ5_1 b{};
  b.d = kHalf1;
  b.m = kHalf05;
  const uint32_t qh = 1u << 31;
  std::memcpy(b.qh, &qh, 4);
  b.qs[15] = 0x70;
  auto y = deq(TensorType::Q5_1, b, 32);
  EXPECT_EQ(y[31], 23.5f);  // (7 | 16) * 1 + 0.5
  EXPECT_EQ(y[15], 0.5f);
}

TEST(Dequant, Q8_0) {
  BlockQ8_0 b{};
  b.d = kHalf2;
  b.qs[0] = -128;
  b.qs[31] = 127;
  b.qs[7] = -3;
  auto y = deq(TensorType::Q8_0, b, 32);
  EXPECT_EQ(y[0], -256.0f);
  EXPECT_EQ(y[31], 254.0f);
  EXPECT_EQ(y[7], -6.0f);
  EXPECT_EQ(y[1], 0.0f);
}

TEST(Dequant, Q2_K) {
  BlockQ2_K b{};
  b.d = kHalf1;
  b.dmin = kHalf05;
  b.scales[0] = 0x23;  // sub-block 0: scale 3, min 2
  b.scales[2] = 0x01;  // sub-block 2: scale 1, min 0
  b.scales[6] = 0xF5;  // sub-block 6: scale 5, min 15
  b.scales[8] = 0x12;  // sub-block 8: scale 2, min 1
  b.qs[0] = 0xE4;      // 2-bit fields 0,1,2,3 -> elements 0, 32, 64, 96
  b.qs[32] = 0x03;     // element 128
  auto y = deq(TensorType::Q2_K, b, 256);
  EXPECT_EQ(y[0], -1.0f);  // 3*0 - 0.5*2
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[32], 1.0f);    // 1*1 - 0
  EXPECT_EQ(y[64], 0.0f);    // sub-block 4: scale 0, min 0
  EXPECT_EQ(y[96], 7.5f);    // 5*3 - 0.5*15
  EXPECT_EQ(y[128], 5.5f);   // 2*3 - 0.5*1
  EXPECT_EQ(y[16], 0.0f);    // sub-block 1 all zero
  EXPECT_EQ(y[100], -7.5f);  // 5*0 - 7.5
}

TEST(Dequant, Q3_K) {
  BlockQ3_K b{};
  b.d = kHalf1;
  // Raw 6-bit scales are 32 (i.e. 0) except sub-block 0 = 33 (+1) and sub-block 9 = 63 (+31).
  // Low nibbles: sub-block k<8 in byte k, k>=8 in the high nibble of byte k-8. High 2 bits:
  // byte 8 + k%4 at shift 2*(k/4); raw 32 has high bits 2 -> 0xAA in bytes 8..11.
  const uint8_t scales[12] = {0x01, 0xF0, 0, 0, 0, 0, 0, 0, 0xAA, 0xBA, 0xAA, 0xAA};
  std::memcpy(b.scales, scales, 12);
  b.qs[0] = 0x03;      // element 0: q = 3
  b.hmask[0] = 0x01;   // ... with its high bit set (no -4)
  b.qs[48] = 0x02;     // element 144 (sub-block 9, group 1): q = 2
  b.hmask[16] = 0x10;  // its high bit is bit 4 of hmask[16]
  auto y = deq(TensorType::Q3_K, b, 256);
  EXPECT_EQ(y[0], 3.0f);       // 1 * 3
  EXPECT_EQ(y[1], -4.0f);      // 1 * (0 - 4)
  EXPECT_EQ(y[144], 62.0f);    // 31 * 2
  EXPECT_EQ(y[145], -124.0f);  // 31 * (0 - 4)
  EXPECT_EQ(y[16], 0.0f);      // scale 0
}

TEST(Dequant, Q4_K) {
  BlockQ4_K b{};
  b.d = kHalf05;
  b.dmin = kHalf025;
  // Sub-block 0: scale 10, min 4 (j < 4: scales[j], scales[j+4]).
  // Sub-block 5: scale 37 = 0b10'0101 -> low 4 bits in scales[9] low nibble, top 2 bits in
  // scales[1] bits 6-7; min 19 = 0b01'0011 -> scales[9] high nibble, scales[5] bits 6-7.
  b.scales[0] = 10;
  b.scales[4] = 4;
  b.scales[1] = 0x80;
  b.scales[5] = 0x40;
  b.scales[9] = 0x35;
  b.qs[0] = 0x07;   // element 0 (low nibble)
  b.qs[64] = 0xF0;  // element 160 (high nibble of group 2 = sub-block 5)
  auto y = deq(TensorType::Q4_K, b, 256);
  EXPECT_EQ(y[0], 34.0f);      // 0.5*10*7 - 0.25*4
  EXPECT_EQ(y[1], -1.0f);      // 0 - 0.25*4
  EXPECT_EQ(y[160], 272.75f);  // 0.5*37*15 - 0.25*19
  EXPECT_EQ(y[161], -4.75f);
  EXPECT_EQ(y[32], 0.0f);  // sub-block 1: scale 0 (bits 6-7 of scales[1] are sub-block 5's)
  EXPECT_EQ(y[128], 0.0f);
}

TEST(Dequant, Q5_K) {
  BlockQ5_K b{};
  b.d = kHalf1;
  b.dmin = kHalf1;
  b.scales[0] = 1;  // sub-block 0: scale 1
  b.scales[1] = 2;  // sub-block 1: scale 2
  b.scales[3] = 1;  // sub-block 3: scale 1
  b.scales[7] = 5;  // ... min 5
  b.qs[0] = 0x0F;
  b.qh[0] = 0x03;   // 5th bit of element 0 (bit 0) and element 32 (bit 1)
  b.qs[33] = 0x30;  // element 97 = high nibble of qs[32+1] (group 1)
  b.qh[1] = 0x08;   // its 5th bit: bit 2*1+1 of qh[1]
  auto y = deq(TensorType::Q5_K, b, 256);
  EXPECT_EQ(y[0], 31.0f);   // 1 * (15 + 16)
  EXPECT_EQ(y[32], 32.0f);  // 2 * (0 + 16)
  EXPECT_EQ(y[97], 14.0f);  // 1 * (3 + 16) - 5
  EXPECT_EQ(y[96], -5.0f);
}

TEST(Dequant, Q6_K) {
  BlockQ6_K b{};
  b.d = kHalf05;
  b.scales[0] = 2;
  b.scales[2] = -3;
  b.scales[15] = 1;
  b.ql[0] = 0x05;
  b.qh[0] = 0x02;    // element 0: 5 | (2 << 4) = 37 -> 5
  b.ql[127] = 0xF0;  // element 255: high nibble of ql[64+63] ...
  b.qh[63] = 0xC0;   // ... and bits 6-7 of qh[32+31]: 15 | 48 = 63 -> 31
  auto y = deq(TensorType::Q6_K, b, 256);
  EXPECT_EQ(y[0], 5.0f);      // 0.5 * 2 * 5
  EXPECT_EQ(y[1], -32.0f);    // 0.5 * 2 * (0 - 32)
  EXPECT_EQ(y[32], 48.0f);    // 0.5 * -3 * -32
  EXPECT_EQ(y[255], 15.5f);   // 0.5 * 1 * 31
  EXPECT_EQ(y[254], -16.0f);  // 0.5 * 1 * -32
}

TEST(Dequant, FloatTypes) {
  const float f[3] = {1.5f, -0.0f, 3.0e-8f};
  std::vector<float> y(3);
  dequantize_row(TensorType::F32, f, y.data(), 3);
  EXPECT_EQ(y[0], 1.5f);
  const uint16_t h[3] = {0x3e00, 0xc400, 0x0001};
  dequantize_row(TensorType::F16, h, y.data(), 3);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -4.0f);
  EXPECT_EQ(y[2], 0x1p-24f);
  const uint16_t bf[3] = {0x3fc0, 0xc080, 0x7f80};
  dequantize_row(TensorType::BF16, bf, y.data(), 3);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_EQ(y[1], -4.0f);
  EXPECT_TRUE(std::isinf(y[2]));
}

TEST(Dequant, RejectsPartialBlocks) {
  BlockQ4_K b{};
  std::vector<float> y(512);
  EXPECT_THROW(dequantize_row(TensorType::Q4_K, &b, y.data(), 100), Error);
  EXPECT_THROW(dequantize_row(TensorType::Q8_0, &b, y.data(), 33), Error);
}

TEST(Dequant, GetRowsAndTensor) {
  // Two Q8_0 rows of 32: row r holds qs[j] = r * 10 + j, d = 0.5.
  BlockQ8_0 rows[2]{};
  for (int r = 0; r < 2; ++r) {
    rows[r].d = kHalf05;
    for (int j = 0; j < 32; ++j) rows[r].qs[j] = int8_t(r * 10 + j);
  }
  WeightView w{TensorType::Q8_0, reinterpret_cast<const uint8_t*>(rows), 32, 2};
  const int32_t ids[3] = {1, 0, 1};
  std::vector<float> out(96);
  get_rows(w, ids, 3, out.data());
  EXPECT_EQ(out[0], 5.0f);         // row 1, j 0: 10 * 0.5
  EXPECT_EQ(out[32 + 31], 15.5f);  // row 0, j 31
  EXPECT_EQ(out[64 + 2], 6.0f);
  const int32_t bad[1] = {2};
  EXPECT_THROW(get_rows(w, bad, 1, out.data()), Error);
  auto all = dequantize_tensor(w);
  ASSERT_EQ(all.size(), 64u);
  EXPECT_EQ(all[33], 5.5f);
}

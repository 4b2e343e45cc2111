// Block layouts of the ggml quantised types, byte-for-byte as in ggml-common.h (QK_K = 256).
// Every struct is standard-layout with no padding, so a tensor's bytes can be viewed as an array
// of blocks; `static_assert`s pin each size to the table in engine/gguf/types.cpp.
//
// Element order inside a block (what the dequantisers in dequant.cpp follow):
//   Q4_0/Q4_1/Q5_0/Q5_1: element j (0..15) is the low nibble of qs[j], element j+16 the high one;
//                        Q5 adds bit j (resp. j+16) of the little-endian u32 qh as bit 4.
//   Q8_0/Q8_1/Q8_K:      qs[j] is element j.
//   K-quants:            see the per-type comments below and dequant.cpp.
#pragma once
#include <cstdint>

namespace ragform::ops {

constexpr int QK4_0 = 32, QK4_1 = 32, QK5_0 = 32, QK5_1 = 32, QK8_0 = 32, QK8_1 = 32;
constexpr int QK_K = 256;
constexpr int K_SCALE_SIZE = 12;

struct BlockQ4_0 {
  uint16_t d;             // f16 scale
  uint8_t qs[QK4_0 / 2];  // nibbles, value = (q - 8) * d
};
struct BlockQ4_1 {
  uint16_t d, m;  // f16 scale and minimum, value = q * d + m
  uint8_t qs[QK4_1 / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];          // 5th bits (little-endian u32)
  uint8_t qs[QK5_0 / 2];  // value = (q - 16) * d
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[QK5_1 / 2];  // value = q * d + m
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[QK8_0];
};
// Activation-only: s = d * sum(qs), stored so Q4_1/Q5_1 dots can add the minimum's term.
struct BlockQ8_1 {
  uint16_t d, s;
  int8_t qs[QK8_1];
};

// Q2_K: 16 sub-blocks of 16; scales[i] = (4-bit min << 4) | 4-bit scale; value =
// d*scale*q - dmin*min with 2-bit q. qs byte l of each 32-byte group holds 4 elements at shifts
// 0,2,4,6 (see dequant.cpp).
struct BlockQ2_K {
  uint8_t scales[QK_K / 16];
  uint8_t qs[QK_K / 4];
  uint16_t d, dmin;
};
// Q3_K: 2 low bits in qs, the 3rd bit in hmask (set = +0, clear = -4); 16 6-bit scales packed in
// 12 bytes, stored with an offset of 32; value = d * (scale - 32) * q.
struct BlockQ3_K {
  uint8_t hmask[QK_K / 8];
  uint8_t qs[QK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
// Q4_K: 8 sub-blocks of 32 with 6-bit scale and min packed in 12 bytes; value = d*sc*q - dmin*m.
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qs[QK_K / 2];
};
// Q5_K: as Q4_K plus a 5th bit per element in qh.
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[K_SCALE_SIZE];
  uint8_t qh[QK_K / 8];
  uint8_t qs[QK_K / 2];
};
// Q6_K: 4 low bits in ql, 2 high bits in qh, 16 signed 8-bit scales; value = d*sc*(q - 32).
struct BlockQ6_K {
  uint8_t ql[QK_K / 2];
  uint8_t qh[QK_K / 4];
  int8_t scales[QK_K / 16];
  uint16_t d;
};
// Activation-only: float scale, bsums[i] = sum of qs[16i .. 16i+15].
struct BlockQ8_K {
  float d;
  int8_t qs[QK_K];
  int16_t bsums[QK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K block (ggml get_scale_min_k4).
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t& sc, uint8_t& m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// The 16 Q3_K scales, unpacked from 12 bytes and offset back to -32..31.
inline void unpack_q3_k_scales(const uint8_t* packed, int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    int lo = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
    int hi = (packed[8 + (j % 4)] >> (2 * (j / 4))) & 3;
    out[j] = int8_t((lo | (hi << 4)) - 32);
  }
}

}  // namespace ragform::ops

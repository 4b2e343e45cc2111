// BF16 dot products in the order of AVX512-BF16's `vdpbf16ps`, written out in scalar C++: the
// reference every BF16 kernel returns the bits of (vec_dot's dot_bf16, the panel kernels of
// gemm_f16.cpp on every tier; docs/performance.md, "BF16 in the dot instruction's order").
//
// Why this order: `vdpbf16ps` retires twice the fp32 FMAs' flops on AMD's Zen 5 (half of them on
// Intel's Xeon), and it does not sum the way a chain of FMAs does, so an exact BF16 kernel runs at
// its rate only if the reference sums its way. Each 32-bit lane holds a pair (2j, 2j+1) of bf16
// values and computes
//     acc = F(w[2j] * a[2j] + F(w[2j+1] * a[2j+1] + acc))
// the odd element first, each step one rounding of the exact product plus the accumulator, where
//   - inputs that are bf16 subnormals (and a subnormal accumulator) are read as zeros of their
//     sign (DAZ), and
//   - F rounds to fp32, to nearest even, with an unbounded exponent, then flushes a result below
//     2^-126 in magnitude to a zero of its sign (FTZ, "tiny after rounding": the rule of the
//     MXCSR.FTZ bit, which the instruction ignores and applies anyway).
// Measured bit for bit on an Intel Xeon with AVX512-BF16 (26 targeted cases, the flush band
// included, and 64 M random lanes) and on an AMD EPYC Zen 5 (3.2 M random lanes, issue 45);
// tests/engine/ops/bf16_dot_test.cpp checks it wherever it runs. Products of two bf16 values
// are exact in fp32's precision (16 significand bits) but not in its range, which the fused step
// covers: an underflowing product still moves the sum, an overflowing one can be cancelled.
// A row's dot is that step over the pairs j = 0, 1, ... from +0; a row of odd length is read as
// padded with a +0 weight and a +0 activation (what the packed panels hold).
//
// The portable form below costs a few operations per element; the scalar tier (vec_dot) is the
// only place that runs it in a loop. The kernels that do not run the instruction (AVX2, AVX-512
// without it, Intel's cores) get the same bits from FMAs with MXCSR's FTZ and DAZ bits set
// (gemm_f16.cpp).
#pragma once
#include <cmath>

namespace ragform::ops {

// x as the instruction reads an input: a subnormal is a zero of its sign (DAZ).
inline float bf16_daz(float x) { return std::fabs(x) < 0x1p-126f ? std::copysign(0.0f, x) : x; }

// a * b + c (a, b, c normal or zero) rounded once as the instruction rounds: RNE with an unbounded
// exponent, then |result| < 2^-126 flushed to a zero of its sign.
inline float bf16_fma_ftz(float a, float b, float c) {
  const float r = std::fma(a, b, c);  // IEEE: gradual underflow
  const float m = std::fabs(r);
  // Below 2^-126 after gradual rounding, the exact sum is below 2^-126 - 2^-150 and rounds to a
  // tiny value with an unbounded exponent as well: flushed (zeros keep their sign).
  if (m < 0x1p-126f) return std::copysign(0.0f, r);
  // Exactly 2^-126: gradual rounding (a grid of 2^-149) rounds up from 2^-126 - 2^-150, the
  // unbounded exponent (a grid of 2^-150 just below 2^-126) only from 2^-126 - 2^-151; between
  // the two the instruction flushes. Decided again at 2^64 times the scale, where the sum is
  // normal: a result this small means |c| < 2^-100 and |a b| < 2^-99 (a larger operand would
  // leave the sum on a grid of 2^-123 or coarser), so |a| < 2^27 and both scalings are exact.
  if (m == 0x1p-126f) {
    const float s = std::fma(a * 0x1p64f, b, c * 0x1p64f);
    if (std::fabs(s) < 0x1p-62f) return std::copysign(0.0f, s);
  }
  return r;
}

// One pair of a BF16 dot: the odd element's product first. w0, a0 are element 2j of the weight
// row and the (bf16-rounded) activations, w1, a1 element 2j + 1.
inline float bf16_pair_step(float acc, float w0, float a0, float w1, float a1) {
  acc = bf16_fma_ftz(bf16_daz(w1), bf16_daz(a1), bf16_daz(acc));
  return bf16_fma_ftz(bf16_daz(w0), bf16_daz(a0), acc);
}

}  // namespace ragform::ops

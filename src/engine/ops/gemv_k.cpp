// Decode GEMV (one token) for Q4_K and Q6_K weights with AVX512-VNNI (gemm.h).
//
// Per 256-block the exact integers of ggml's vec_dot_q4_K_q8_K / q6_K_q8_K are formed with
// vpdpbusd on 64 quants at a time (unsigned weight quants, signed Q8_K activations):
//   Q4_K: isum = sum_j sc_j (q . a)_j over 8 sub-blocks of 32, summs = sum_j m_j (bs_2j + bs_2j+1);
//   Q6_K: isum = sum_k sc_k (u . a)_k - 32 sum_k sc_k bs_k over 16 sub-blocks of 16 (u = q + 32).
// The sub-block scales multiply whole int32 lanes (each lane lies in one sub-block). The per-block
// integers are then combined in float exactly as the reference does, in block order, in a
// function compiled for baseline x86-64 (no FMA contraction), so results are bit-identical.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
#include <immintrin.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops/fp16.h"
#include "engine/ops/gemm.h"
#include "engine/ops/quant_blocks.h"

#define RAGFORM_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

namespace ragform::ops {

namespace {

// Integer parts of one row's blocks.
struct BlockInts {
  int32_t isum, summs;
};

RAGFORM_VNNI void q4_k_ints(const BlockQ4_K* x, const BlockQ8_K* a, int64_t nb, BlockInts* out) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t i = 0; i < nb; ++i) {
    int32_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      uint8_t s, mm;
      get_scale_min_k4(j, x[i].scales, s, mm);
      sc[j] = s, m[j] = mm;
    }
    __m512i acc = _mm512_setzero_si512();
    for (int g = 0; g < 4; ++g) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs + 32 * g));
      const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, low4)),
                                           _mm256_and_si256(_mm256_srli_epi16(q, 4), low4), 1);
      const __m512i av = _mm512_loadu_si512(a[i].qs + 64 * g);
      const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, av);
      const __m512i s =
          _mm512_inserti64x4(_mm512_set1_epi32(sc[2 * g]), _mm256_set1_epi32(sc[2 * g + 1]), 1);
      acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(d, s));
    }
    int32_t summs = 0;
    for (int j = 0; j < 8; ++j) summs += m[j] * (a[i].bsums[2 * j] + a[i].bsums[2 * j + 1]);
    out[i] = {_mm512_reduce_add_epi32(acc), summs};
  }
}

RAGFORM_VNNI void q6_k_ints(const BlockQ6_K* x, const BlockQ8_K* a, int64_t nb, BlockInts* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m256i three = _mm256_set1_epi8(3);
  // Byte k/4 of 4 scales repeated over the 4 lanes of its sub-block.
  const __m128i rep4 = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  for (int64_t i = 0; i < nb; ++i) {
    __m512i acc = _mm512_setzero_si512();
    for (int g = 0; g < 2; ++g) {
      const __m512i l = _mm512_loadu_si512(x[i].ql + 64 * g);
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qh + 32 * g));
      const __m512i ha = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(qh, three)),
                                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), three), 1);
      const __m512i hb = _mm512_inserti64x4(
          _mm512_castsi256_si512(_mm256_and_si256(_mm256_srli_epi16(qh, 4), three)),
          _mm256_and_si256(_mm256_srli_epi16(qh, 6), three), 1);
      // Values < 4 shifted by 4 stay inside their byte.
      const __m512i ua = _mm512_or_si512(_mm512_and_si512(l, low4), _mm512_slli_epi16(ha, 4));
      const __m512i ub = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), low4),
                                         _mm512_slli_epi16(hb, 4));
      const __m512i da =
          _mm512_dpbusd_epi32(_mm512_setzero_si512(), ua, _mm512_loadu_si512(a[i].qs + 128 * g));
      const __m512i db = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ub,
                                             _mm512_loadu_si512(a[i].qs + 128 * g + 64));
      int32_t s4a, s4b;
      std::memcpy(&s4a, x[i].scales + 8 * g, 4);
      std::memcpy(&s4b, x[i].scales + 8 * g + 4, 4);
      const __m512i sa = _mm512_cvtepi8_epi32(_mm_shuffle_epi8(_mm_cvtsi32_si128(s4a), rep4));
      const __m512i sb = _mm512_cvtepi8_epi32(_mm_shuffle_epi8(_mm_cvtsi32_si128(s4b), rep4));
      acc = _mm512_add_epi32(
          acc, _mm512_add_epi32(_mm512_mullo_epi32(da, sa), _mm512_mullo_epi32(db, sb)));
    }
    int32_t corr = 0;
    for (int k = 0; k < 16; ++k) corr += x[i].scales[k] * a[i].bsums[k];
    out[i] = {_mm512_reduce_add_epi32(acc) - 32 * corr, 0};
  }
}

// The reference's float combination (vec_dot.cpp dot_q4_k / dot_q6_k), baseline code.
float combine_q4_k(const BlockQ4_K* x, const BlockQ8_K* a, const BlockInts* v, int64_t nb) {
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i)
    sumf += fp16_to_fp32(x[i].d) * a[i].d * float(v[i].isum) -
            fp16_to_fp32(x[i].dmin) * a[i].d * float(v[i].summs);
  return sumf;
}

float combine_q6_k(const BlockQ6_K* x, const BlockQ8_K* a, const BlockInts* v, int64_t nb) {
  float sumf = 0.0f;
  for (int64_t i = 0; i < nb; ++i) sumf += fp16_to_fp32(x[i].d) * a[i].d * float(v[i].isum);
  return sumf;
}

void gemv_rows(const WeightView& w, const BlockQ8_K* act, int64_t rb, int64_t re, float* y) {
  const int64_t nb = w.n_in / QK_K;
  thread_local std::vector<BlockInts> ints;
  if (ints.size() < size_t(nb)) ints.resize(size_t(nb));
  for (int64_t r = rb; r < re; ++r) {
    const uint8_t* row = w.data + size_t(r) * w.row_bytes();
    if (w.type == TensorType::Q4_K) {
      const auto* x = reinterpret_cast<const BlockQ4_K*>(row);
      q4_k_ints(x, act, nb, ints.data());
      y[r] = combine_q4_k(x, act, ints.data(), nb);
    } else {
      const auto* x = reinterpret_cast<const BlockQ6_K*>(row);
      q6_k_ints(x, act, nb, ints.data());
      y[r] = combine_q6_k(x, act, ints.data(), nb);
    }
  }
}

}  // namespace

bool gemv_k_supported(TensorType t, CpuTier tier) {
  if (t != TensorType::Q4_K && t != TensorType::Q6_K) return false;
  return tier == CpuTier::Avx512 && cpu_features().avx512vnni;
}

void gemv_k(const WeightView& w, const float* x, float* y, ThreadPool& pool) {
  if (!gemv_k_supported(w.type, best_cpu_tier()))
    throw Error("gemv_k", std::string("type ") + gguf::type_name(w.type) +
                              " is not Q4_K/Q6_K or this CPU lacks AVX512-VNNI");
  check_row_length(w.type, w.n_in, "gemv_k");
  if (w.n_out <= 0) return;
  thread_local std::vector<BlockQ8_K> act;
  if (act.size() < size_t(w.n_in / QK_K)) act.resize(size_t(w.n_in / QK_K));
  quantize_row_q8_K(x, act.data(), w.n_in);
  const BlockQ8_K* a = act.data();
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) { gemv_rows(w, a, int64_t(rb), int64_t(re), y); }, 16);
}

}  // namespace ragform::ops

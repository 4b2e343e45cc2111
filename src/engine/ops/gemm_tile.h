// Internal to ops/: the output side of the F16 GEMMs' micro-tiles (gemm_f16.cpp,
// gemm_f16_int16.cpp). A micro-tile holds R weight rows x TT panels of 16 tokens in fp32
// accumulators, lane l of acc[r][t] being token 16 t + l of row r.
#pragma once
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 _mm512_undefined_* in headers
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#define RAGFORM_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

namespace ragform::ops::tile {

constexpr int kPanel = 16;  // tokens per activation panel (one zmm of fp32 or of int16 pairs)

// Where a micro-tile's sums go. Partial sums over k chunks live in C ([row][token], ldc floats
// per row); the first chunk starts from zero instead of loading C, and the last chunk scatters
// its sums straight into y ([token][row], n_out floats per token), so C is never transposed in
// a separate pass. `valid` is how many of the tile's tokens exist (the last panel is padded).
struct TileOut {
  float* c;
  size_t ldc;
  bool first, last;
  float* y;  // y of the tile's first token and first row
  int64_t n_out;
  int valid;
  const float* row_scale = nullptr;  // if set, row r's sums are multiplied by it on the way to y
};

template <int R, int TT>
RAGFORM_AVX512 inline void load_tile(__m512 (&acc)[R][TT], const TileOut& o) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int t = 0; t < TT; ++t)
      acc[r][t] =
          o.first ? _mm512_setzero_ps() : _mm512_loadu_ps(o.c + size_t(r) * o.ldc + t * kPanel);
}

template <int R, int TT>
RAGFORM_AVX512 inline void store_tile(__m512 (&acc)[R][TT], const TileOut& o) {
  if (!o.last) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int t = 0; t < TT; ++t)
        _mm512_storeu_ps(o.c + size_t(r) * o.ldc + t * kPanel, acc[r][t]);
    return;
  }
  // Lane l of acc[r][t] is token 16 t + l of row r: one masked scatter per accumulator, a few
  // dozen per tile against thousands of FMAs.
  if (o.row_scale)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
      for (int t = 0; t < TT; ++t)
        acc[r][t] = _mm512_mul_ps(acc[r][t], _mm512_set1_ps(o.row_scale[r]));
  const __m512i lane_offsets =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int32_t(o.n_out)));
#pragma GCC unroll 3
  for (int t = 0; t < TT; ++t) {
    const int n = std::min(kPanel, o.valid - t * kPanel);
    if (n <= 0) break;
    const __mmask16 m = n == kPanel ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    float* yt = o.y + size_t(t) * kPanel * size_t(o.n_out);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm512_mask_i32scatter_ps(yt + r, m, lane_offsets, acc[r][t], 4);
  }
}

}  // namespace ragform::ops::tile

// Internal to ops/: the driver the int8 GEMMs share (gemm_q8.cpp for Q8_0/Q5_0/Q4_0 against Q8_0
// activations, gemm_k.cpp for Q4_K/Q5_K/Q6_K against Q8_K): each token's activations are
// quantised to `Block` rows by the reference's conversion and packed, lane by lane, into panels
// of `panel` tokens (one pool task per range of panels; padding lanes are zeros), then the weight
// rows are split over the pool, `rows_per_task` at a time, each range computed by `rows`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "engine/ops/ops.h"
#include "engine/ops/scratch.h"

namespace ragform::ops {

// quantize(const float* x_row, Block* out, int64_t n_in); pack(const Block* q_or_null, int64_t nb,
// uint8_t* panel, int lane); rows(const uint8_t* panels, int64_t n_panels, size_t pstride,
// int64_t row_begin, int64_t row_end). nb blocks per row, block_bytes per packed block.
template <class Block, class Quantize, class Pack, class Rows>
void run_panel_gemm(const WeightView& w, const float* x, int64_t n_tokens, int64_t nb, int panel,
                    size_t block_bytes, int rows_per_task, ThreadPool& pool, Quantize quantize,
                    Pack pack, Rows rows) {
  const int64_t n_panels = (n_tokens + panel - 1) / panel;
  const size_t pstride = size_t(nb) * block_bytes;
  thread_local std::vector<uint8_t> panel_buf;
  uint8_t* panels = aligned_scratch(panel_buf, pstride * size_t(n_panels));
  pool.parallel_for(size_t(n_panels), [&](size_t pb, size_t pe, int) {
    thread_local std::vector<Block> q;
    if (q.size() < size_t(nb)) q.resize(size_t(nb));
    for (size_t p = pb; p < pe; ++p)
      for (int lane = 0; lane < panel; ++lane) {
        const int64_t t = int64_t(p) * panel + lane;
        const bool real = t < n_tokens;
        if (real) quantize(x + size_t(t) * size_t(w.n_in), q.data(), w.n_in);
        pack(real ? q.data() : nullptr, nb, panels + p * pstride, lane);
      }
  });
  pool.parallel_for(
      size_t(w.n_out),
      [&](size_t rb, size_t re, int) { rows(panels, n_panels, pstride, int64_t(rb), int64_t(re)); },
      size_t(rows_per_task));
}

}  // namespace ragform::ops

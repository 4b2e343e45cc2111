// F16/BF16 weights in row panels, the layout of the exact float kernels (gemm_f16.cpp).
//
// Why: every output of a float weight is one fused multiply-add chain along k (vec_dot.cpp), so
// a kernel can keep 16 rows' chains in the 16 lanes of a vector and step k for all of them with
// one FMA per token (an outer product: weights in lanes, the token's activation broadcast). That
// needs the k-th weight of 16 rows side by side: a panel holds rows [16p, 16p + 16) interleaved
// along k, element k of row 16p + l at index k * 16 + l, in the weight's own type (so a packed
// model is as large as its file). F32 weights keep vec_dot's 16-lane order and their rows
// (gemm_f32.cpp). Rows past n_out are zeros, and the panel count is
// padded to a multiple of kPanelGroup so a thread's share is always whole groups.
//
// Models pack their float weights once at load (engine/model/packed_weights.h) and set
// WeightView::panels; a view without panels is packed a group at a time inside the kernel.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/ops/ops.h"

namespace ragform::ops {

constexpr int64_t kPanelRows = 16;
// Panels a kernel takes at a time (one thread's work item): the panel count is a multiple of it.
constexpr int64_t kPanelGroup = 4;

// True for the types that have a panel layout (F16, BF16).
bool has_panel_layout(TensorType t);
// Whether matmul multiplies weights of type t at `tier` (clamped to the CPU) with the panel
// kernels: F16 and BF16 on AVX2 and AVX-512 (the scalar tier is vec_dot on the row layout).
bool matmul_uses_panels(TensorType t, CpuTier tier);
// Panels of a weight with n_out rows: ceil(n_out / 16) rounded up to a multiple of kPanelGroup.
int64_t panel_count(int64_t n_out);
// Bytes of one panel of w (16 rows of n_in elements) and of all of w's panels.
size_t panel_bytes(const WeightView& w);
size_t panels_bytes(const WeightView& w);
// Writes panels [p0, p1) of w, read from its row layout (w.data), to dst (panel p at
// dst + (p - p0) * panel_bytes(w)). Throws Error for a type without a panel layout.
void pack_panels(const WeightView& w, int64_t p0, int64_t p1, uint8_t* dst);

}  // namespace ragform::ops

// F16/BF16 weights in row panels, the layout of the exact float kernels (gemm_f16.cpp).
//
// Why: every output of an F16 weight is one fused multiply-add chain along k (vec_dot.cpp), so a
// kernel can keep 16 rows' chains in the 16 lanes of a vector and step k for all of them with one
// FMA per token (an outer product: weights in lanes, the token's activation broadcast). That needs
// the k-th weight of 16 rows side by side. A panel is 16 rows; a group is kPanelGroup panels (64
// rows) interleaved along k, so one k of the whole group is one 128-byte stretch and a kernel
// reading 4 panels reads one sequential stream: element k of row 64g + 16q + l sits at index
// (g * n_in + k) * 64 + q * 16 + l, in the weight's own type (a packed model is as large as its
// file). Rows past n_out are zeros, and the panel count is a multiple of kPanelGroup.
// BF16 outputs are chains of pairs (2j, 2j + 1) (bf16_dot.h, the order of vdpbf16ps, whose 32-bit
// lanes each hold one row's pair), so BF16 panels interleave pairs along k instead: element k of
// row 64g + 16q + l at index ((g * K2 + k / 2) * 64 + q * 16 + l) * 2 + k % 2, for K2 pairs
// (n_in / 2 rounded up): one pair of the group is one 256-byte stretch; an odd row ends in a zero.
// F32 weights keep vec_dot's 16-lane order and their rows (gemm_f32.cpp).
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
// Elements along k of one panel row: n_in, rounded up to whole pairs for BF16.
int64_t panel_k(TensorType t, int64_t n_in);
// Bytes of one panel of w (16 rows of panel_k elements; a group is kPanelGroup of them) and of
// all of w's panels.
size_t panel_bytes(const WeightView& w);
size_t panels_bytes(const WeightView& w);
// Writes panels [p0, p1) of w (multiples of kPanelGroup: whole groups), read from its row layout
// (w.data), to dst (group g at dst + (g * kPanelGroup - p0) * panel_bytes(w)). Throws Error for
// a type without a panel layout or a range that is not whole groups.
void pack_panels(const WeightView& w, int64_t p0, int64_t p1, uint8_t* dst);

// Row r of w read back from its panels (w.panels must be set) as floats, n_in of them: what
// dequantize_row gives from the row layout (get_rows of a packed token embedding).
void unpack_panel_row(const WeightView& w, int64_t r, float* out);

}  // namespace ragform::ops

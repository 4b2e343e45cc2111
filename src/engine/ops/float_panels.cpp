#include "engine/ops/float_panels.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "engine/ops/fp16.h"

namespace ragform::ops {

namespace {

constexpr int64_t kGroupRows = kPanelRows * kPanelGroup;

// Index of element k of row j (= q * 16 + l) inside its group (float_panels.h): F16 one k of the
// group after another, BF16 one pair of k after another.
inline size_t in_group(bool pairs, int64_t k, int64_t j) {
  return pairs ? size_t(((k >> 1) * kGroupRows + j) * 2 + (k & 1)) : size_t(k * kGroupRows + j);
}

// Groups [g0, g1) of rows of 2-byte elements, `data` in row layout (float_panels.h).
template <bool Pairs>
void pack_groups(const uint8_t* data_bytes, int64_t n_in, int64_t n_out, int64_t g0, int64_t g1,
                 uint8_t* dst_bytes) {
  const auto* data = reinterpret_cast<const uint16_t*>(data_bytes);
  auto* dst = reinterpret_cast<uint16_t*>(dst_bytes);
  const int64_t kp = Pairs ? (n_in + 1) / 2 * 2 : n_in;  // panel_k
  // k in blocks so the 64 source rows' current stretch stays in L1 while the group is written.
  constexpr int64_t kBlock = 128;
  for (int64_t g = g0; g < g1; ++g) {
    uint16_t* group = dst + size_t(g - g0) * size_t(kp) * size_t(kGroupRows);
    for (int64_t k0 = 0; k0 < kp; k0 += kBlock) {
      const int64_t k1 = std::min(kp, k0 + kBlock);
      for (int64_t j = 0; j < kGroupRows; ++j) {  // j = q * 16 + l
        const int64_t row = g * kGroupRows + j;
        const uint16_t* src = row < n_out ? data + size_t(row) * size_t(n_in) : nullptr;
        for (int64_t k = k0; k < k1; ++k)
          group[in_group(Pairs, k, j)] = src && k < n_in ? src[k] : uint16_t(0);
      }
    }
  }
}

}  // namespace

bool has_panel_layout(TensorType t) { return t == TensorType::F16 || t == TensorType::BF16; }

bool matmul_uses_panels(TensorType t, CpuTier tier) {
  return has_panel_layout(t) && clamp_tier(tier) >= CpuTier::Avx2;
}

int64_t panel_count(int64_t n_out) {
  const int64_t panels = (n_out + kPanelRows - 1) / kPanelRows;
  return (panels + kPanelGroup - 1) / kPanelGroup * kPanelGroup;
}

int64_t panel_k(TensorType t, int64_t n_in) {
  return t == TensorType::BF16 ? (n_in + 1) / 2 * 2 : n_in;
}

size_t panel_bytes(const WeightView& w) {
  return size_t(panel_k(w.type, w.n_in)) * size_t(kPanelRows) * sizeof(uint16_t);
}

size_t panels_bytes(const WeightView& w) { return panel_bytes(w) * size_t(panel_count(w.n_out)); }

void pack_panels(const WeightView& w, int64_t p0, int64_t p1, uint8_t* dst) {
  if (!has_panel_layout(w.type))
    throw Error("pack_panels", std::string("type ") + gguf::type_name(w.type) +
                                   " has no panel layout (F16 and BF16 have)");
  if (p0 % kPanelGroup != 0 || p1 % kPanelGroup != 0 || p0 > p1)
    throw Error("pack_panels", "panels [" + std::to_string(p0) + ", " + std::to_string(p1) +
                                   ") are not whole groups of " + std::to_string(kPanelGroup));
  if (w.type == TensorType::BF16)
    pack_groups<true>(w.data, w.n_in, w.n_out, p0 / kPanelGroup, p1 / kPanelGroup, dst);
  else
    pack_groups<false>(w.data, w.n_in, w.n_out, p0 / kPanelGroup, p1 / kPanelGroup, dst);
}

void unpack_panel_row(const WeightView& w, int64_t r, float* out) {
  if (!has_panel_layout(w.type) || !w.panels)
    throw Error("unpack_panel_row", "the weight has no panels");
  const bool pairs = w.type == TensorType::BF16;
  const auto* group = reinterpret_cast<const uint16_t*>(w.panels) +
                      size_t(r / kGroupRows) * size_t(panel_k(w.type, w.n_in)) * size_t(kGroupRows);
  const int64_t j = r % kGroupRows;
  for (int64_t k = 0; k < w.n_in; ++k) {
    const uint16_t h = group[in_group(pairs, k, j)];
    out[k] = w.type == TensorType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
  }
}

}  // namespace ragform::ops

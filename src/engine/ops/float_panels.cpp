#include "engine/ops/float_panels.h"

#include <cstring>
#include <string>

#include "base/error.h"

namespace ragform::ops {

namespace {


// Panels [p0, p1) of rows of Elem (F16/BF16: uint16_t), `data` in row layout.
template <typename Elem>
void pack(const uint8_t* data, int64_t n_in, int64_t n_out, int64_t p0, int64_t p1,
          uint8_t* dst_bytes) {
  auto* dst = reinterpret_cast<Elem*>(dst_bytes);
  const size_t row_elems = size_t(n_in);
  // k in blocks so the 16 source rows' current stretch stays in L1 while its lanes are written.
  constexpr int64_t kBlock = 256;
  for (int64_t p = p0; p < p1; ++p) {
    Elem* panel = dst + size_t(p - p0) * row_elems * size_t(kPanelRows);
    for (int64_t k0 = 0; k0 < n_in; k0 += kBlock) {
      const int64_t k1 = k0 + kBlock < n_in ? k0 + kBlock : n_in;
      for (int64_t l = 0; l < kPanelRows; ++l) {
        const int64_t row = p * kPanelRows + l;
        if (row >= n_out) {
          for (int64_t k = k0; k < k1; ++k) panel[size_t(k) * kPanelRows + size_t(l)] = Elem{};
          continue;
        }
        Elem src[kBlock];
        std::memcpy(src, data + (size_t(row) * row_elems + size_t(k0)) * sizeof(Elem),
                    size_t(k1 - k0) * sizeof(Elem));
        for (int64_t k = k0; k < k1; ++k)
          panel[size_t(k) * kPanelRows + size_t(l)] = src[k - k0];
      }
    }
  }
}

}  // namespace

bool has_panel_layout(TensorType t) {
  return t == TensorType::F16 || t == TensorType::BF16;
}

bool matmul_uses_panels(TensorType t, CpuTier tier) {
  return has_panel_layout(t) && clamp_tier(tier) >= CpuTier::Avx2;
}

int64_t panel_count(int64_t n_out) {
  const int64_t panels = (n_out + kPanelRows - 1) / kPanelRows;
  return (panels + kPanelGroup - 1) / kPanelGroup * kPanelGroup;
}

size_t panel_bytes(const WeightView& w) {
  return size_t(w.n_in) * size_t(kPanelRows) * sizeof(uint16_t);
}

size_t panels_bytes(const WeightView& w) { return panel_bytes(w) * size_t(panel_count(w.n_out)); }

void pack_panels(const WeightView& w, int64_t p0, int64_t p1, uint8_t* dst) {
  if (!has_panel_layout(w.type))
    throw Error("pack_panels", std::string("type ") + gguf::type_name(w.type) +
                                   " has no panel layout (F16 and BF16 have)");
  pack<uint16_t>(w.data, w.n_in, w.n_out, p0, p1, dst);
}

}  // namespace ragform::ops

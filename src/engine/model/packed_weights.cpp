#include "engine/model/packed_weights.h"

#include <sys/mman.h>

#include <cstdint>
#include <map>

#include "base/error.h"
#include "engine/ops/float_panels.h"

namespace ragform::model {

namespace {
constexpr size_t kPage = 4096;
constexpr size_t kAlign = 64;
}  // namespace

bool PackedWeights::packs(gguf::TensorType t, const ops::MatmulPolicy& policy) {
  return ops::matmul_uses_panels(t, policy.tier);
}

std::shared_ptr<const gguf::File> PackedWeights::open(const std::string& path,
                                                      const LoadOptions& opt) {
  const ops::MatmulPolicy policy = opt.matmul_policy();
  return gguf::File::open(path, opt.load, [&](const gguf::File& f) {
    uint64_t packed = 0, all = 0;
    for (const gguf::TensorInfo& t : f.tensors()) {
      all += t.n_bytes;
      if (t.ne.size() == 2 && packs(t.type, policy)) packed += t.n_bytes;
    }
    return all > 0 && 2 * packed >= all;
  });
}

PackedWeights::~PackedWeights() {
  if (base_) munmap(base_, size_);
}

void PackedWeights::pack(const std::vector<ops::WeightView*>& views, const gguf::File& file) {
  if (base_) throw Error("model", "weights packed twice");
  // One panel block per distinct row range (a tied output shares the token embedding's rows).
  struct Block {
    size_t offset;
    bool packed = false;
  };
  std::map<const uint8_t*, Block> blocks;
  size_t total = 0;
  for (const ops::WeightView* w : views) {
    if (!w->data || !packs(w->type, w->policy) || w->n_out <= 0 || blocks.count(w->data)) continue;
    blocks[w->data] = Block{total};
    total += (ops::panels_bytes(*w) + kAlign - 1) / kAlign * kAlign;
  }
  if (total == 0) return;
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error("model", file.path() + ": cannot allocate " + std::to_string(total >> 20) +
                             " MB for the packed float weights");
#ifdef MADV_HUGEPAGE
  madvise(p, total, MADV_HUGEPAGE);  // advice only: ignored where huge pages are off
#endif
  base_ = p;
  size_ = total;
  for (ops::WeightView* w : views) {
    const auto it = blocks.find(w->data);
    if (it == blocks.end()) continue;
    uint8_t* dst = static_cast<uint8_t*>(p) + it->second.offset;
    if (!it->second.packed) {
      ops::pack_panels(*w, 0, ops::panel_count(w->n_out), dst);
      it->second.packed = true;
      // F16 under the int16 policy still reads its rows in prefill (gemm_f16_int16): kept.
      const bool rows_read =
          w->type == gguf::TensorType::F16 && w->policy.f16 == ops::F16Gemm::int16;
      if (!file.in_memory() && !rows_read) {
        // The rows are read again only from the file (see the header).
        const auto b = reinterpret_cast<uintptr_t>(w->data);
        const uintptr_t e = b + w->row_bytes() * size_t(w->n_out);
        const uintptr_t pb = (b + kPage - 1) / kPage * kPage, pe = e / kPage * kPage;
        if (pe > pb) madvise(reinterpret_cast<void*>(pb), pe - pb, MADV_DONTNEED);
      }
    }
    w->panels = dst;
  }
}

}  // namespace ragform::model

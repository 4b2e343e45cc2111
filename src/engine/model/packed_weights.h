// A model's float weights (F32/F16/BF16 matrices) repacked once at load into the panels of the
// exact float kernels (ops/float_panels.h): decode then streams each weight once per token in the
// order the kernel reads it, and prefill never transposes.
//
// Memory: the panels take the weights' own size (plus zero rows up to a whole panel group), in
// one anonymous region backed by huge pages where the kernel allows (the reason MappedFile reads
// weights into huge pages). Where the file is mapped, the packed rows' pages are then released
// (madvise DONTNEED on a read-only file mapping: a later read of the rows, which nothing in the
// engine does, reads them from the file again; get_rows reads a packed token embedding from its
// panels), so a packed model's resident memory stays about its file size. open() maps files whose
// weights are mostly float for that reason (Model and BertModel load through it); a file read into
// memory (`memory` asked for) keeps its copy beside the panels.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/model/engine_options.h"
#include "engine/ops/ops.h"

namespace ragform::model {

class PackedWeights {
 public:
  PackedWeights() = default;
  ~PackedWeights();
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // Packs every view that has a panel layout and that matmul multiplies with the panel kernels
  // (its policy's tier, clamped to the CPU, is AVX2 or better) and sets its `panels`; views over
  // the same rows are packed once. `file` holds the views' data. Call once.
  void pack(const std::vector<ops::WeightView*>& views, const gguf::File& file);

  // Bytes of panels held.
  size_t bytes() const { return size_; }

  // True when a view of type t under `policy` would be packed.
  static bool packs(gguf::TensorType t, const ops::MatmulPolicy& policy);

  // Opens a model file by opt.load, except that memory_if_room maps a file at least half of whose
  // bytes are matrices that will be packed (mapped, their pages are released after packing; read
  // into memory, the copy would stay beside the panels). `memory` and `map` are obeyed as asked.
  static std::shared_ptr<const gguf::File> open(const std::string& path, const LoadOptions& opt);

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ragform::model

// Writes a GGUF file whose tensor bytes are produced piece by piece, so that a model of many GB
// is written in the memory of one batch of rows (make-test-model, quantize).
//
// The constructor writes the header (Writer::layout: metadata, tensor table, padding) to a
// temporary file beside the target (base/atomic_file.h: an unpredictable name, created new, never
// through a symlink), and extends it to its final size, so the data
// section starts as zeros (sparse: nothing is written twice) and the padding between tensors is
// already in place. write() then puts bytes of a tensor at their offset with pwrite, from any
// order of calls. commit() closes the file and renames it to `path`; a StreamWriter destroyed
// without commit() (an exception on the way) removes the temporary file, so a failed run never
// leaves a half-written `path`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/atomic_file.h"
#include "engine/gguf/gguf.h"

namespace ragform::gguf {

struct TensorSpec {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] = row length
  TensorType type = TensorType::F32;
};

class StreamWriter {
 public:
  // `meta` carries the metadata and no tensors; `tensors` are laid out in this order. Errors (the
  // temporary file cannot be created: FileError; a full disk) throw Error(what, "<file>: ...").
  StreamWriter(const std::string& path, Writer meta, const std::vector<TensorSpec>& tensors,
               std::string what);
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // The size of the file these arguments would make, without writing it (a dry run).
  static uint64_t size_of(Writer meta, const std::vector<TensorSpec>& tensors);

  const std::string& temp_path() const { return file_->temp_path(); }
  uint64_t file_bytes() const { return file_bytes_; }
  uint64_t tensor_bytes(size_t i) const { return bytes_.at(i); }

  // Writes n bytes at byte `at` of tensor i; the range must lie inside the tensor.
  void write(size_t i, uint64_t at, const void* p, size_t n);
  // Flushes the file to disk, closes it and renames it to `path`.
  void commit();

 private:
  std::string what_;
  std::unique_ptr<AtomicFile> file_;
  uint64_t file_bytes_ = 0;
  std::vector<uint64_t> offsets_;  // absolute file offsets
  std::vector<uint64_t> bytes_;
  bool committed_ = false;
};

}  // namespace ragform::gguf

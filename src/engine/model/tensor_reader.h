// Reading a model's tensors by name against the shapes its architecture expects: one place for
// the checks and messages the decoders (model.cpp) and the encoder (bert.cpp) share. Every read
// is recorded, so a loader can refuse a file that carries tensors it did not read.
// Internal to engine/model.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/ops/ops.h"

namespace ragform::model {

// "[896, 151936]"
std::string shape_str(const std::vector<int64_t>& ne);

class TensorReader {
 public:
  TensorReader() = default;
  TensorReader(std::shared_ptr<const gguf::File> file, const ops::MatmulPolicy& policy)
      : file_(std::move(file)), policy_(policy) {}

  // A 1-D tensor of n floats: a view of an F32 tensor, or an F32 copy (kept here) of any other
  // type. Missing: an error when `required`, else null. Another element count is an error.
  const float* vec(const std::string& name, int64_t n, bool required);
  // A weight matrix [n_in, n_out] (n_out < 0: any number of rows) of a type the matmul kernels
  // take, as a view of the file's bytes. Missing, another shape or type: an error naming them.
  ops::WeightView mat(const std::string& name, int64_t n_in, int64_t n_out);
  bool used(const std::string& name) const { return used_.count(name) > 0; }

 private:
  std::shared_ptr<const gguf::File> file_;
  ops::MatmulPolicy policy_{};
  std::vector<std::vector<float>> owned_;  // F32 copies of 1-D tensors (stable addresses)
  std::set<std::string> used_;             // tensors read so far
};

}  // namespace ragform::model

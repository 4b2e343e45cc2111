#include "engine/model/tensor_reader.h"

#include "base/error.h"

namespace ragform::model {

std::string shape_str(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

const float* TensorReader::vec(const std::string& name, int64_t n, bool required) {
  const gguf::TensorInfo* t = file_->find_tensor(name);
  if (!t) {
    if (required) throw Error("model", file_->path() + ": missing tensor '" + name + "'");
    return nullptr;
  }
  used_.insert(name);
  if (t->n_elements() != n)
    throw Error("model", file_->path() + ": tensor '" + name + "' has shape " + shape_str(t->ne) +
                             ", expected [" + std::to_string(n) + "]");
  if (t->type == gguf::TensorType::F32) return reinterpret_cast<const float*>(t->data);
  owned_.emplace_back(size_t(n));
  ops::dequantize_row(t->type, t->data, owned_.back().data(), n);
  return owned_.back().data();
}

ops::WeightView TensorReader::mat(const std::string& name, int64_t n_in, int64_t n_out) {
  const gguf::TensorInfo& t = file_->tensor(name);
  used_.insert(name);
  if (t.ne.size() != 2 || t.ne[0] != n_in || (n_out >= 0 && t.ne[1] != n_out))
    throw Error("model", file_->path() + ": tensor '" + name + "' has shape " + shape_str(t.ne) +
                             ", expected [" + std::to_string(n_in) + ", " +
                             (n_out >= 0 ? std::to_string(n_out) : std::string("n")) + "]");
  if (!ops::is_weight_type(t.type))
    throw Error("model", file_->path() + ": tensor '" + name + "' has type " +
                             gguf::type_name(t.type) + ", which cannot be a weight matrix");
  return ops::WeightView{t.type, t.data, n_in, t.ne[1], policy_};
}

}  // namespace ragform::model

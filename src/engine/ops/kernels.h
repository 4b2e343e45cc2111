// Internal to ops/: per-type dot-product kernels, looked up once per matmul instead of switching
// per row.
#pragma once
#include <cstdint>

#include "engine/gguf/types.h"

namespace ragform::ops {

// Dot of n elements of a weight row with a converted activation row (see ops.h vec_dot).
using DotFn = float (*)(int64_t n, const void* w_row, const void* act_row);

// The kernel for weight type t; throws Error for a type that is not a weight type.
DotFn dot_function(gguf::TensorType t);

}  // namespace ragform::ops

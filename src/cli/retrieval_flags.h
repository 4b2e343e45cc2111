// What `index build`, `retrieve`, `sure prepare` and `serve --index` share: the native encoder of
// a dense index, opened from its model file with the engine settings of the environment.
#pragma once
#include <memory>
#include <string>

#include "reader/native_encoder.h"
#include "retrieval/dense_index.h"

namespace ragform::cli {

struct IndexEncoder {
  std::unique_ptr<reader::NativeEncoder> encoder;
  retrieval::EncoderId id;  // file name and SHA-256 of the model
};

// Opens model_path on `threads` engine threads (0 = all cores); truncation to the model's
// context is on (passages and questions longer than n_ctx are cut, counted by the callers).
IndexEncoder open_index_encoder(const std::string& model_path, int threads);

}  // namespace ragform::cli

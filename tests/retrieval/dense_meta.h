// The metadata of a dense index over random vectors (no encoder behind them), for the tests of
// FAISS search itself.
#pragma once
#include "retrieval/dense_index.h"

namespace ragform::testing {

inline retrieval::DenseMeta random_dense_meta(int dims, retrieval::FaissKind kind) {
  retrieval::DenseMeta m;
  m.encoder = "random";
  m.encoder_sha256 = "none";
  m.pooling = "mean";
  m.dims = dims;
  m.kind = kind;
  return m;
}

}  // namespace ragform::testing

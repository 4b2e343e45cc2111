// The random numbers of the random-weight test models (make-test-model: random_model_write.cpp for
// the decoders, random_model_bert.cpp for the encoders): the same values on every machine, compiler
// and thread count, so a model written twice with one seed is the same file.
//
//   splitmix64_next(s)  SplitMix64 (Steele, Lea and Flood): returns splitmix64_mix(s), then
//                       advances s by the golden-ratio increment (base/stable_hash.h).
//   Gaussian            standard normal samples by Box-Muller over two 53-bit uniforms,
//                       u1 in (0, 1), u2 in [0, 1): r = sqrt(-2 ln u1), then r cos(2 pi u2) and,
//                       as the next sample, r sin(2 pi u2).
// Internal to engine/model (not a public header of the layer).
#pragma once
#include <cmath>
#include <cstdint>
#include <numbers>

#include "base/stable_hash.h"

namespace ragform::model::detail {

inline uint64_t splitmix64_next(uint64_t& s) {
  const uint64_t r = splitmix64_mix(s);
  s += 0x9e3779b97f4a7c15ull;
  return r;
}

class Gaussian {
 public:
  explicit Gaussian(uint64_t seed) : s_(seed) {}
  float next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (double(splitmix64_next(s_) >> 11) + 0.5) * 0x1p-53;  // (0, 1)
    const double u2 = double(splitmix64_next(s_) >> 11) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = float(r * std::sin(2.0 * std::numbers::pi * u2));
    has_spare_ = true;
    return float(r * std::cos(2.0 * std::numbers::pi * u2));
  }

 private:
  uint64_t s_;
  float spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace ragform::model::detail

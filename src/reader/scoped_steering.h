// A reader's attention steering for the length of one call or batch: set on construction and
// restored on destruction, also when the call throws, so a steered prompt never leaves the reader
// steered for the next (unsteered) one. The pipelines that steer some prompts and not others
// (Spotlight's emphasis, SURE's gold emphasis, the calibrated sweep) use it around each call.
#pragma once
#include <utility>

#include "reader/reader.h"

namespace ragform::reader {

class ScopedSteering {
 public:
  ScopedSteering(Reader& r, SteeringParams s) : r_(r), saved_(r.steering) {
    r_.steering = std::move(s);
  }
  ~ScopedSteering() { r_.steering = saved_; }
  ScopedSteering(const ScopedSteering&) = delete;
  ScopedSteering& operator=(const ScopedSteering&) = delete;

 private:
  Reader& r_;
  SteeringParams saved_;
};

}  // namespace ragform::reader

// The steering object, read and checked once for every front end (runtime/steering.h has the
// rules; NativeReader::resolve_steering checks the rest against the model and the prompt):
//   {"rule":   "rescale:FACTOR" | "reallocate:SHARE" | "reallocate:S1,S2,..." |
//              "redistribute:W1,W2,..." | "off",
//    "spans":  [[start, end], ...]  byte offsets into the prompt, start below end; required
//                                   unless the rule is off,
//    "layers": [indices] | "A..B,-1" | null   (null or absent: the last half),
//    "heads":  [indices] | null               (null or absent: every head)}
// null is off; any other key is refused. The server's "steer" field is this object as the request
// gives it; Python's Reader.steering takes it as a dict (tuples for lists); the CLI's --steer,
// --steer-spans, --steer-layers and --steer-heads give rule, spans, layers and heads
// (cli/steer_flags.h). A refusal is a runtime::SteerError naming the key, which each front end
// spells its own way (--steer-spans, steer.spans, steering['spans']).
#pragma once
#include <nlohmann/json.hpp>

#include "reader/steering_params.h"

namespace ragform::reader {

SteeringParams parse_steering(const nlohmann::json& object);

}  // namespace ragform::reader

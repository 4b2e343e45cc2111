// Attention steering as a reader takes it: the user's form (runtime/steering.h SteeringSpec), with
// character spans into the prompt text exactly as passed to generate/score/attention (before any
// chat template) and layers that may count from the end. NativeReader resolves it against its
// model and the prompt's tokens (NativeReader::resolve_steering); readers that cannot steer
// (OpenAIReader) throw NotSupported when asked for an active one.
#pragma once
#include "engine/runtime/steering.h"

namespace ragform::reader {

using SteeringParams = runtime::SteeringSpec;

}  // namespace ragform::reader

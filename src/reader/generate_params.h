// The one rule of a generation's settings (reader.h GenerateParams) that every front end applies
// to what its user gave: `ragform generate`'s flags, Python's Reader.generate keywords. The bounds
// are the engine's (a temperature above 100 only flattens the distribution further, so it is
// taken for a typing error); the server keeps the OpenAI API's narrower ones on its JSON fields.
#pragma once
#include <string>

#include "reader/reader.h"

namespace ragform::reader {

inline constexpr double kMaxTemperature = 100.0;

// How a front end names each setting in its messages (GenerateParams' own names by default).
struct GenerateParamNames {
  std::string max_tokens = "max_tokens";
  std::string temperature = "temperature";
  std::string top_k = "top_k";
  std::string top_p = "top_p";
};

// Throws UsageError("<name>", why) for the first setting out of its range, in the order
// max_tokens (>= 0), temperature ([0, kMaxTemperature]), top_p ((0, 1]: the sampler's, as an empty
// nucleus holds no token), top_k (>= 0); NaN is out of every range. The stop strings have their
// own rule (reader.h stop_strings_problem).
void check_generate_params(const GenerateParams& p, const GenerateParamNames& names = {});

}  // namespace ragform::reader

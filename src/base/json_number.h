// JSON Schema's integer, as every reader of a client's JSON takes it: a number without a fraction
// however it is written (3, 3.0, 3e0), so that a request's nested fields (doc_spans, a steering
// object's spans, layers and heads, a bias curve's layers) read integers as its top-level fields
// do (issue 40, passes 10 and 12).
#pragma once
#include <nlohmann/json.hpp>

namespace ragform {

// Whether `v` is such an integer (not 3.5, "3" or true), its value in `x`, saturated to long
// long's range (a 30-digit literal reaches nlohmann as a double: an integer, too large for any
// field).
bool json_whole_number(const nlohmann::json& v, long long& x);

}  // namespace ragform

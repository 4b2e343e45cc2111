// The one rule for the keys of a JSON object ragform reads, from a file or a request body: a key
// it does not read is refused, never ignored (a misspelt "mesure" in a bias curve read the curve
// as the default "sum" and changed every calibrated number: issue 40, pass 18), and a key whose
// value is null is the same as a key not given, known or not (the OpenAI SDK's model_dump() of
// its own objects writes every unset field as null).
// Records of data sets (NQ-Open, key-value, HotpotQA lines) are the exception, by design: they
// carry what their source carried (ids, "hasanswer", scores) and ragform reads its fields only.
#pragma once
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace ragform {

// A key an object may not hold. A UsageError (CLI exit 2); the server answers it 400
// "unknown_field" (server/api_json.h).
class UnknownKeyError : public UsageError {
 public:
  using UsageError::UsageError;
};

// How a format's faults are classed: `usage` (UnknownKeyError, a UsageError: profiles, curves,
// request objects) or `runtime` (Error, CLI exit 1: files whose other faults are runtime errors,
// an index on disk, an alpha or pairs file), so each format stays one class.
enum class KeyFault { usage, runtime };

// Throws "<where>: '<key>' is not supported (<noun> takes a, b, c)" for the first key of `o` that
// is not in `keys` and whose value is not null: an UnknownKeyError, or an Error with `runtime`.
// `o` not an object: nothing (the caller names the type it wanted). The key is quoted as a
// bounded, printable excerpt.
void only_json_keys(const nlohmann::json& o, std::initializer_list<const char*> keys,
                    const std::string& where, const std::string& noun,
                    KeyFault fault = KeyFault::usage);

// `o` without its keys whose value is null (not recursive): a reader that asks contains() of the
// copy reads a null key as a key not given. `o` not an object: `o` itself.
nlohmann::json without_nulls(const nlohmann::json& o);

}  // namespace ragform

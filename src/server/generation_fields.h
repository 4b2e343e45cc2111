// The fields both generation endpoints read (/v1/completions and /v1/chat/completions): the
// model's id, max_tokens / max_completion_tokens, the sampling fields, stop and stream; OpenAI's
// fields this server does not implement, refused unless at their defaults (400
// unsupported_field); and the SDKs' metadata, not read but of its declared type.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/runtime/generate.h"
#include "server/api.h"

namespace ragform::server {

struct GenerationFields {
  runtime::GenerateOptions gen;
  bool stream = false;
};

// Throws ApiError (api_json.h): 404 model_not_found for another model's id, 400 naming the field
// for the rest. `default_max_tokens` is the endpoint's, when neither max_tokens field is given
// (at most opt.max_tokens).
GenerationFields generation_fields(const nlohmann::json& j, const ApiOptions& opt,
                                   int default_max_tokens);

}  // namespace ragform::server

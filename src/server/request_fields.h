// The top-level fields a route reads, and the refusal of any other (issue 40, P3: n_predict,
// grammar, typical_p, mirostat, ... were answered 200 and ignored: the client believed it had
// constrained the output). The route's request schema (router.h RouteSpec) is the one list: a
// field is read when the schema declares it, so the API document and the check cannot disagree.
// OpenAI refuses an unknown argument too ("Unrecognized request argument supplied").
#pragma once
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace ragform::server {

// The top-level property names of a request schema (JSON Schema text). Empty (no check) when the
// schema is empty (a route without a body), declares no properties, or lets others through with
// an "additionalProperties" other than false.
std::set<std::string> declared_fields(const std::string& schema);

// Removes the top-level keys of `body` whose value is null: a null field is a field not given,
// declared or not, in every handler (base/json_keys.h; pass 18: "records": null beside "record"
// was "give exactly one of"). `body` not an object: unchanged.
void drop_null_fields(nlohmann::json& body);

// Throws ApiError 400 "unknown_field" naming the first top-level key of `body` that is not in
// `fields`, and the route (`route`, "POST /v1/completions"). No check when `fields` is empty.
void check_request_fields(const nlohmann::json& body, const std::set<std::string>& fields,
                          const std::string& route);

}  // namespace ragform::server

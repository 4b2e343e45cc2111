// The top-level fields a route reads, and the refusal of any other (issue 40, P3: n_predict,
// grammar, typical_p, mirostat, ... were answered 200 and ignored: the client believed it had
// constrained the output). The route's request schema (router.h RouteSpec) is the one list: a
// field is read when the schema declares it, so the API document and the check cannot disagree.
// OpenAI refuses an unknown argument too ("Unrecognized request argument supplied").
#pragma once
#include <set>
#include <string>
#include <string_view>

namespace ragform::server {

// The top-level property names of a request schema (JSON Schema text). Empty (no check) when the
// schema is empty (a route without a body), declares no properties, or lets others through with
// an "additionalProperties" other than false.
std::set<std::string> declared_fields(const std::string& schema);

// Throws ApiError 400 "unknown_field" naming the first top-level key of `body` that is not in
// `fields`, and the route (`route`, "POST /v1/completions"). A body that is not a JSON object,
// does not parse or nests too deep is left to the handler, whose own message names why.
// Reads the body with a SAX pass (no tree is built).
void check_request_fields(std::string_view body, const std::set<std::string>& fields,
                          const std::string& route);

}  // namespace ragform::server

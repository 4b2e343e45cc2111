// POST /v1/rag/present on `ragform serve`: a profile from `ragform tune` applied to records, the
// function `ragform present` and Python's ragform.present call (tune/present.h), so the three give
// the same prompts for the same profile and records. A route of the server's one table (router.h):
// the same API key check and error objects as every endpoint.
//   POST /v1/rag/present {profile: {the profile file's JSON}, record: {...}}
//     -> {id, prompt, documents, gold_position, task, presentation, prompt_tokens}
//   POST /v1/rag/present {profile, records: [{...}, ...]}
//     -> {object: "list", data: [one such object per record, in order]}
// prompt_tokens counts with the served model (its tokenisation and chat wrapping). A bad profile
// or record is a 400 naming it ("request 'profile': ...", "records[2]: ...").
#pragma once

namespace ragform::reader {
class Reader;
}

namespace ragform::server {

class Router;

// Adds POST /v1/rag/present; `counter` (may be null) counts the prompts' tokens and must outlive
// the router.
void add_present_route(Router& router, reader::Reader* counter);
// The same route without a handler (the API document of a server not started, openapi.h).
void declare_present_route(Router& router);

}  // namespace ragform::server

// The decoder server's route table: one RouteSpec per route (where it answers, who may call it,
// its request and reply schemas; openapi.h builds the API document from them) and the binding of
// each to its handler in api.cpp. Adding an endpoint: a spec here, a handler there.
#include <string>

#include "pipelines/spotlight/spotlight.h"
#include "reader/generate_options.h"
#include "reader/native_reader.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/api_present.h"
#include "server/reply_budget.h"
#include "server/router.h"

namespace ragform::server {

using api_json::model_route;
using api_json::models_route;

namespace {

// The JSON Schemas of the route declarations below (RouteSpec; openapi.h builds the API document
// from them). A schema is what the handler accepts, no stricter (every value a handler takes must
// match, so a test client's "invalid" requests are ones the server refuses): an optional field is
// also null (read as absent), and numbers carry the handler's own bounds ("$name" = a limit of the
// serving process, openapi.h). A field a handler reads from an option declaration (read_declared)
// is named here where it stands, its type, range, default and description filled in from the
// declaration (with_declared; its own keywords here add to them), so the document does not copy
// them.
#define RAGFORM_MODEL_FIELD \
  R"("model": {"type": ["string", "null"], "description": "the served model's id; absent: it, another: 404 model_not_found"})"
// reader/steering_object.h (its one parser; spans are required unless the rule is off).
#define RAGFORM_STEER_FIELD                                                                                                                                                                                                            \
  R"("steer": {"type": ["object", "null"], "required": ["rule"], "additionalProperties": false,)"                                                                                                                                      \
  R"( "description": "steer the prompt's attention to byte spans (docs/steering.md); errors name steer.rule, steer.spans, steer.layers, steer.heads",)"                                                                                \
  R"( "properties": {)"                                                                                                                                                                                                                \
  R"( "rule": {"type": "string", "description": "rescale:FACTOR | reallocate:SHARE | reallocate:S1,... | redistribute:W1,... | off: spans may then be absent"},)"                                                                      \
  R"( "spans": {"type": "array", "minItems": 1, "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 0}}, "description": "[start, end] byte offsets into the prompt, start below end"},)"  \
  R"( "layers": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}}, {"type": "null"}], "description": "indices or \"A..B,-1\" - default: the last half"},)" \
  R"( "heads": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0, "maximum": 2147483647}, "description": "default: all"}}})"
#define RAGFORM_SAMPLING_FIELDS                                                                                                                                                                                                                                               \
  R"("max_tokens": {"type": ["integer", "null"], "minimum": 0, "maximum": "$max_tokens"},)"                                                                                                                                                                                   \
  R"( "max_completion_tokens": {"type": ["integer", "null"], "minimum": 0, "maximum": "$max_tokens", "description": "read when max_tokens is absent"},)"                                                                                                                      \
  R"( "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2, "default": 1},)"                                                                                                                                                                                \
  R"( "top_p": {"exclusiveMinimum": 0}, "top_k": {},)"                                                                                                                                                                                                                        \
  R"( "seed": {"type": ["integer", "null"]},)"                                                                                                                                                                                                                                \
  R"( "stop": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "maxItems": "$max_stop_strings", "items": {"type": "string", "minLength": 1}}, {"type": "null"}], "description": "at most $max_stop_strings strings of at most $max_stop_bytes bytes each"},)" \
  R"( "n": {"type": ["integer", "null"], "minimum": 1, "maximum": 1},)"                                                                                                                                                                                                       \
  R"( "stream": {"type": ["boolean", "null"], "description": "true: server-sent events, then data: [DONE]"})"
// OpenAI's fields that change the result and are not implemented: accepted when they ask for the
// default (common_fields), so a client that always sends them still works; any other value is a
// 400. And the SDKs' metadata, which changes nothing in the answer. Any field not declared in a
// route's schema is refused (request_fields.h: n_predict, grammar, mirostat, ... were answered
// 200 and ignored, issue 40 P3).
#define RAGFORM_DEFAULT_ONLY_FIELDS                                                                                                                                                                                                                                          \
  R"("best_of": {"type": ["integer", "null"], "minimum": 1, "maximum": 1, "description": "only 1"},)"                                                                                                                                                                        \
  R"( "presence_penalty": {"type": ["number", "null"], "minimum": 0, "maximum": 0, "description": "only 0"},)"                                                                                                                                                               \
  R"( "frequency_penalty": {"type": ["number", "null"], "minimum": 0, "maximum": 0, "description": "only 0"},)"                                                                                                                                                              \
  R"( "logit_bias": {"type": ["object", "null"], "maxProperties": 0, "description": "only {}"},)"                                                                                                                                                                            \
  R"( "suffix": {"type": ["string", "null"], "maxLength": 0, "description": "only empty"},)"                                                                                                                                                                                 \
  R"( "min_p": {"type": ["number", "null"], "minimum": 0, "maximum": 0, "description": "only 0"},)"                                                                                                                                                                          \
  R"( "repetition_penalty": {"type": ["number", "null"], "minimum": 1, "maximum": 1, "description": "only 1"},)"                                                                                                                                                             \
  R"( "response_format": {"type": ["object", "null"], "additionalProperties": false, "properties": {"type": {"const": "text"}}, "description": "only {\"type\": \"text\"}"},)"                                                                                               \
  R"( "tools": {"type": ["array", "null"], "maxItems": 0, "description": "only []"},)"                                                                                                                                                                                       \
  R"( "functions": {"type": ["array", "null"], "maxItems": 0, "description": "only []"},)"                                                                                                                                                                                   \
  R"( "tool_choice": {"enum": ["none", "auto", null], "description": "only none or auto: there are no tools"},)"                                                                                                                                                             \
  R"( "function_call": {"enum": ["none", "auto", null], "description": "only none or auto: there are no functions"},)"                                                                                                                                                       \
  R"( "audio": {"type": "null"}, "prediction": {"type": "null"},)"                                                                                                                                                                                                           \
  R"( "modalities": {"oneOf": [{"const": ["text"]}, {"type": "null"}], "description": "only [\"text\"]"},)"                                                                                                                                                                  \
  R"( "stream_options": {"type": ["object", "null"], "additionalProperties": false, "properties": {"include_usage": {"enum": [false, null]}, "include_obfuscation": {"type": ["boolean", "null"], "description": "not read"}}, "description": "include_usage only false"},)" \
  R"( "user": {"type": ["string", "null"], "description": "metadata: not read"},)"                                                                                                                                                                                           \
  R"( "store": {"type": ["boolean", "null"], "description": "metadata: not read, nothing is stored"},)"                                                                                                                                                                      \
  R"( "metadata": {"type": ["object", "null"], "description": "metadata: not read"},)"                                                                                                                                                                                       \
  R"( "service_tier": {"type": ["string", "null"], "description": "metadata: not read"},)"                                                                                                                                                                                   \
  R"( "safety_identifier": {"type": ["string", "null"], "description": "metadata: not read"},)"                                                                                                                                                                              \
  R"( "prompt_cache_key": {"type": ["string", "null"], "description": "metadata: not read, the prefix cache keys on the prompt itself"},)"                                                                                                                                   \
  R"( "parallel_tool_calls": {"type": ["boolean", "null"], "description": "not read: there are no tools"})"
#define RAGFORM_USAGE \
  R"("usage": {"type": "object", "required": ["prompt_tokens", "completion_tokens", "total_tokens"], "properties": {"prompt_tokens": {"type": "integer"}, "completion_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}})"
#define RAGFORM_NUMBERS R"({"type": "array", "items": {"type": "number"}})"

const RouteSpec kHealth{
    .method = "GET",
    .paths = {"/health"},
    .access = Access::Open,
    .summary = "Liveness and the engine's counters (no API key needed)",
    .response =
        R"({"type": "object", "required": ["status", "active", "pending", "steps", "sequences", "jobs", "largest_batch", "prompt_tokens", "prompt_tokens_computed", "prefix_cache", "reply_memory", "body_memory"],
      "properties": {"status": {"const": "ok"}, "active": {"type": "integer"}, "pending": {"type": "integer"},
        "steps": {"type": "integer", "description": "forward passes of completions"}, "sequences": {"type": "integer"},
        "jobs": {"type": "integer", "description": "scoring, attention and hidden-state jobs run between steps"},
        "largest_batch": {"type": "integer"},
        "prompt_tokens": {"type": "integer", "description": "prompt tokens of completions and jobs admitted"},
        "prompt_tokens_computed": {"type": "integer", "description": "those prefilled; the rest came from the prefix cache"},
        "prefix_cache": {"type": ["object", "null"], "description": "null with --prefix-cache off"},
        "reply_memory": )" RAGFORM_REPLY_MEMORY R"(, "body_memory": )" RAGFORM_BODY_MEMORY R"(}})",
};

// top_k and top_p: generate's declaration (reader/generate_options.h), as common_fields reads them.
std::string with_sampling(const std::string& schema) {
  return api_json::with_declared(
      schema, api_json::declared_schema<reader::GenerateRequest>({"top_k", "top_p"}));
}

const RouteSpec kCompletions{
    .method = "POST",
    .paths = {"/v1/completions"},
    .summary = "Text completion (OpenAI legacy completions)",
    .description = "The prompts of one request share a batch; prompt i samples with seed + i.",
    .request = with_sampling(
        R"({"type": "object", "required": ["prompt"], "properties": {)" RAGFORM_MODEL_FIELD R"(,
      "prompt": {"oneOf": [{"type": "string"}, {"type": "array", "minItems": 1, "maxItems": "$queue", "items": {"type": "string"}}], "description": "at most --queue prompts"},
      )" RAGFORM_SAMPLING_FIELDS R"(,
      )" RAGFORM_DEFAULT_ONLY_FIELDS R"(,
      "echo": {"type": ["boolean", "null"]},
      "logprobs": {"type": ["integer", "null"], "minimum": 0, "maximum": 20, "description": "N: each token's log-prob and, N > 0, the N likeliest pieces at its position (top_logprobs); not with stream; tokens x (1 + N) at most $max_logprob_entries"},
      )" RAGFORM_STEER_FIELD R"(}})"),
    .response =
        R"({"type": "object", "required": ["id", "object", "created", "model", "choices", "usage"], "properties": {
      "id": {"type": "string"}, "object": {"const": "text_completion"}, "created": {"type": "integer"}, "model": {"type": "string"},
      "choices": {"type": "array", "items": {"type": "object", "required": ["index", "text", "logprobs", "finish_reason"], "properties": {
        "index": {"type": "integer"}, "text": {"type": "string"}, "finish_reason": {"enum": ["stop", "length"]},
        "logprobs": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["tokens", "token_logprobs", "top_logprobs", "text_offset"], "properties": {
          "tokens": {"type": "array", "items": {"type": "string"}}, "token_logprobs": {"type": "array", "items": {"type": ["number", "null"]}},
          "top_logprobs": {"oneOf": [{"type": "null"}, {"type": "array", "items": {"type": ["object", "null"], "additionalProperties": {"type": "number"}}}]}, "text_offset": {"type": "array", "items": {"type": "integer"}}}}]}}}},
      )" RAGFORM_USAGE R"(}})",
    .streams = true,
};

const RouteSpec kChat{
    .method = "POST",
    .paths = {"/v1/chat/completions"},
    .summary = "Chat completion with the model's chat template (or --chat-template)",
    .description =
        "Message contents are text: only the template's own markers become special tokens.",
    .request = with_sampling(
        R"({"type": "object", "required": ["messages"], "properties": {)" RAGFORM_MODEL_FIELD R"(,
      "messages": {"type": "array", "minItems": 1, "items": {"type": "object", "required": ["role", "content"], "additionalProperties": false, "properties": {
        "role": {"type": "string"},
        "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object", "required": ["type", "text"], "additionalProperties": false, "properties": {"type": {"const": "text"}, "text": {"type": "string"}}}}]}}}},
      )" RAGFORM_SAMPLING_FIELDS R"(,
      )" RAGFORM_DEFAULT_ONLY_FIELDS R"(,
      "logprobs": {"type": ["boolean", "null"], "enum": [false, null], "description": "only false: /v1/completions gives log-probs"},
      "top_logprobs": {"type": ["integer", "null"], "minimum": 0, "maximum": 0, "description": "only 0"},
      "steer": {"type": "null", "description": "not read here, the prompt not being one text: any other value is a 400"}}})"),
    .response =
        R"({"type": "object", "required": ["id", "object", "created", "model", "choices", "usage"], "properties": {
      "id": {"type": "string"}, "object": {"const": "chat.completion"}, "created": {"type": "integer"}, "model": {"type": "string"},
      "choices": {"type": "array", "items": {"type": "object", "required": ["index", "message", "finish_reason"], "properties": {
        "index": {"type": "integer"}, "finish_reason": {"enum": ["stop", "length"]}, "logprobs": {"type": "null"},
        "message": {"type": "object", "required": ["role", "content"], "properties": {"role": {"const": "assistant"}, "content": {"type": "string"}}}}}},
      )" RAGFORM_USAGE R"(}})",
    .streams = true,
};

const RouteSpec kScore{
    .method = "POST",
    .paths = {"/v1/score"},
    .summary = "Log-probabilities of a continuation after a prompt (ragform)",
    .request =
        R"({"type": "object", "required": ["prompt"], "properties": {)" RAGFORM_MODEL_FIELD R"(,
      "prompt": {"type": "string"}, "continuation": {"type": ["string", "null"], "description": "absent: the prompt's own tokens are scored"},
      )" RAGFORM_STEER_FIELD R"(}})",
    .response =
        R"({"type": "object", "required": ["model", "tokens", "sum", "prompt_tokens"], "properties": {
      "model": {"type": "string"}, "sum": {"type": "number"}, "prompt_tokens": {"type": "integer"},
      "tokens": {"type": "array", "items": {"type": "object", "required": ["id", "piece", "logprob"], "properties": {"id": {"type": "integer"}, "piece": {"type": "string"}, "logprob": {"type": "number"}}}}}})",
};

const RouteSpec kAttention{
    .method = "POST",
    .paths = {"/v1/attention"},
    .summary = "Attention weights of query positions over the prompt (ragform)",
    .description =
        "The reply is bounded before anything is computed: rows (layers x query_positions) x "
        "(heads + 1) x prompt positions at most $max_attention_values weights, at most "
        "$max_response_bytes bytes; doc_spans at most $max_doc_spans, spans x rows at most "
        "$max_doc_span_rows, spans x rows x positions at most $max_doc_span_work. Over a limit: "
        "400 "
        "response_too_large or invalid_request naming it.",
    .request =
        R"({"type": "object", "required": ["prompt"], "properties": {)" RAGFORM_MODEL_FIELD R"(,
      "prompt": {"type": "string"},
      "layers": {"type": ["array", "null"], "items": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}},
      "query_positions": {"type": ["array", "null"], "items": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}},
      "heads": {"type": ["array", "null"], "items": {"type": "integer", "minimum": -2147483648, "maximum": 2147483647}},
      "doc_spans": {"type": "array", "minItems": 1, "maxItems": "$max_doc_spans", "items": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "integer", "minimum": 0}},
        "description": "[start, end] byte ranges of the prompt's documents: each row adds documents and ranking"},
      "bias": {"type": ["object", "null"], "description": "a curve from `ragform position-bias`; needs doc_spans"},
      )" RAGFORM_STEER_FIELD R"(}})",
    .response =
        R"({"type": "object", "required": ["model", "ids", "pieces", "rows"], "properties": {
      "model": {"type": "string"}, "ids": {"type": "array", "items": {"type": "integer"}}, "pieces": {"type": "array", "items": {"type": "string"}},
      "rows": {"type": "array", "items": {"type": "object", "required": ["layer", "query_position", "head_ids", "heads", "mean", "abs"], "properties": {
        "layer": {"type": "integer"}, "query_position": {"type": "integer"}, "head_ids": {"type": "array", "items": {"type": "integer"}},
        "heads": {"type": "array", "items": )" RAGFORM_NUMBERS R"(}, "mean": )" RAGFORM_NUMBERS
        R"(, "abs": {"type": ["number", "null"]},
        "documents": {"type": "array"}, "ranking": {"type": "array"}}}}}})",
};

const RouteSpec kNormalize{
    .method = "POST",
    .paths = {"/v1/rag/normalize"},
    .summary = "C-NORM: one record's documents reformatted with a profile (cnorm apply)",
    .request = R"({"type": "object", "required": ["documents"], "properties": {
      "documents": {"type": "array", "items": {"type": "string"}},
      "profile": {"type": ["object", "null"], "description": "a profile from `ragform cnorm calibrate`; absent: --cnorm-profile"}}})",
    .response =
        R"({"type": "object", "required": ["documents", "delimiter", "p", "seed", "task"], "properties": {
      "documents": {"type": "array", "items": {"type": "string"}}, "delimiter": {"type": "string"}, "p": {"type": "number"}, "seed": {"type": "integer"}, "task": {"type": "string"}}})",
};

const RouteSpec kSpotlight{
    .method = "POST",
    .paths = {"/v1/rag/spotlight"},
    .summary = "SpotlightRAG evidence selection (spotlight select --json)",
    // K, k, lambda, order, special_tokens: spotlight select's declaration (select_options.h), as
    // Api::spotlight reads them.
    .request = api_json::with_declared(
        R"({"type": "object", "required": ["question", "documents"], "properties": {
      "id": {"type": ["string", "null"]}, "question": {"type": "string", "minLength": 1},
      "documents": {"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": false, "properties": {
        "title": {"type": ["string", "null"]}, "id": {"type": ["string", "null"]},
        "text": {"type": ["string", "null"]}, "sentences": {"type": ["array", "null"], "items": {"type": "string"}}},
        "description": "exactly one of text or sentences"}},
      "K": {}, "k": {}, "lambda": {},
      "alpha": {"type": ["string", "null"], "enum": ["idf", "uniform", null]}, "order": {"enum": ["doc", "score", null]},
      "special_tokens": {}}})",
        [] {
          auto fields = api_json::declared_schema<spotlight::ScoreOptions>();
          fields.update(api_json::declared_schema<spotlight::PromptOptions>());
          return fields;
        }()),
    .response = R"({"type": "object", "required": ["id", "selected", "prompt"], "properties": {
      "id": {"type": "string"}, "prompt": {"type": "string"}, "selected": {"type": "array", "items": {"type": "object"}}}})",
};

#undef RAGFORM_MODEL_FIELD
#undef RAGFORM_STEER_FIELD
#undef RAGFORM_SAMPLING_FIELDS
#undef RAGFORM_DEFAULT_ONLY_FIELDS
#undef RAGFORM_USAGE
#undef RAGFORM_NUMBERS

}  // namespace

void Api::add_routes(Router& router) { routes(router, this); }

void Api::declare_routes(Router& router) { routes(router, nullptr); }

void Api::routes(Router& router, Api* self) {
  // The handler of a route, or none when the table is only declared (self null).
  auto on = [self](Response (Api::*fn)(RequestBody&)) { return body_handler(self, fn); };
  auto get = [self](Response (Api::*fn)()) { return plain_handler(self, fn); };
  router.add(kHealth, get(&Api::health));
  router.add(models_route(), get(&Api::models));
  router.add(kCompletions, on(&Api::completions));
  router.add(kChat, on(&Api::chat));
  router.add(kScore, on(&Api::score));
  router.add(kAttention, on(&Api::attention));
  router.add(kNormalize, on(&Api::normalize));
  router.add(kSpotlight, on(&Api::spotlight));
  if (self)
    add_present_route(router, &self->reader_);
  else
    declare_present_route(router);
  // Added last: the fuzz seeds pick a route by its index in this table (router_test.cpp).
  router.add(model_route(), on(&Api::model));
  router.hint({"/v1/embeddings", "/embeddings", "/v1/rerank", "/rerank"},
              "this server serves a decoder model; embeddings and rerank need `ragform serve -m "
              "ENCODER.gguf`");
  router.hint({"/v1/retrieve", "/retrieve"}, "start the server with --index DIR to retrieve");
}

}  // namespace ragform::server

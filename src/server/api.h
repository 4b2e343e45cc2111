// The OpenAI-compatible API of `ragform serve`, independent of any HTTP library: a request is a
// method, a path, the Authorization header and a body; a response is a status, a JSON body, or a
// list of server-sent events for `stream: true`. The endpoints are routes of the server's one
// table (router.h), which checks the API key and turns every failure into an OpenAI-style error
// object {"error": {"message", "type", "code"}} with its HTTP status.
//
// Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions,
// POST /v1/score {prompt, continuation} (ragform), POST /v1/attention {prompt, layers?,
// query_positions?, heads?} (ragform). See docs/server.md for the fields.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pipelines/spotlight/spotlight.h"
#include "server/message.h"

namespace ragform::reader {
class NativeReader;
class Encoder;
}  // namespace ragform::reader
namespace ragform::server {

class Engine;

// What one /v1/attention reply may hold (docs/server.md "Security"): attention weights (every
// requested head's row and the mean row, over the prompt's positions) and bytes of JSON. A 400
// naming the limit otherwise: ask for fewer layers, positions or heads. (doc_spans have their own
// limits, cnorm/relevance.h.)
inline constexpr size_t kMaxAttentionValues = size_t(1) << 21;  // 2,097,152 weights
inline constexpr size_t kMaxResponseBytes = size_t(64) << 20;   // 64 MiB
// What one /v1/completions log-prob listing may name: its tokens (the prompts' with echo, and
// max_tokens a prompt) x (1 + logprobs), counted before anything runs; a 400
// response_too_large otherwise. Each entry is a pass over the vocabulary.
inline constexpr size_t kMaxLogprobEntries = size_t(1) << 20;  // 1,048,576

struct ApiOptions {
  std::string model_id;  // the served model's id (file name without .gguf, or --alias)
  // SHA-256 of the model file (store::sha256_file, hashed once at start-up), reported by
  // /v1/models as the model's "ragform": {"model_sha256"}: a client's fleet check compares it.
  // Empty: not reported.
  std::string model_sha256;
  int max_prompt_tokens = 0;  // 0 = the context size
  int max_tokens = 512;       // upper bound of a request's max_tokens
  int n_ctx = 4096;
  std::string chat_template;  // a family name ("chatml", "llama3", ...) overriding the model's own
  // /v1/rag/normalize: the profile JSON used when a request brings none (--cnorm-profile),
  // and its file name for messages. Empty = none.
  std::string cnorm_profile, cnorm_profile_name;
  // /v1/rag/spotlight: "static" (word vectors, --vectors), "hidden" (the served model's hidden
  // states of spotlight_layer) or "model" (spotlight_model).
  std::string spotlight_encoder = "static";
  std::shared_ptr<const spotlight::WordVectors> vectors;
  int spotlight_layer = int(spotlight::EncoderOptions{}.layer);  // spotlight select's --layer
  // spotlight_encoder "model": an encoder model's word-piece states (--encoder-model).
  std::shared_ptr<reader::Encoder> spotlight_model;
};

class Router;
struct RequestBody;

class Api {
 public:
  Api(reader::NativeReader& reader, Engine& engine, ApiOptions opt);
  ~Api();
  // Adds these endpoints to the server's table, with 404 hints for the encoder's.
  void add_routes(Router& router);
  // The same routes without handlers, for the API document of a server not started (openapi.h).
  static void declare_routes(Router& router);
  // In process (tests, fuzzing): a table of these routes alone, no API key. Never throws.
  Response handle(const Request& req) noexcept;

 private:
  static void routes(Router& router, Api* self);  // self null: declared only
  Response health();
  Response models();
  Response model(RequestBody& body);
  Response completions(RequestBody& body);
  Response chat(RequestBody& body);
  Response score(RequestBody& body);
  Response attention(RequestBody& body);
  Response normalize(RequestBody& body);
  Response spotlight(RequestBody& body);
  reader::NativeReader& reader_;
  Engine& engine_;
  ApiOptions opt_;
  int chat_family_ = 0;  // tok::ChatFamily of the model's template (0 = none)
  long created_;
  std::unique_ptr<Router> own_;  // handle()'s table
};

}  // namespace ragform::server

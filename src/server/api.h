// The OpenAI-compatible API of `ragform serve`, independent of any HTTP library: a request is a
// method, a path, the Authorization header and a body; a response is a status, a JSON body, or a
// list of server-sent events for `stream: true`. Api::handle never throws — every failure becomes
// an OpenAI-style error object {"error": {"message", "type", "code"}} with its HTTP status.
//
// Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions,
// POST /v1/score {prompt, continuation} (ragform), POST /v1/attention {prompt, layers?,
// query_positions?, heads?} (ragform). See docs/server.md for the fields.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "server/engine.h"

namespace ragform::reader {
class NativeReader;
}

namespace ragform::server {

struct ApiOptions {
  std::string model_id;       // the served model's id (file name without .gguf, or --alias)
  std::string api_key;        // empty = no key required
  int max_prompt_tokens = 0;  // 0 = the context size
  int max_tokens = 512;       // upper bound of a request's max_tokens
  int n_ctx = 4096;
  std::string chat_template;  // a family name ("chatml", "llama3", ...) overriding the model's own
};

struct Request {
  std::string method, path;
  std::string authorization;  // the Authorization header ("Bearer KEY")
  std::string body;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  bool stream = false;
  std::vector<std::string> events;  // SSE payloads (without "data: "), sent when stream is true
};

// An error object as OpenAI/llama-server write it.
Response error_response(int status, const std::string& message, const std::string& type);

class Api {
 public:
  Api(reader::NativeReader& reader, Engine& engine, ApiOptions opt);
  Response handle(const Request& req) noexcept;

 private:
  Response dispatch(const Request& req);
  Response models();
  Response completions(const std::string& body);
  Response chat(const std::string& body);
  Response score(const std::string& body);
  Response attention(const std::string& body);
  reader::NativeReader& reader_;
  Engine& engine_;
  ApiOptions opt_;
  int chat_family_ = 0;  // tok::ChatFamily of the model's template (0 = none)
  long created_;
};

}  // namespace ragform::server

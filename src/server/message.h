// What the server's layers pass between them: an HTTP request as the API sees it and the reply it
// makes, with the OpenAI-style error object. The HTTP layer (http.h) and the route table
// (router.h) know these and nothing of the engine or the endpoints behind them (api.h).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ragform::server {

struct Request {
  std::string method, path;
  std::string authorization;  // the Authorization header ("Bearer KEY")
  std::string body;
  // A multipart/form-data body, which cpp-httplib takes apart into form fields (`body` is then
  // empty): the router refuses it as what it is (pass 16: "unexpected end of input").
  bool multipart = false;
};

// The refusal of a multipart/form-data body (the router's, and the HTTP layer's when the
// library could not read one).
inline constexpr const char* kMultipartRefusal =
    "the body is multipart (multipart/form-data, multipart/mixed, ...): the API takes a JSON "
    "object (Content-Type: application/json)";

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // more headers (a 405's Allow)
  bool stream = false;
  // When stream is true: runs on the HTTP thread once the headers are out, calls send with each
  // SSE payload (without "data: ") as soon as it is ready, and returns after the last one
  // ("[DONE]"). send returns false when the client has gone; the producer then returns at once and
  // the engine drops the generation.
  std::function<void(const std::function<bool(const std::string&)>& send)> producer;
  // What keeps the body's memory counted in the server's reply budget (reply_budget.h): released
  // once the HTTP layer has written the body out (or the client has gone). Null for most replies.
  std::shared_ptr<void> hold;
};

// Whether the client of the request this thread is handling has closed its connection, so a
// non-streamed handler's long loop (a log-prob listing of many prompts) stops instead of working
// on for nobody (issue 40, pass 16: minutes of scoring and the whole reply budget held after the
// client left). False where no HTTP layer watches (tests, the fuzzer, Api::handle in process).
bool client_gone();
// Installed by the HTTP layer on the connection's thread around a handler: `gone` answers
// client_gone() there until it is destroyed.
class ClientWatch {
 public:
  explicit ClientWatch(std::function<bool()> gone);
  ~ClientWatch();
  ClientWatch(const ClientWatch&) = delete;
  ClientWatch& operator=(const ClientWatch&) = delete;

 private:
  std::function<bool()> gone_;
  const std::function<bool()>* outer_;
};

// An error object as OpenAI/llama-server write it. `code` is always a string: the given one, or
// the status's own ("invalid_request" for 400, "request_too_large" for 413, ... error_code).
Response error_response(int status, const std::string& message, const std::string& type,
                        const std::string& code = "");
// The code of an error response with this status and no more specific code.
std::string error_code(int status);

}  // namespace ragform::server

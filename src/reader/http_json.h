// The small HTTP JSON client of the remote readers (OpenAIReader, RemoteEncoder): a base URL split
// into scheme://host:port and a path prefix, and POSTs of a JSON body with retries — exponential
// backoff (backoff_s * 2^(attempt-1)) after a connection error, a timeout, 408, 429 or 5xx; any
// other non-2xx answer fails at once with the server's message. (Readers over several servers
// spread their attempts with ServerPool, reader/server_pool.h.) An answer's body is read up to
// kMaxAnswerBytes: a longer one is refused, naming the limit, without reading the rest.
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace ragform::reader {

// Refuses an API key holding a control character (CR, LF, NUL, ...; issue 40, eighth pass: a key
// of "k\r\nX-Injected: 1" was sent as a second header line, and a NUL cut it short): UsageError
// keyed "api_key", never quoting the key. Every client that sends one checks it (reader and
// encoder constructors, and HttpJsonClient::send_once before each request).
void check_api_key(const std::string& key);

// A request that finally failed (after retries, or a non-retryable 4xx). what(): "<who>: <why>",
// `who` naming the client ("openai reader", "remote encoder").
class RequestFailed : public Error {
 public:
  RequestFailed(const std::string& why, int status, int attempts,
                const std::string& who = "openai reader")
      : Error(who, why), status_(status), attempts_(attempts) {}
  int status() const { return status_; }  // last HTTP status, 0 = no answer (connection/timeout)
  int attempts() const { return attempts_; }

 private:
  int status_, attempts_;
};

// The most bytes of one answer's body a remote reader or encoder reads (64 MiB, as much as
// `ragform serve` sends, server/api.h kMaxResponseBytes): a server that announces more
// (Content-Length) or sends more is refused at once (a 1.5 GB answer took 22 s and 3.6 GB before),
// and not retried (the same request asks for the same answer).
inline constexpr size_t kMaxAnswerBytes = size_t(64) << 20;

// One attempt's outcome: the status (0 = no answer: connection refused, timeout, reset), the
// body, and on failure the words of RequestFailed ("no answer from ...", "HTTP 503 from ...").
struct HttpAnswer {
  int status = 0;
  std::string body;        // as the server sent it: a failed answer's may quote the client's key
  std::string error;       // empty on 2xx; never holds the client's key (http_error_text)
  bool oversized = false;  // the body is over kMaxAnswerBytes (not read; `status` as answered)
  bool ok() const { return status >= 200 && status < 300 && !oversized; }
  // Worth another attempt (here or on another server): no answer, 408, 429 or 5xx; never an
  // oversized answer.
  bool transient() const {
    return !oversized && (status == 0 || status == 408 || status == 429 || status >= 500);
  }
};

// Whether an error answer's body says the prompt exceeds the server's context: error.code
// "context_length_exceeded" (OpenAI, ragform serve), error.type "exceed_context_size_error"
// (llama-server) or a message naming the "maximum context length" (vLLM). HttpJsonClient::post
// throws ContextOverflow (base/error.h) for such a 400.
bool is_context_overflow(const std::string& body);

// Throws what a final, non-transient error answer means: ContextOverflow for a 400 of
// is_context_overflow, else RequestFailed(a.error, a.status, attempts, who).
[[noreturn]] void throw_refusal(const HttpAnswer& a, int attempts,
                                const std::string& who = "openai reader");

struct HttpJsonOptions {
  std::string api_key;     // "Authorization: Bearer ..." when not empty
  int retries = 2;         // further attempts after the first
  double backoff_s = 0.5;  // first retry delay; doubles each time
  int timeout_s = 300;     // connect/read/write timeout of one attempt
};

// The longest wait before one retry: the doubling stops here (0.5 s x 2^16 was 9 hours, and 100
// retries against a closed port would have waited a month).
inline constexpr double kMaxRetryDelayS = 60;
// The wait before retry `n` (1 = the first): backoff_s x 2^(n-1), at most kMaxRetryDelayS.
double retry_delay_s(double backoff_s, int n);

class HttpJsonClient {
 public:
  // base_url: http(s)://host[:port][/prefix] (prefix default "/v1", trailing '/' dropped).
  // UsageError naming `who` for another scheme, https in a build without TLS, or a query string
  // or fragment ('?' or '#' after the userinfo: not quoted, it may hold a key); `who` also
  // begins the message of every RequestFailed. Every base URL of the remote readers and
  // encoders is checked here.
  HttpJsonClient(const std::string& base_url, const char* who);
  // POSTs `body` to prefix + endpoint ("/completions"); the answer's body on 2xx, else
  // RequestFailed (its message: the server's error.message when the answer has one).
  std::string post(const std::string& endpoint, const std::string& body,
                   const HttpJsonOptions& opt) const;
  // One attempt of a POST (`body` set) or a GET (`body` null) of prefix + endpoint: no retry.
  HttpAnswer send_once(const std::string& endpoint, const std::string* body,
                       const std::string& api_key, int timeout_s) const;
  const std::string& scheme_host_port() const { return scheme_host_port_; }
  const std::string& prefix() const { return prefix_; }
  const std::string& who() const { return who_; }

 private:
  std::string scheme_host_port_, prefix_, who_;
};

// The message of an error answer: {"error": {"message": ...}} or {"error": "..."}, else the
// body's first bytes (excerpt), with every occurrence of `secret` (the client's API key, which a
// server may echo: "bad key: Bearer KEY") replaced by "***" before the cut.
std::string http_error_text(const std::string& body, const std::string& secret = "");
// The answer parsed as JSON; RequestFailed("<what>: the server's answer is not JSON: ...") of
// client `who`.
nlohmann::json parse_json_answer(const std::string& body, const char* what,
                                 const std::string& who = "openai reader");

}  // namespace ragform::reader

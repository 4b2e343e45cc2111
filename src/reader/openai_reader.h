// OpenAIReader: the Reader over an OpenAI-compatible HTTP server (llama-server, vLLM, Ollama,
// hosted APIs, or `ragform serve`).
//   generate  — raw mode: POST {base}/completions {prompt}; chat mode: POST {base}/chat/completions
//               {messages: [system?, user]} (the server applies its chat template);
//   score     — on `ragform serve`: POST {base}/score {prompt, continuation} (the server's
//               NativeReader::score, token ids included); elsewhere POST {base}/completions
//               {prompt: [prompt, prompt + continuation], echo: true, logprobs: 0, max_tokens: 0}:
//               the echoed prompt log-probs (OpenAI legacy format, llama-server, vLLM); the tokens
//               past the longest common prefix of the two echoes are scored (NativeReader::score's
//               rule). A server that returns no prompt log-probs -> NotSupported "score is not
//               supported by this server";
//   attention — only on `ragform serve` (POST {base}/attention); any other server -> NotSupported
//               "attention is not supported by this server", without a request;
//   hidden    — always NotSupported.
// Which server it is: GET {base}/models once (on first need), a ragform server names "ragform" as
// `owned_by` of its model. A failed probe is not remembered (the next call asks again) and counts
// as "not ragform" for that call.
// Several servers (base_url "A,B,C"): one ServerPool (reader/server_pool.h) spreads the requests
// (fewest in flight), hands a failed one to another server and refuses a fleet whose servers do
// not serve the same model — the same ids, and the same weights: the same model sha256 where the
// servers report one (`ragform serve`), else the same greedy answer to kWeightsProbePrompt — when
// the reader opens. The run identity is the same for one server or many: describe() names the
// model, never a URL (servers() says where the answers came from).
// Transport: `concurrency` requests in flight per server (generate_batch runs that many per
// server); a request is retried on connection errors, timeouts, 408, 429 and 5xx — on another
// server at once, on the same one after exponential backoff (backoff_s * 2^round) — for `retries`
// further rounds. A request that still fails throws RequestFailed: pipelines catch it and store
// the item as *unmeasured* (never a wrong answer, never a NaN in a mean). Other 4xx answers are not
// retried and also throw RequestFailed (with the server's message).
// HTTPS needs a build with CPPHTTPLIB_OPENSSL_SUPPORT; plain HTTP always works.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/options.h"
#include "reader/http_json.h"
#include "reader/reader.h"
#include "reader/server_pool.h"

namespace ragform::reader {

// RequestFailed: reader/http_json.h.
// The most requests in flight per server, and over all servers of a comma list (concurrency x
// servers): each is a thread and a socket (10^6 opened 2,491 of each in one batch before the
// system refused). --concurrency and Python's concurrency= alike. A list naming one server twice
// is refused.
inline constexpr int kMaxConcurrency = 1024;

struct OpenAIOptions {
  // "http://127.0.0.1:8080" or ".../v1" (a missing path means /v1); several servers of one
  // model: a comma list "http://a:8080/v1,http://b:8080/v1".
  std::string base_url;
  std::string model;          // sent as "model"; empty = not sent (the server's own model)
  std::string api_key;        // "Authorization: Bearer ..." when not empty
  bool chat = false;          // chat/completions with the prompt as the user turn
  std::string system_prompt;  // chat mode only
  int concurrency = 4;        // requests in flight per server, 1..kMaxConcurrency
  int retries = 4;            // further attempts after the first
  double backoff_s = 0.5;     // first retry delay; doubles each time
  int timeout_s = 300;        // connect/read/write timeout of one attempt

  // The settings a user gives, declared once (base/options.h): the CLI's --concurrency, --retries
  // and --timeout (cli/remote_flags.cpp) and Python's OpenAIReader keywords of the same names;
  // the reader checks them (check_options) whichever front end built it.
  // base_url, model, api_key, chat and system are Python's positional parameters (the CLI spells
  // them with its reader flags: --base-url, -m, --api-key-env, --chat, --system).
  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"base_url", "", "URL",
                 "the server, e.g. http://127.0.0.1:8080/v1; several servers of one model: a "
                 "comma list"}
          .need()
          .first(),
      base_url);
    v(OptionDecl{"model", "", "NAME", "the model name sent to the server (empty: not sent)"}
          .empty_value()
          .first(),
      model);
    v(OptionDecl{"api_key", "", "KEY", "the server's API key (empty: none)"}.empty_value().first(),
      api_key);
    v(OptionDecl{"chat", "", "", "send the prompt as the user turn of chat/completions"}
          .flag_only()
          .first(),
      chat);
    v(OptionDecl{"system", "", "TEXT", "system message in chat mode"}.empty_value().first(),
      system_prompt);
    v(OptionDecl{"concurrency", "--concurrency", "N",
                 "requests in flight per server (openai reader)"}
          .count(1, kMaxConcurrency),
      concurrency);
    v(OptionDecl{"retries", "--retries", "N",
                 "retries on no answer/408/429/5xx, with exponential backoff (with several "
                 "servers: further rounds, each trying every server)"}
          .count(0, 100),
      retries);
    v(OptionDecl{"timeout", "--timeout", "SECONDS", "timeout of one HTTP request"}.count(
          1, 2147483647),
      timeout_s);
  }
};

// The weights probe of a fleet (server_pool.h): this prompt's greedy answer of this many tokens,
// asked as the reader asks (raw or chat, with -m and --system), compared across servers that
// report no model hash. Fixed: the same on every server and every run.
inline constexpr const char* kWeightsProbePrompt = "Once upon a time";
inline constexpr int kWeightsProbeTokens = 8;
// Sets po's probe_* for a reader with these options.
void set_weights_probe(const OpenAIOptions& o, PoolOptions& po);

class OpenAIReader : public Reader {
 public:
  explicit OpenAIReader(OpenAIOptions opt);
  // attention is true only for `ragform serve` (asks the server once, see above).
  Capabilities capabilities() const override { return {true, true, is_ragform_server(), false}; }
  // "openai:<model>": -m as given, else the one model the servers list (asked once); no URL, so
  // a study spread over any servers is one run.
  std::string describe() const override;
  std::string chat_mode() const override { return opt_.chat ? "server-template" : "raw"; }
  Generation generate(const std::string& prompt, const GenerateParams& p) override;
  std::vector<Generation> generate_batch(const std::vector<std::string>& prompts,
                                         const GenerateParams& p) override;
  ScoreResult score(const std::string& prompt, const std::string& continuation) override;
  AttentionResult attention(const std::string& prompt, const AttentionQuery& q) override;
  HiddenResult hidden(const std::string& prompt, int layer) override;
  int count_tokens(const std::string& prompt) override;

  // POSTs a JSON body to base path + `endpoint` ("/completions") with retries; returns the
  // response body. Throws RequestFailed.
  std::string post(const std::string& endpoint, const std::string& body) const;
  // Whether the server is `ragform serve` (GET {base}/models, owned_by "ragform"); cached.
  bool is_ragform_server() const;
  // The servers ("http://host:port/v1"), in the order given: the run's provenance, not identity.
  std::vector<std::string> servers() const { return pool_->names(); }
  // Requests each server answered, in servers() order.
  std::vector<int64_t> answered() const { return pool_->answered(); }

 private:
  OpenAIOptions opt_;
  std::unique_ptr<ServerPool> pool_;  // the servers of opt_.base_url
  mutable std::mutex probe_mu_;
  mutable std::optional<bool> ragform_;
  mutable std::string served_model_;  // describe() without -m: the servers' model, once known
  ScoreResult score_ragform(const std::string& prompt, const std::string& continuation);
};

}  // namespace ragform::reader

// ServerPool: the servers behind one remote reader (`--base-url A --base-url B,C`), all serving
// the same model, used as one.
//   Choice     — each request goes to the server with the fewest requests in flight from this
//                pool among those that answer, never more than `per_server` at once on a server
//                (the reader's --concurrency is per server); a caller waits for a free slot.
//   Failover   — no answer (connection refused, reset, timeout), 5xx, 408 or 429: the request is
//                tried on another server at once. A server that did not answer or answered 5xx is
//                "down": skipped while another server can take the request, tried again after
//                `recheck_s` (one probe at a time). Down and back up are one note line each. When
//                every server failed the request, a round of attempts is over: after the backoff
//                (backoff_s * 2^(round-1)) every server is tried again, up to `retries` further
//                rounds — with one server exactly HttpJsonClient::post's retry rule. Then the
//                request throws RequestFailed as with one server. Any other 4xx is the request's
//                own fault: RequestFailed at once, never tried elsewhere.
//   Same model — with several servers, each is asked GET {base}/models before its first request;
//                its list of (id, owned_by) must equal the first answering server's (the
//                reference). Then the weights: when both report their model file's SHA-256
//                (`ragform serve`: "ragform": {"model_sha256"} on the model object), the hashes
//                must be equal; otherwise (llama-server, vLLM, an older ragform serve) both are
//                sent the probe request (PoolOptions::probe_*: a fixed prompt's greedy answer of a
//                few tokens, once per server) and the answers must be equal. check_all() checks
//                every server at once and throws on a mismatch, naming both servers and whether the
//                hashes or the probe answers differ (a reader refuses a mixed fleet when it
//                opens); a server first reached later with another model or other weights is left
//                out of the pool with a note. A probe tells weights apart only when their greedy
//                answers differ (two quantizations of one model may answer alike).
// The endpoints are an interface so the choice and the failover are tested without a network.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/excerpt.h"
#include "reader/http_json.h"

namespace ragform::reader {

// One server as the pool sees it: one attempt of a request, no retries.
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  virtual std::string name() const = 0;  // "http://host:port/v1": notes and provenance
  // POST `body` (JSON) to the server's prefix + endpoint ("/completions").
  virtual HttpAnswer post(const std::string& endpoint, const std::string& body) const = 0;
  // GET prefix + endpoint ("/models").
  virtual HttpAnswer get(const std::string& endpoint) const = 0;
};

// An Endpoint over HTTP (HttpJsonClient::send_once).
class HttpEndpoint : public Endpoint {
 public:
  HttpEndpoint(const std::string& base_url, const char* who, std::string api_key, int timeout_s);
  // Without a URL's user:password@: names go to notes, messages and run provenance.
  std::string name() const override {
    return redact_url(http_.scheme_host_port() + http_.prefix());
  }
  HttpAnswer post(const std::string& endpoint, const std::string& body) const override;
  HttpAnswer get(const std::string& endpoint) const override;

 private:
  HttpJsonClient http_;
  std::string api_key_;
  int timeout_s_;
};

// "A,B , C" -> {"A", "B", "C"}: the URL list of a --base-url value (empty items dropped).
std::vector<std::string> split_url_list(const std::string& list);

struct PoolOptions {
  int per_server = 4;      // requests in flight on one server
  int retries = 4;         // further rounds after every server failed a request
  double backoff_s = 0.5;  // delay before the first further round; doubles each round
  double recheck_s = 5;    // a down server is tried again after this long
  // Where notes go ("ragform: note: ..." lines); default stderr.
  std::function<void(const std::string&)> note;
  // The weights probe of servers that report no model hash: POST probe_endpoint with probe_body,
  // once per server, and compare probe_answer(body) (e.g. the greedy text; it throws on an answer
  // of another shape). No probe_endpoint: such servers are compared by their model lists alone.
  std::string probe_endpoint;
  std::string probe_body;
  std::function<std::string(const std::string& body)> probe_answer;
};

class ServerPool {
 public:
  ServerPool(std::vector<std::unique_ptr<Endpoint>> servers, PoolOptions opt);
  size_t size() const { return servers_.size(); }
  std::vector<std::string> names() const;

  // The body of a 2xx answer to POST endpoint, by the rules above; RequestFailed otherwise.
  std::string post(const std::string& endpoint, const std::string& body);
  // An answer to GET /models for the reader's questions about the server (which software, which
  // model): a cached 2xx answer of a checked server, else the first server in order that
  // answers at all (a 429/5xx answer when none answers 2xx); nullopt when none answers.
  std::optional<HttpAnswer> models_answer();
  // With several servers: checks every unchecked one now (its /models, then its hash or the
  // probe). Notes the ones that do not answer (they are checked when first reached); Error naming
  // both servers and what differs (model lists, model sha256 or probe answers) on a mismatch;
  // RequestFailed on a 401/403 (the key is wrong for that server).
  void check_all();

  // Requests each server answered with 2xx (provenance: which server measured how much).
  std::vector<int64_t> answered() const;

 private:
  enum class Check { unchecked, same, refused };
  struct Server {
    std::unique_ptr<Endpoint> ep;
    int in_flight = 0;
    bool down = false;
    double retry_at = 0;  // seconds on the pool's clock: down servers are skipped until then
    Check check = Check::unchecked;
    std::optional<HttpAnswer> models;  // its 2xx /models answer
    std::string sha256;                // the model hash its /models reports ("" = none)
    std::optional<std::string> probe;  // its answer to the weights probe, once asked
    int64_t answered = 0;
  };
  // What checking one server found: it may serve, it differs (why), or it did not answer
  // (`failure`: it is down and checked again when next reached).
  struct Verdict {
    enum Kind { same, differs, no_answer } kind = same;
    std::string why;
    HttpAnswer failure;
    std::optional<HttpAnswer> models;
    std::string sha256;
  };
  // Checks server s: its /models, then its hash or the probe against the reference's. Requests
  // go out without the lock; throws RequestFailed on a 401/403.
  Verdict examine(int s);
  // Server s's probe answer (asked once, then cached); nullopt with `failure` when it gave none.
  std::optional<std::string> probe_of(int s, HttpAnswer& failure);
  // Applies a verdict to s (the lock held): true when s may serve.
  bool settle(int s, const Verdict& v);
  // A free server for a request that already tried `tried`, waiting for a slot when every
  // candidate is busy; -1 when every server was tried (or refused). `probe`: s was down.
  int acquire(const std::vector<bool>& tried, bool& probe);
  // Frees s's slot and learns from the answer (nullptr: no request went out); a 2xx answer to a
  // probe brings a down server back.
  void release(int s, const HttpAnswer* a, bool probe);
  // Runs the model check of server s when it is due; false when s must not take the request
  // (did not answer: `a` holds why; refused). Throws RequestFailed on a 4xx answer.
  bool checked(int s, HttpAnswer& a);
  // The check's verdict on one /models answer (the lock held): "" when the lists are equal (the
  // first server compared becomes the reference), else why not.
  std::string compare_models(int s, const HttpAnswer& a);
  void mark_down(int s, const HttpAnswer& a);  // the lock held
  void note(const std::string& line) const;
  double now() const;

  std::vector<Server> servers_;
  PoolOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int reference_ = -1;  // the server whose /models the others must match
};

// The list a /models answer names, "id (owned_by)" sorted: what "the same model" compares.
// Empty when the answer is not an OpenAI model list.
std::vector<std::string> served_models(const std::string& models_body);
// The model file hash a /models answer reports ("ragform": {"model_sha256": HEX} on each model
// object; several models: "id=HEX" joined by ", ", sorted); "" when none reports one.
std::string reported_sha256(const std::string& models_body);

}  // namespace ragform::reader

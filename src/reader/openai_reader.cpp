#include "reader/openai_reader.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "base/excerpt.h"
#include "base/json_error.h"
#include "base/json_file.h"
#include "engine/runtime/generate.h"
#include "reader/answer_check.h"
#include "reader/generate_params.h"
#include "store/sha256.h"

namespace ragform::reader {
namespace {

using nlohmann::json;

// A log-prob may round above 0 by this much (float32 log-softmax of a near-certain token).
constexpr double kLogprobSlack = 1e-4;
// An attention weight may round outside [0, 1] by this much, a row's sum away from 1 by this much
// (the bounds of py_reader.cpp's checks).
constexpr double kWeightSlack = 1e-4;
constexpr double kRowSumSlack = 1e-2;

// A server's answer read field by field. Every field a method uses is checked for its type and
// range where it is read, as py_reader.cpp checks a Python reader's answers: integers are JSON
// integers in range (never a float cut to an int, never 10^12 wrapped), log-probs finite and at
// most kLogprobSlack, attention weights finite in [0, 1] with every row summing to 1. A violation
// is RequestFailed (status 200, one attempt: pipelines store the item as unmeasured) naming the
// reader, the method, the field and the reader's base URL:
//   "openai reader: score: tokens[2].logprob: 3 is positive: not a log-probability (from
//   http://127.0.0.1:8080/v1)"
class Answer : public AnswerCheck {
 public:
  Answer(const std::string& from, const char* method)
      : AnswerCheck(from, method, "openai reader") {}

  // The answer's body as JSON.
  json parse(const std::string& body) const {
    try {
      return parse_json_text(body);
    } catch (const JsonTextError& e) {
      bad(std::string("the server's answer is not JSON: ") + e.what());
    }
  }
  // `j`'s member `key`; `path` names `j` ("" for the whole answer). Absent: an error, or nullptr
  // when `optional` (a null member counts as absent then).
  const json* member(const json& j, const std::string& path, const char* key,
                     bool optional = false) const {
    if (!j.is_object()) bad(name(path) + ": expected an object, got " + type_of(j));
    auto it = j.find(key);
    if (it == j.end() || (optional && it->is_null())) {
      if (optional) return nullptr;
      bad(name(path) + " has no '" + key + "'");
    }
    return &*it;
  }
  const json& at(const json& j, const std::string& path, const char* key) const {
    return *member(j, path, key);
  }
  const json& array(const json& v, const std::string& path) const {
    if (!v.is_array()) bad(path + ": expected a list, got " + type_of(v));
    return v;
  }
  double number(const json& v, const std::string& path) const {
    if (!v.is_number()) bad(path + ": expected a number, got " + type_of(v));
    const double d = v.get<double>();
    if (!std::isfinite(d)) bad(path + ": " + num(d) + " is not finite");
    return d;
  }
  // A log-prob: finite and at most 0 (within kLogprobSlack).
  double logprob(const json& v, const std::string& path) const {
    const double d = number(v, path);
    if (d > kLogprobSlack) bad(path + ": " + num(d) + " is positive: not a log-probability");
    return d;
  }
  // Log-probs' sum: finite (each may be, their sum not: -1e308 twice).
  void finite_sum(double sum, const std::string& what) const {
    if (!std::isfinite(sum)) bad(what + " sum to " + num(sum) + ", not a finite log-probability");
  }
  // Attention weights of one head (or the mean) for query position `qp`: qp + 1 of them
  // (keys 0..qp), finite, in [0, 1], summing to 1.
  std::vector<float> weights(const json& v, const std::string& path, int qp) const {
    array(v, path);
    if (v.size() != size_t(qp) + 1)
      bad(path + ": the row of query position " + std::to_string(qp) + " must be [" +
          std::to_string(qp) + " + 1] = " + std::to_string(qp + 1) + " long (keys 0.." +
          std::to_string(qp) + "), got " + std::to_string(v.size()));
    std::vector<float> out;
    out.reserve(v.size());
    double sum = 0;
    for (size_t k = 0; k < v.size(); ++k) {
      const double w = number(v[k], path + "[" + std::to_string(k) + "]");
      if (w < -kWeightSlack || w > 1 + kWeightSlack)
        bad(path + "[" + std::to_string(k) + "]: weight " + num(w) + " is outside [0, 1]");
      sum += w;
      out.push_back(float(w));
    }
    if (std::fabs(sum - 1.0) > kRowSumSlack)
      bad(path + ": weights sum to " + num(sum) +
          ", not 1 (a row is the softmax over keys 0..query position)");
    return out;
  }
  static std::string num(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }

 private:
  static std::string name(const std::string& path) { return path.empty() ? "the answer" : path; }
};

std::string sub(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string finish_reason(const Answer& a, const json& choice, const std::string& path,
                          const GenerateParams& p) {
  const json* f = a.member(choice, path, "finish_reason", true);
  const std::string r = f ? a.str(*f, path + ".finish_reason") : std::string();
  if (r == "length") return "length";
  // OpenAI's "stop" covers both an end-of-generation token and a stop string.
  return p.stop.empty() ? "eos" : "stop";
}

// The body of a generate request with these options (raw: POST /completions {prompt}; chat:
// POST /chat/completions {messages}), and its endpoint.
std::string generate_request(const OpenAIOptions& o, const std::string& prompt,
                             const GenerateParams& p, std::string& endpoint) {
  json req = {{"max_tokens", p.max_tokens},
              {"temperature", p.temperature},
              {"top_p", p.top_p},
              {"seed", p.seed},
              {"stream", false}};
  if (p.top_k > 0) req["top_k"] = p.top_k;
  if (!o.model.empty()) req["model"] = o.model;
  if (!p.stop.empty()) req["stop"] = p.stop;
  if (p.ignore_eos) req["ignore_eos"] = true;  // llama-server / vLLM extension
  if (o.chat) {
    json msgs = json::array();
    if (!o.system_prompt.empty())
      msgs.push_back({{"role", "system"}, {"content", o.system_prompt}});
    msgs.push_back({{"role", "user"}, {"content", prompt}});
    req["messages"] = msgs;
    endpoint = "/chat/completions";
  } else {
    req["prompt"] = prompt;
    endpoint = "/completions";
  }
  return req.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The choices of an answer to `n` prompts, by index: exactly n of them, each index (absent: 0) in
// 0..n-1 and given once, so that prompt i's is choices[i] whatever their order (a choice of
// another prompt, or a second one for this prompt, was taken as its answer). `at[i]`: where
// prompt i's choice stands in the answer's list, for messages.
struct Choices {
  std::vector<const json*> choices;
  std::vector<size_t> at;
};
Choices choices_by_index(const Answer& a, const json& j, size_t n) {
  const json& cs = a.array(a.at(j, "", "choices"), "choices");
  if (cs.empty()) a.bad("choices: an empty list");
  if (cs.size() != n)
    a.bad("choices: expected " + std::to_string(n) + " (one per prompt), got " +
          std::to_string(cs.size()));
  Choices c{std::vector<const json*>(n, nullptr), std::vector<size_t>(n, 0)};
  for (size_t i = 0; i < cs.size(); ++i) {
    const json* ix = a.member(cs[i], sub("choices", i), "index", true);
    const size_t idx =
        ix ? size_t(a.integer(*ix, sub("choices", i) + ".index", 0, (long long)cs.size() - 1))
           : size_t(0);
    if (c.choices[idx]) a.bad(sub("choices", i) + ".index " + std::to_string(idx) + " repeats");
    c.choices[idx] = &cs[i];
    c.at[idx] = i;
  }
  return c;
}

// The one choice of a generate answer (to one prompt), and its path in messages.
std::pair<const json*, std::string> the_choice(const Answer& a, const json& j) {
  const Choices c = choices_by_index(a, j, 1);
  return {c.choices[0], sub("choices", c.at[0])};
}

// The generated text of a generate answer.
std::string generated_text(const OpenAIOptions& o, const Answer& a, const json& j) {
  const auto [c, path] = the_choice(a, j);
  if (!o.chat) return a.str(a.at(*c, path, "text"), path + ".text");
  return a.str(a.at(a.at(*c, path, "message"), path + ".message", "content"),
               path + ".message.content");
}

// Where an answer came from, in messages: the reader's base URL, without credentials.
std::string who_of(const OpenAIOptions& o) { return excerpt(redact_urls_in(o.base_url)); }

}  // namespace

void set_weights_probe(const OpenAIOptions& o, PoolOptions& po) {
  GenerateParams p;  // greedy (temperature 0), seed 0
  p.max_tokens = kWeightsProbeTokens;
  po.probe_body = generate_request(o, kWeightsProbePrompt, p, po.probe_endpoint);
  po.probe_answer = [o](const std::string& body) {
    const std::string who = who_of(o);
    const Answer a(who, "weights probe");
    return generated_text(o, a, a.parse(body));
  };
}

namespace {

// The server a base URL names, as HttpJsonClient reads it: scheme and host in lower case, the
// scheme's port when none is given, the path prefix ("/v1" when there is none) without its
// trailing '/'; the userinfo left out (the same server whatever the credentials).
std::string server_identity(const std::string& url) {
  auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return url;  // refused by HttpJsonClient before this
  const std::string scheme = lower(url.substr(0, scheme_end));
  const size_t at = userinfo_end(url, scheme_end + 3);
  const size_t host_at = at == std::string::npos ? scheme_end + 3 : at + 1;
  const size_t slash = url.find('/', host_at);
  std::string host =
      lower(url.substr(host_at, slash == std::string::npos ? std::string::npos : slash - host_at));
  std::string port = scheme == "https" ? "443" : "80";
  const size_t colon = host.rfind(':');
  if (colon != std::string::npos && host.find(']', colon) == std::string::npos) {
    std::string given = host.substr(colon + 1);
    host.resize(colon);
    if (!given.empty()) {  // "host:" is the scheme's port; "08080" is 8080
      given.erase(0, std::min(given.find_first_not_of('0'), given.size() - 1));
      port = given;
    }
  }
  std::string path = slash == std::string::npos ? "/v1" : url.substr(slash);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return scheme + "://" + host + ":" + port + path;
}

// A comma list names each server once, with concurrency x servers requests in flight at
// most kMaxConcurrency (each a thread and a socket: 8 copies of one URL at --concurrency 1024
// opened 1,772 threads). OptionError naming base_url (--base-url) or concurrency; URLs quoted
// redacted.
void check_server_list(const OpenAIOptions& o, const std::vector<std::string>& urls) {
  std::vector<std::string> seen;
  for (const std::string& url : urls) {
    const std::string id = server_identity(url);
    if (std::find(seen.begin(), seen.end(), id) != seen.end())
      throw OptionError("base_url", "'" + excerpt(redact_url(url)) +
                                        "' names a server already in the list: give each "
                                        "server once (the concurrency is per server)");
    seen.push_back(id);
  }
  const int64_t total = int64_t(o.concurrency) * int64_t(urls.size());
  if (total > kMaxConcurrency)
    throw OptionError("concurrency",
                      std::to_string(o.concurrency) + " requests per server x " +
                          std::to_string(urls.size()) + " servers is " + std::to_string(total) +
                          " requests in flight, more than the limit of " +
                          std::to_string(kMaxConcurrency) + ": lower the concurrency (at most " +
                          std::to_string(kMaxConcurrency / int64_t(urls.size())) + " with " +
                          std::to_string(urls.size()) + " servers)");
}

std::unique_ptr<ServerPool> open_pool(const OpenAIOptions& o) {
  std::vector<std::unique_ptr<Endpoint>> eps;
  const std::vector<std::string> urls = split_url_list(o.base_url);
  for (const std::string& url : urls)
    eps.push_back(std::make_unique<HttpEndpoint>(url, "openai reader", o.api_key, o.timeout_s));
  if (eps.empty())
    throw UsageError("openai reader",
                     "base URL '" + excerpt(redact_url(o.base_url)) + "' names no server");
  check_server_list(o,
                    urls);  // each server once, the requests in flight bounded: before any request
  PoolOptions po;
  po.per_server = o.concurrency;
  po.retries = o.retries;
  po.backoff_s = o.backoff_s;
  set_weights_probe(o, po);
  return std::make_unique<ServerPool>(std::move(eps), po);
}

}  // namespace

OpenAIReader::OpenAIReader(OpenAIOptions opt) : opt_(std::move(opt)) {
  // The declared ranges (concurrency, retries, timeout), for every front end that builds a reader:
  // OptionError naming the key.
  check_options(opt_);
  check_api_key(opt_.api_key);
  pool_ = open_pool(opt_);
  // A fleet serving different models would mix them in one run: refused before any request.
  pool_->check_all();
}

std::string OpenAIReader::describe() const {
  // A system message is part of every chat prompt: runs under another never resume one another
  // (as NativeReader::describe).
  const std::string system = opt_.chat && !opt_.system_prompt.empty()
                                 ? "#system=" + store::sha256_hex(opt_.system_prompt).substr(0, 16)
                                 : "";
  if (!opt_.model.empty()) return "openai:" + opt_.model + system;
  std::lock_guard<std::mutex> lock(probe_mu_);
  if (served_model_.empty()) {
    // The server's own model: named by its list when the list holds one model.
    if (auto a = pool_->models_answer(); a && a->ok()) {
      json j = parse_json_or_discarded(a->body);
      if (j.is_object() && j.contains("data") && j["data"].is_array() && j["data"].size() == 1 &&
          j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string())
        served_model_ = j["data"][0]["id"].get<std::string>();
    }
  }
  return "openai:" + served_model_ + system;
}

std::string OpenAIReader::post(const std::string& endpoint, const std::string& body) const {
  return pool_->post(endpoint, body);
}

bool OpenAIReader::is_ragform_server() const {
  std::lock_guard<std::mutex> lock(probe_mu_);
  if (ragform_) return *ragform_;
  auto res = pool_->models_answer();
  if (!res) return false;  // no answer: not remembered, the next call asks again
  bool ragform = false;
  if (res->ok()) {
    json j = parse_json_or_discarded(res->body);
    // Anything but an OpenAI model list: some other server.
    if (!j.is_discarded() && j.is_object() && j.contains("data") && j["data"].is_array())
      for (const auto& m : j["data"])
        if (m.is_object() && m.contains("owned_by") && m["owned_by"] == "ragform") ragform = true;
  }
  if (res->status == 429 || res->status >= 500) return ragform;  // transient: ask again later
  ragform_ = ragform;
  return ragform;
}

namespace {
// Steering changes the attention inside the model, which a server's API does not reach: refuse
// rather than answer unsteered.
void refuse_steering(const SteeringParams& s) {
  if (s.active())
    throw NotSupported("openai reader",
                       "attention steering (" + s.describe() +
                           ") needs the native engine (-m MODEL.gguf); an OpenAI-compatible "
                           "server cannot steer its attention");
}
}  // namespace

Generation OpenAIReader::generate(const std::string& prompt, const GenerateParams& p) {
  refuse_steering(steering);
  std::string endpoint;
  const std::string body = generate_request(opt_, prompt, p, endpoint);
  const std::string who = who_of(opt_);
  const Answer a(who, "generate");
  const json j = a.parse(post(endpoint, body));
  Generation g;
  g.text = generated_text(opt_, a, j);
  const auto [choice, path] = the_choice(a, j);
  g.finish_reason = finish_reason(a, *choice, path, p);
  // The OpenAI API has no such rule: the server generated on (max_tokens) and the cut is here.
  cut_after_line(g, p);
  if (const json* u = a.member(j, "", "usage", true))
    if (const json* n = a.member(*u, "usage", "prompt_tokens", true))
      g.prompt_tokens = a.count(*n, "usage.prompt_tokens");
  return g;
}

std::vector<Generation> OpenAIReader::generate_batch(const std::vector<std::string>& prompts,
                                                     const GenerateParams& p) {
  refuse_steering(steering);
  if (!p.seeds.empty() && p.seeds.size() != prompts.size())
    throw Error("generate", "one seed per prompt expected");
  std::vector<Generation> out(prompts.size());
  std::vector<std::exception_ptr> errs(prompts.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < prompts.size();) {
      try {
        // Each request carries its prompt's seed, as the native reader samples it.
        GenerateParams one = p;
        one.seeds.clear();
        one.seed = p.seeds.empty() ? p.seed + i : p.seeds[i];
        out[i] = generate(prompts[i], one);
      } catch (...) {
        errs[i] = std::current_exception();
      }
    }
  };
  // --concurrency is per server: the pool keeps each server at that many requests in flight.
  size_t n = std::min<size_t>(size_t(opt_.concurrency) * pool_->size(), prompts.size());
  std::vector<std::thread> threads;
  for (size_t t = 1; t < n; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  for (auto& e : errs)
    if (e) std::rethrow_exception(e);
  return out;
}

namespace {
struct Echo {
  std::vector<std::string> tokens;
  std::vector<json> logprobs;
};

// The echoed tokens of choice `path` (choices[i]): strings, as many as their log-probs.
Echo echo_of(const Answer& a, const json& choice, const std::string& path) {
  Echo e;
  if (!choice.is_object() || !choice.contains("logprobs") || !choice["logprobs"].is_object() ||
      !choice["logprobs"].contains("token_logprobs") || !choice["logprobs"].contains("tokens"))
    throw NotSupported("openai reader",
                       "score is not supported by this server (its /completions answer has no "
                       "echoed prompt log-probs)");
  const std::string tp = path + ".logprobs.tokens", lp = path + ".logprobs.token_logprobs";
  const json& toks = a.array(choice["logprobs"]["tokens"], tp);
  const json& lps = a.array(choice["logprobs"]["token_logprobs"], lp);
  for (size_t i = 0; i < toks.size(); ++i) e.tokens.push_back(a.str(toks[i], sub(tp, i)));
  for (const auto& v : lps) e.logprobs.push_back(v);
  if (e.tokens.size() != e.logprobs.size())
    a.bad(tp + " and token_logprobs differ in length (" + std::to_string(e.tokens.size()) +
          " and " + std::to_string(e.logprobs.size()) + ")");
  return e;
}
}  // namespace

ScoreResult OpenAIReader::score(const std::string& prompt, const std::string& continuation) {
  refuse_steering(steering);
  if (opt_.chat)
    throw NotSupported("openai reader", "score is not supported in chat mode (it scores raw text)");
  if (is_ragform_server()) return score_ragform(prompt, continuation);
  json prompts =
      continuation.empty() ? json::array({prompt}) : json::array({prompt, prompt + continuation});
  json req = {{"prompt", prompts},
              {"max_tokens", 0},
              {"echo", true},
              {"logprobs", 0},
              {"temperature", 0.0}};
  if (!opt_.model.empty()) req["model"] = opt_.model;
  std::string body;
  try {
    body = post("/completions", req.dump(-1, ' ', false, json::error_handler_t::replace));
  } catch (const RequestFailed& e) {
    if (e.status() == 400 || e.status() == 404 || e.status() == 422)
      throw NotSupported("openai reader",
                         std::string("score is not supported by this server: ") + e.what());
    throw;
  }
  const std::string who = who_of(opt_);
  const Answer a(who, "score");
  const json j = a.parse(body);
  const auto [choices, at] = choices_by_index(a, j, prompts.size());
  Echo head = echo_of(a, *choices[0], sub("choices", at[0]));
  const size_t last = continuation.empty() ? 0 : 1;
  Echo all = continuation.empty() ? head : echo_of(a, *choices[1], sub("choices", at[1]));
  size_t split = 1;
  if (!continuation.empty()) {
    split = 0;
    while (split < head.tokens.size() && split < all.tokens.size() &&
           head.tokens[split] == all.tokens[split])
      ++split;
    if (split == 0) split = 1;
    if (split >= all.tokens.size()) throw Error("score", "the continuation adds no tokens");
  } else if (all.tokens.empty()) {
    throw Error("score", "empty prompt");
  }
  ScoreResult r;
  r.prompt_tokens = int(std::min<size_t>(split, size_t(INT_MAX)));
  const std::string lp = sub("choices", at[last]) + ".logprobs.token_logprobs";
  for (size_t t = split; t < all.tokens.size(); ++t) {
    if (all.logprobs[t].is_null())
      a.bad(sub(lp, t) + ": token " + std::to_string(t) + " has no log-prob");
    TokenLogprob tl;
    tl.piece = all.tokens[t];
    tl.logprob = a.logprob(all.logprobs[t], sub(lp, t));
    r.sum += tl.logprob;
    r.tokens.push_back(std::move(tl));
  }
  a.finite_sum(r.sum, lp);
  return r;
}

ScoreResult OpenAIReader::score_ragform(const std::string& prompt,
                                        const std::string& continuation) {
  json req = {{"prompt", prompt}, {"continuation", continuation}};
  if (!opt_.model.empty()) req["model"] = opt_.model;
  const std::string who = who_of(opt_);
  const Answer a(who, "score");
  const json j = a.parse(post("/score", req.dump(-1, ' ', false, json::error_handler_t::replace)));
  ScoreResult r;
  r.prompt_tokens = a.count(a.at(j, "", "prompt_tokens"), "prompt_tokens");
  const json& toks = a.array(a.at(j, "", "tokens"), "tokens");
  double total = 0;
  for (size_t i = 0; i < toks.size(); ++i) {
    const std::string at = sub("tokens", i);
    TokenLogprob tl;
    tl.id = int32_t(a.integer(a.at(toks[i], at, "id"), at + ".id", 0, INT32_MAX));
    tl.piece = a.str(a.at(toks[i], at, "piece"), at + ".piece");
    tl.logprob = a.logprob(a.at(toks[i], at, "logprob"), at + ".logprob");
    total += tl.logprob;
    r.tokens.push_back(std::move(tl));
  }
  a.finite_sum(total, "tokens' log-probs");
  r.sum = a.logprob(a.at(j, "", "sum"), "sum");
  if (std::fabs(r.sum - total) > 1e-4 * std::max(1.0, std::fabs(total)))
    a.bad("sum " + Answer::num(r.sum) + " is not the sum of the tokens' log-probs (" +
          Answer::num(total) + ")");
  return r;
}

AttentionResult OpenAIReader::attention(const std::string& prompt, const AttentionQuery& q) {
  refuse_steering(steering);
  if (opt_.chat) throw NotSupported("openai reader", "attention is not supported in chat mode");
  if (!is_ragform_server())
    throw NotSupported("openai reader",
                       "attention is not supported by this server (only ragform serve has "
                       "/v1/attention; its /models does not name ragform as owner)");
  // An empty list is the default here and is left out: the server refuses an empty one.
  json req = {{"prompt", prompt}};
  if (!q.layers.empty()) req["layers"] = q.layers;
  if (!q.query_positions.empty()) req["query_positions"] = q.query_positions;
  if (!q.heads.empty()) req["heads"] = q.heads;
  if (!opt_.model.empty()) req["model"] = opt_.model;
  std::string body;
  try {
    body = post("/attention", req.dump(-1, ' ', false, json::error_handler_t::replace));
  } catch (const RequestFailed& e) {
    if (e.status() == 404 || e.status() == 405)
      throw NotSupported(
          "openai reader",
          "attention is not supported by this server (only ragform serve has /v1/attention)");
    throw;
  }
  const std::string who = who_of(opt_);
  const Answer a(who, "attention");
  const json j = a.parse(body);
  AttentionResult r;
  const json& ids = a.array(a.at(j, "", "ids"), "ids");
  for (size_t i = 0; i < ids.size(); ++i)
    r.ids.push_back(int32_t(a.integer(ids[i], sub("ids", i), 0, INT32_MAX)));
  const json& pieces = a.array(a.at(j, "", "pieces"), "pieces");
  for (size_t i = 0; i < pieces.size(); ++i) r.pieces.push_back(a.str(pieces[i], sub("pieces", i)));
  if (r.ids.empty()) a.bad("ids: no tokens");
  if (r.pieces.size() != r.ids.size())
    a.bad("pieces: " + std::to_string(r.pieces.size()) + " for " + std::to_string(r.ids.size()) +
          " ids");
  const long long n_tokens = (long long)r.ids.size();
  // The asked positions, resolved against the prompt's tokens as the native reader does.
  std::vector<long long> positions;
  for (int p : q.query_positions.empty() ? std::vector<int>{-1} : q.query_positions) {
    const long long at = p < 0 ? n_tokens + p : p;
    if (at < 0 || at >= n_tokens)
      a.bad("asked for query position " + std::to_string(p) + ", outside the " +
            std::to_string(n_tokens) + " tokens of ids, and got rows");
    positions.push_back(at);
  }
  const bool layers_known = !q.layers.empty() && std::all_of(q.layers.begin(), q.layers.end(),
                                                             [](int l) { return l >= 0; });
  const size_t want = std::max<size_t>(1, q.layers.size()) * positions.size();
  const json& rows = a.array(a.at(j, "", "rows"), "rows");
  if (rows.size() != want)
    a.bad("rows: expected " + std::to_string(want) + " (layers x query_positions), got " +
          std::to_string(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string at = sub("rows", i);
    AttentionRows row;
    row.layer = int(a.integer(a.at(rows[i], at, "layer"), at + ".layer", 0, INT_MAX));
    if (layers_known && std::find(q.layers.begin(), q.layers.end(), row.layer) == q.layers.end())
      a.bad(at + ".layer: layer " + std::to_string(row.layer) + " was not asked for");
    row.query_position = int(
        a.integer(a.at(rows[i], at, "query_position"), at + ".query_position", 0, n_tokens - 1));
    if (std::find(positions.begin(), positions.end(), row.query_position) == positions.end())
      a.bad(at + ".query_position: position " + std::to_string(row.query_position) +
            " was not asked for");
    const json& hids = a.array(a.at(rows[i], at, "head_ids"), at + ".head_ids");
    for (size_t h = 0; h < hids.size(); ++h)
      row.head_ids.push_back(int(a.integer(hids[h], sub(at + ".head_ids", h), 0, INT_MAX)));
    if (row.head_ids.empty()) a.bad(at + ".head_ids: no heads");
    if (!q.heads.empty() && row.head_ids != q.heads)
      a.bad(at + ".head_ids: not the heads asked for");
    const json& heads = a.array(a.at(rows[i], at, "heads"), at + ".heads");
    if (heads.size() != row.head_ids.size())
      a.bad(at + ".heads: " + std::to_string(heads.size()) + " rows for " +
            std::to_string(row.head_ids.size()) + " head_ids");
    for (size_t h = 0; h < heads.size(); ++h)
      row.heads.push_back(a.weights(heads[h], sub(at + ".heads", h), row.query_position));
    row.mean = a.weights(a.at(rows[i], at, "mean"), at + ".mean", row.query_position);
    r.rows.push_back(std::move(row));
  }
  return r;
}

HiddenResult OpenAIReader::hidden(const std::string&, int) {
  throw NotSupported("openai reader",
                     "hidden states are not supported by an OpenAI-compatible server");
}

int OpenAIReader::count_tokens(const std::string& prompt) {
  json req = {{"prompt", prompt}, {"max_tokens", 0}, {"echo", true}, {"temperature", 0.0}};
  if (!opt_.model.empty()) req["model"] = opt_.model;
  const std::string who = who_of(opt_);
  const Answer a(who, "count_tokens");
  const json j =
      a.parse(post("/completions", req.dump(-1, ' ', false, json::error_handler_t::replace)));
  const json* u = a.member(j, "", "usage", true);
  const json* n = u && u->is_object() ? a.member(*u, "usage", "prompt_tokens", true) : nullptr;
  if (!n)
    throw NotSupported("openai reader",
                       "count_tokens is not supported by this server (no usage.prompt_tokens)");
  return a.count(*n, "usage.prompt_tokens");
}

}  // namespace ragform::reader

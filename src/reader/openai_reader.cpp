#include "reader/openai_reader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/excerpt.h"
#include "base/json_error.h"
#include "base/json_file.h"

namespace ragform::reader {
namespace {

using nlohmann::json;

json parse(const std::string& body, const char* what) { return parse_json_answer(body, what); }

std::string finish_reason(const json& choice, const GenerateParams& p) {
  std::string r = choice.value("finish_reason", std::string());
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

// The generated text of a generate answer (json::exception when it has another shape).
std::string generated_text(const OpenAIOptions& o, const json& j) {
  const json& c = j.at("choices").at(0);
  return o.chat ? c.at("message").at("content").get<std::string>()
                : c.at("text").get<std::string>();
}

}  // namespace

void set_weights_probe(const OpenAIOptions& o, PoolOptions& po) {
  GenerateParams p;  // greedy (temperature 0), seed 0
  p.max_tokens = kWeightsProbeTokens;
  po.probe_body = generate_request(o, kWeightsProbePrompt, p, po.probe_endpoint);
  po.probe_answer = [o](const std::string& body) {
    try {
      return generated_text(o, parse_json_answer(body, "weights probe"));
    } catch (const json::exception& e) {
      throw Error("weights probe", json_error_text(e.what()));
    }
  };
}

namespace {

std::unique_ptr<ServerPool> open_pool(const OpenAIOptions& o) {
  std::vector<std::unique_ptr<Endpoint>> eps;
  for (const std::string& url : split_url_list(o.base_url))
    eps.push_back(std::make_unique<HttpEndpoint>(url, "openai reader", o.api_key, o.timeout_s));
  if (eps.empty())
    throw UsageError("openai reader",
                     "base URL '" + redact_url(excerpt(o.base_url)) + "' names no server");
  PoolOptions po;
  po.per_server = o.concurrency;
  po.retries = o.retries;
  po.backoff_s = o.backoff_s;
  set_weights_probe(o, po);
  return std::make_unique<ServerPool>(std::move(eps), po);
}

}  // namespace

OpenAIReader::OpenAIReader(OpenAIOptions opt) : opt_(std::move(opt)) {
  if (opt_.concurrency < 1) opt_.concurrency = 1;
  // The CLI's range check (--concurrency), for every front end that builds a reader.
  if (opt_.concurrency > kMaxConcurrency)
    throw UsageError("concurrency", "value too large: " + std::to_string(opt_.concurrency) +
                                        " (largest accepted: " + std::to_string(kMaxConcurrency) +
                                        ")");
  if (opt_.retries < 0) opt_.retries = 0;
  pool_ = open_pool(opt_);
  // A fleet serving different models would mix them in one run: refused before any request.
  pool_->check_all();
}

std::string OpenAIReader::describe() const {
  if (!opt_.model.empty()) return "openai:" + opt_.model;
  std::lock_guard<std::mutex> lock(probe_mu_);
  if (served_model_.empty()) {
    // The server's own model: named by its list when the list holds one model.
    if (auto a = pool_->models_answer(); a && a->ok()) {
      json j = parse_json_or_discarded(a->body);
      if (j.is_object() && j.contains("data") && j["data"].is_array() && j["data"].size() == 1 &&
          j["data"][0].is_object())
        served_model_ = j["data"][0].value("id", std::string());
    }
  }
  return "openai:" + served_model_;
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
        if (m.is_object() && m.value("owned_by", std::string()) == "ragform") ragform = true;
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
                       "attention steering (--steer " + s.describe() +
                           ") needs the native engine (-m MODEL.gguf); an OpenAI-compatible "
                           "server cannot steer its attention");
}
}  // namespace

Generation OpenAIReader::generate(const std::string& prompt, const GenerateParams& p) {
  refuse_steering(steering);
  std::string endpoint;
  const std::string body = generate_request(opt_, prompt, p, endpoint);
  json j = parse(post(endpoint, body), "generate");
  try {
    const json& c = j.at("choices").at(0);
    Generation g;
    g.text = generated_text(opt_, j);
    g.finish_reason = finish_reason(c, p);
    if (j.contains("usage") && j["usage"].is_object())
      g.prompt_tokens = j["usage"].value("prompt_tokens", 0);
    return g;
  } catch (const json::exception& e) {
    throw RequestFailed(
        std::string("generate: unexpected answer (") + json_error_text(e.what()) + ")", 200, 1);
  }
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

Echo echo_of(const json& choice) {
  Echo e;
  if (!choice.contains("logprobs") || !choice["logprobs"].is_object() ||
      !choice["logprobs"].contains("token_logprobs") || !choice["logprobs"].contains("tokens"))
    throw NotSupported("openai reader",
                       "score is not supported by this server (its /completions answer has no "
                       "echoed prompt log-probs)");
  for (auto& t : choice["logprobs"]["tokens"]) e.tokens.push_back(t.get<std::string>());
  for (auto& v : choice["logprobs"]["token_logprobs"]) e.logprobs.push_back(v);
  if (e.tokens.size() != e.logprobs.size())
    throw RequestFailed("score: tokens and token_logprobs differ in length", 200, 1);
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
  json j = parse(body, "score");
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].size() != prompts.size())
    throw RequestFailed("score: expected " + std::to_string(prompts.size()) + " choices", 200, 1);
  std::vector<json> choices(prompts.size());
  for (auto& c : j["choices"]) {
    size_t idx = c.value("index", size_t(0));
    if (idx >= choices.size()) throw RequestFailed("score: choice index out of range", 200, 1);
    choices[idx] = c;
  }
  Echo head = echo_of(choices[0]);
  Echo all = continuation.empty() ? head : echo_of(choices[1]);
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
  r.prompt_tokens = int(split);
  for (size_t t = split; t < all.tokens.size(); ++t) {
    if (!all.logprobs[t].is_number())
      throw RequestFailed("score: token " + std::to_string(t) + " has no log-prob", 200, 1);
    TokenLogprob tl;
    tl.piece = all.tokens[t];
    tl.logprob = all.logprobs[t].get<double>();
    r.sum += tl.logprob;
    r.tokens.push_back(std::move(tl));
  }
  return r;
}

ScoreResult OpenAIReader::score_ragform(const std::string& prompt,
                                        const std::string& continuation) {
  json req = {{"prompt", prompt}, {"continuation", continuation}};
  if (!opt_.model.empty()) req["model"] = opt_.model;
  json j = parse(post("/score", req.dump(-1, ' ', false, json::error_handler_t::replace)), "score");
  try {
    ScoreResult r;
    r.prompt_tokens = j.at("prompt_tokens").get<int>();
    for (const auto& t : j.at("tokens")) {
      TokenLogprob tl;
      tl.id = t.at("id").get<int32_t>();
      tl.piece = t.at("piece").get<std::string>();
      tl.logprob = t.at("logprob").get<double>();
      r.tokens.push_back(std::move(tl));
    }
    r.sum = j.at("sum").get<double>();
    return r;
  } catch (const json::exception& e) {
    throw RequestFailed(
        std::string("score: unexpected answer from /score (") + json_error_text(e.what()) + ")",
        200, 1);
  }
}

AttentionResult OpenAIReader::attention(const std::string& prompt, const AttentionQuery& q) {
  refuse_steering(steering);
  if (opt_.chat) throw NotSupported("openai reader", "attention is not supported in chat mode");
  if (!is_ragform_server())
    throw NotSupported("openai reader",
                       "attention is not supported by this server (only ragform serve has "
                       "/v1/attention; its /models does not name ragform as owner)");
  json req = {{"prompt", prompt},
              {"layers", q.layers},
              {"query_positions", q.query_positions},
              {"heads", q.heads}};
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
  json j = parse(body, "attention");
  try {
    AttentionResult r;
    r.ids = j.at("ids").get<std::vector<int32_t>>();
    r.pieces = j.at("pieces").get<std::vector<std::string>>();
    for (auto& row : j.at("rows")) {
      AttentionRows a;
      a.layer = row.at("layer").get<int>();
      a.query_position = row.at("query_position").get<int>();
      a.head_ids = row.at("head_ids").get<std::vector<int>>();
      a.heads = row.at("heads").get<std::vector<std::vector<float>>>();
      a.mean = row.at("mean").get<std::vector<float>>();
      r.rows.push_back(std::move(a));
    }
    return r;
  } catch (const json::exception& e) {
    throw RequestFailed(
        std::string("attention: unexpected answer (") + json_error_text(e.what()) + ")", 200, 1);
  }
}

HiddenResult OpenAIReader::hidden(const std::string&, int) {
  throw NotSupported("openai reader",
                     "hidden states are not supported by an OpenAI-compatible server");
}

int OpenAIReader::count_tokens(const std::string& prompt) {
  json req = {{"prompt", prompt}, {"max_tokens", 0}, {"echo", true}, {"temperature", 0.0}};
  if (!opt_.model.empty()) req["model"] = opt_.model;
  json j = parse(post("/completions", req.dump(-1, ' ', false, json::error_handler_t::replace)),
                 "count_tokens");
  if (!j.contains("usage") || !j["usage"].is_object() || !j["usage"].contains("prompt_tokens"))
    throw NotSupported("openai reader",
                       "count_tokens is not supported by this server (no usage.prompt_tokens)");
  return j["usage"]["prompt_tokens"].get<int>();
}

}  // namespace ragform::reader

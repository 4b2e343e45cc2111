#include "reader/remote_encoder.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace ragform::reader {
namespace {
using nlohmann::json;

std::string error_text(const std::string& body) {
  try {
    auto j = json::parse(body);
    if (j.contains("error")) {
      const auto& e = j["error"];
      if (e.is_object() && e.contains("message") && e["message"].is_string())
        return e["message"].get<std::string>();
      if (e.is_string()) return e.get<std::string>();
    }
  } catch (...) {
  }
  return body.substr(0, 300);
}

json parse_answer(const std::string& body, const char* what) {
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    throw RequestFailed(std::string(what) + ": the server's answer is not JSON: " + e.what(), 200,
                        1);
  }
}

std::vector<float> floats(const json& j, const char* what) {
  if (!j.is_array())
    throw RequestFailed(std::string(what) + ": expected an array of numbers", 200, 1);
  std::vector<float> v;
  v.reserve(j.size());
  for (const auto& x : j) {
    if (!x.is_number())
      throw RequestFailed(std::string(what) + ": expected an array of numbers", 200, 1);
    v.push_back(x.get<float>());
  }
  return v;
}
}  // namespace

RemoteEncoder::RemoteEncoder(RemoteEncoderOptions opt) : opt_(std::move(opt)) {
  const std::string& u = opt_.base_url;
  const size_t scheme_end = u.find("://");
  if (scheme_end == std::string::npos ||
      (u.compare(0, scheme_end, "http") != 0 && u.compare(0, scheme_end, "https") != 0))
    throw UsageError("remote encoder", "base URL '" + u + "' must start with http:// or https://");
  const size_t path = u.find('/', scheme_end + 3);
  scheme_host_port_ = u.substr(0, path);
  prefix_ = path == std::string::npos ? "/v1" : u.substr(path);
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
  if (opt_.batch < 1) opt_.batch = 1;
  if (opt_.retries < 0) opt_.retries = 0;
}

std::string RemoteEncoder::describe() const {
  return "remote:" + scheme_host_port_ + prefix_ + "#" + opt_.model;
}

std::string RemoteEncoder::post(const std::string& endpoint, const std::string& body) const {
  httplib::Headers headers;
  if (!opt_.api_key.empty()) headers.emplace("Authorization", "Bearer " + opt_.api_key);
  std::string last = "no attempt";
  int status = 0;
  for (int attempt = 0; attempt <= opt_.retries; ++attempt) {
    if (attempt > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(
          int64_t(opt_.backoff_s * 1000 * double(1 << std::min(attempt - 1, 16)))));
    httplib::Client cli(scheme_host_port_);
    cli.set_connection_timeout(opt_.timeout_s, 0);
    cli.set_read_timeout(opt_.timeout_s, 0);
    cli.set_write_timeout(opt_.timeout_s, 0);
    auto res = cli.Post(prefix_ + endpoint, headers, body, "application/json");
    if (!res) {
      status = 0;
      last = "no answer from " + scheme_host_port_ + prefix_ + endpoint + " (" +
             httplib::to_string(res.error()) + ")";
      continue;
    }
    status = res->status;
    if (status >= 200 && status < 300) return res->body;
    last = "HTTP " + std::to_string(status) + " from " + prefix_ + endpoint + ": " +
           error_text(res->body);
    if (status == 429 || status >= 500) continue;
    throw RequestFailed(last, status, attempt + 1);
  }
  throw RequestFailed(last + " (after " + std::to_string(opt_.retries + 1) + " attempts)", status,
                      opt_.retries + 1);
}

std::vector<Embedding> RemoteEncoder::embed(const std::vector<std::string>& texts,
                                            std::optional<Pooling> pooling, bool normalize) {
  std::vector<Embedding> out;
  out.reserve(texts.size());
  for (size_t b = 0; b < texts.size(); b += size_t(opt_.batch)) {
    const size_t e = std::min(texts.size(), b + size_t(opt_.batch));
    json req = {{"input", std::vector<std::string>(texts.begin() + std::ptrdiff_t(b),
                                                   texts.begin() + std::ptrdiff_t(e))},
                {"encoding_format", "float"},
                {"normalize", normalize}};
    if (!opt_.model.empty()) req["model"] = opt_.model;
    if (pooling) req["pooling"] = model::pooling_name(*pooling);
    const json ans = parse_answer(post("/embeddings", req.dump()), "embeddings");
    if (!ans.contains("data") || !ans["data"].is_array() || ans["data"].size() != e - b)
      throw RequestFailed("embeddings: expected " + std::to_string(e - b) + " items in 'data'", 200,
                          1);
    std::vector<Embedding> part(e - b);
    for (const auto& d : ans["data"]) {
      const size_t idx = d.value("index", size_t(0));
      if (idx >= part.size() || !d.contains("embedding"))
        throw RequestFailed("embeddings: bad item in 'data'", 200, 1);
      Embedding& em = part[idx];
      const json& v = d["embedding"];
      em.n_tokens = d.value("n_tokens", 0);
      em.truncated = d.value("truncated", false);
      if (pooling && *pooling == Pooling::None) {
        if (!v.is_array() || v.empty() || !v[0].is_array())
          throw NotSupported("remote encoder",
                             "the server returned one vector per text: per-token embeddings "
                             "(pooling none) are not supported by this server");
        for (const auto& row : v) {
          std::vector<float> r = floats(row, "embeddings");
          em.n_embd = int(r.size());
          em.token_vectors.insert(em.token_vectors.end(), r.begin(), r.end());
        }
        em.n_tokens = int(v.size());
        if (d.contains("pieces") && d["pieces"].is_array())
          em.pieces = d["pieces"].get<std::vector<std::string>>();
      } else {
        em.vector = floats(v, "embeddings");
        em.n_embd = int(em.vector.size());
      }
    }
    for (auto& p : part) out.push_back(std::move(p));
  }
  return out;
}

std::vector<Classification> RemoteEncoder::classify(const std::vector<TextPair>& pairs) {
  std::vector<Classification> out;
  out.reserve(pairs.size());
  for (const TextPair& pr : pairs) {
    if (!pr.b)
      throw NotSupported("remote encoder",
                         "a remote encoder classifies text pairs only (/v1/rerank scores a query "
                         "against documents)");
    json req = {{"query", pr.a}, {"documents", {*pr.b}}, {"top_n", 1}};
    if (!opt_.model.empty()) req["model"] = opt_.model;
    const json ans = parse_answer(post("/rerank", req.dump()), "rerank");
    if (!ans.contains("results") || !ans["results"].is_array() || ans["results"].empty())
      throw RequestFailed("rerank: no 'results' in the answer", 200, 1);
    const json& r = ans["results"][0];
    Classification c;
    if (r.contains("scores") && r.contains("labels")) {
      c.scores = floats(r["scores"], "rerank");
      c.labels = r["labels"].get<std::vector<std::string>>();
      if (c.labels.size() != c.scores.size())
        throw RequestFailed("rerank: 'labels' and 'scores' differ in length", 200, 1);
    } else if (r.contains("relevance_score") && r["relevance_score"].is_number()) {
      c.scores = {r["relevance_score"].get<float>()};
      c.labels = {"score"};
    } else {
      throw RequestFailed("rerank: no relevance_score in the answer", 200, 1);
    }
    c.probs = softmax_probs(c.scores);
    c.n_tokens = r.value("n_tokens", 0);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ragform::reader

#include "reader/remote_encoder.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

namespace ragform::reader {
namespace {
using nlohmann::json;

constexpr const char* kWho = "remote encoder";

json parse_answer(const std::string& body, const char* what) {
  return parse_json_answer(body, what, kWho);
}

std::vector<float> floats(const json& j, const char* what) {
  if (!j.is_array())
    throw RequestFailed(std::string(what) + ": expected an array of numbers", 200, 1, kWho);
  std::vector<float> v;
  v.reserve(j.size());
  for (const auto& x : j) {
    if (!x.is_number())
      throw RequestFailed(std::string(what) + ": expected an array of numbers", 200, 1, kWho);
    v.push_back(x.get<float>());
  }
  return v;
}
}  // namespace

RemoteEncoder::RemoteEncoder(RemoteEncoderOptions opt)
    : opt_(std::move(opt)), http_(opt_.base_url, kWho) {
  if (opt_.batch < 1) opt_.batch = 1;
  if (opt_.retries < 0) opt_.retries = 0;
}

std::string RemoteEncoder::describe() const {
  return "remote:" + http_.scheme_host_port() + http_.prefix() + "#" + opt_.model;
}

std::string RemoteEncoder::post(const std::string& endpoint, const std::string& body) const {
  return http_.post(endpoint, body, {opt_.api_key, opt_.retries, opt_.backoff_s, opt_.timeout_s});
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
                          1, kWho);
    std::vector<Embedding> part(e - b);
    for (const auto& d : ans["data"]) {
      const size_t idx = d.value("index", size_t(0));
      if (idx >= part.size() || !d.contains("embedding"))
        throw RequestFailed("embeddings: bad item in 'data'", 200, 1, kWho);
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
      throw RequestFailed("rerank: no 'results' in the answer", 200, 1, kWho);
    const json& r = ans["results"][0];
    Classification c;
    if (r.contains("scores") && r.contains("labels")) {
      c.scores = floats(r["scores"], "rerank");
      c.labels = r["labels"].get<std::vector<std::string>>();
      if (c.labels.size() != c.scores.size())
        throw RequestFailed("rerank: 'labels' and 'scores' differ in length", 200, 1, kWho);
    } else if (r.contains("relevance_score") && r["relevance_score"].is_number()) {
      c.scores = {r["relevance_score"].get<float>()};
      c.labels = {"score"};
    } else {
      throw RequestFailed("rerank: no relevance_score in the answer", 200, 1, kWho);
    }
    c.probs = softmax_probs(c.scores);
    c.n_tokens = r.value("n_tokens", 0);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ragform::reader

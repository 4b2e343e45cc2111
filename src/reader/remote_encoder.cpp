#include "reader/remote_encoder.h"

#include <httplib.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/excerpt.h"
#include "reader/answer_check.h"

namespace ragform::reader {
namespace {
using nlohmann::json;

constexpr const char* kWho = "remote encoder";

json parse_answer(const std::string& body, const char* what) {
  return parse_json_answer(body, what, kWho);
}

// A server's answer read field by field, as OpenAIReader reads its own (openai_reader.cpp): each
// field is checked for its type and range where it is read, and a violation is RequestFailed
// (status 200, one attempt) naming the method, the field and the server:
//   "remote encoder: embeddings: data[1].index: 0 appears twice (from http://127.0.0.1:8080/v1)"
// (duplicate indexes left a text with an empty vector, 1e300 became inf, n_tokens 1e20 became
// -2147483648, a string index or a number among the pieces threw nlohmann's type_error.302).
class Answer : public AnswerCheck {
 public:
  Answer(std::string from, const char* method) : AnswerCheck(std::move(from), method, kWho) {}
  // An optional count: absent or null is 0.
  int count(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return 0;
    return int(integer(*it, path + "." + key, 0, INT_MAX));
  }
  bool flag(const json& obj, const char* key, const std::string& path) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return false;
    if (!it->is_boolean()) bad(path + "." + key + ": expected a boolean, got " + type_of(*it));
    return it->get<bool>();
  }
  float number(const json& v, const std::string& path) const {
    if (!v.is_number()) bad(path + ": expected a number, got " + type_of(v));
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > double(FLT_MAX))
      bad(path + ": " + v.dump() + " is not a finite float");
    return float(d);
  }
  // A non-empty vector of `width` numbers (any width when `width` is 0).
  std::vector<float> vector(const json& v, const std::string& path, size_t width) const {
    if (!v.is_array() || v.empty())
      bad(path + ": expected a non-empty list of numbers, got " +
          (v.is_array() ? std::string("an empty list") : type_of(v)));
    if (width && v.size() != width)
      bad(path + ": " + std::to_string(v.size()) + " numbers where the first vector has " +
          std::to_string(width));
    std::vector<float> out;
    out.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(number(v[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }
  std::vector<std::string> strings(const json& v, const std::string& path) const {
    if (!v.is_array()) bad(path + ": expected a list of strings, got " + type_of(v));
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string())
        bad(path + "[" + std::to_string(i) + "]: expected a string, got " + type_of(v[i]));
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }
};
}  // namespace

RemoteEncoder::RemoteEncoder(RemoteEncoderOptions opt)
    : opt_(std::move(opt)), http_(opt_.base_url, kWho) {
  check_api_key(opt_.api_key);
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
    for (auto& em : embed_batch(texts, b, e, pooling, normalize)) out.push_back(std::move(em));
  }
  return out;
}

std::vector<Embedding> RemoteEncoder::embed_batch(const std::vector<std::string>& texts, size_t b,
                                                  size_t e, std::optional<Pooling> pooling,
                                                  bool normalize) {
  const bool per_token = pooling && *pooling == Pooling::None;
  json req = {{"input", std::vector<std::string>(texts.begin() + std::ptrdiff_t(b),
                                                 texts.begin() + std::ptrdiff_t(e))},
              {"encoding_format", "float"},
              {"normalize", normalize}};
  if (!opt_.model.empty()) req["model"] = opt_.model;
  if (pooling) req["pooling"] = model::pooling_name(*pooling);
  std::string body;
  try {
    body = post("/embeddings", req.dump());
  } catch (const RequestFailed& ex) {
    // Per-token vectors of many texts can be more than a server sends in one reply (ragform
    // serve: kMaxEmbeddingValues, a 400): the batch is asked for in halves, down to one text.
    if (!per_token || ex.status() != 400 || e - b < 2) throw;
    const size_t mid = b + (e - b) / 2;
    std::vector<Embedding> out = embed_batch(texts, b, mid, pooling, normalize);
    for (auto& em : embed_batch(texts, mid, e, pooling, normalize)) out.push_back(std::move(em));
    return out;
  }
  const json ans = parse_answer(body, "embeddings");
  const Answer an(redact_url(http_.scheme_host_port() + http_.prefix()), "embeddings");
  if (!ans.is_object() || !ans.contains("data") || !ans["data"].is_array() ||
      ans["data"].size() != e - b)
    an.bad("expected " + std::to_string(e - b) + " items in 'data'");
  std::vector<Embedding> part(e - b);
  std::vector<bool> seen(e - b, false);
  size_t width = 0;  // every vector of one answer is as wide as the first
  for (size_t k = 0; k < ans["data"].size(); ++k) {
    const json& d = ans["data"][k];
    const std::string path = "data[" + std::to_string(k) + "]";
    if (!d.is_object() || !d.contains("embedding"))
      an.bad(path + ": expected an object with an 'embedding'");
    size_t idx = k;  // OpenAI's servers always send it; in order when they do not
    if (d.contains("index") && !d["index"].is_null())
      idx = size_t(an.integer(d["index"], path + ".index", 0, (long long)(e - b) - 1));
    if (seen[idx]) an.bad(path + ".index: " + std::to_string(idx) + " appears twice");
    seen[idx] = true;
    Embedding& em = part[idx];
    const json& v = d["embedding"];
    em.n_tokens = an.count(d, "n_tokens", path);
    em.truncated = an.flag(d, "truncated", path);
    if (per_token) {
      if (!v.is_array() || v.empty() || !v[0].is_array())
        throw NotSupported("remote encoder",
                           "the server returned one vector per text: per-token embeddings "
                           "(pooling none) are not supported by this server");
      for (size_t t = 0; t < v.size(); ++t) {
        std::vector<float> r =
            an.vector(v[t], path + ".embedding[" + std::to_string(t) + "]", width);
        width = r.size();
        em.token_vectors.insert(em.token_vectors.end(), r.begin(), r.end());
      }
      em.n_embd = int(width);
      em.n_tokens = int(v.size());
      if (d.contains("pieces") && !d["pieces"].is_null()) {
        em.pieces = an.strings(d["pieces"], path + ".pieces");
        if (em.pieces.size() != v.size())
          an.bad(path + ".pieces: " + std::to_string(em.pieces.size()) + " pieces for " +
                 std::to_string(v.size()) + " token vectors");
      }
    } else {
      em.vector = an.vector(v, path + ".embedding", width);
      width = em.vector.size();
      em.n_embd = int(width);
    }
  }
  return part;
}

std::vector<Classification> RemoteEncoder::classify(const std::vector<TextPair>& pairs) {
  std::vector<Classification> out;
  out.reserve(pairs.size());
  const Answer an(redact_url(http_.scheme_host_port() + http_.prefix()), "rerank");
  for (const TextPair& pr : pairs) {
    if (!pr.b)
      throw NotSupported("remote encoder",
                         "a remote encoder classifies text pairs only (/v1/rerank scores a query "
                         "against documents)");
    json req = {{"query", pr.a}, {"documents", {*pr.b}}, {"top_n", 1}};
    if (!opt_.model.empty()) req["model"] = opt_.model;
    const json ans = parse_answer(post("/rerank", req.dump()), "rerank");
    if (!ans.is_object() || !ans.contains("results") || !ans["results"].is_array() ||
        ans["results"].empty())
      an.bad("no 'results' in the answer");
    const json& r = ans["results"][0];
    if (!r.is_object()) an.bad("results[0]: expected an object, got " + AnswerCheck::type_of(r));
    Classification c;
    if (r.contains("scores") && r.contains("labels")) {
      c.scores = an.vector(r["scores"], "results[0].scores", 0);
      c.labels = an.strings(r["labels"], "results[0].labels");
      if (c.labels.size() != c.scores.size()) an.bad("'labels' and 'scores' differ in length");
    } else if (r.contains("relevance_score")) {
      c.scores = {an.number(r["relevance_score"], "results[0].relevance_score")};
      c.labels = {"score"};
    } else {
      an.bad("no relevance_score in the answer");
    }
    c.probs = softmax_probs(c.scores);
    c.n_tokens = an.count(r, "n_tokens", "results[0]");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ragform::reader

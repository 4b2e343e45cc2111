#include "server/api_encoder.h"

#include <algorithm>
#include <bit>
#include <chrono>

#include "base/base64.h"
#include "base/json_release.h"
#include "reader/encoder.h"
#include "reader/native_encoder.h"
#include "server/api_json.h"
#include "server/reply_budget.h"
#include "server/router.h"

namespace ragform::server {

using namespace api_json;

EncoderApi::EncoderApi(reader::Encoder& enc, EncoderApiOptions opt)
    : enc_(enc),
      opt_(std::move(opt)),
      created_(long(std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count())) {
  // The served model's width and longest input, for the reply budget's estimates: a native
  // model tells them; another encoder's width is learned from its first answer.
  if (opt_.n_embd <= 0 || opt_.max_tokens <= 0)
    if (const auto* native = dynamic_cast<const reader::NativeEncoder*>(&enc_)) {
      if (opt_.n_embd <= 0) opt_.n_embd = native->model().hp().n_embd;
      if (opt_.max_tokens <= 0) opt_.max_tokens = native->max_tokens();
    }
  if (opt_.n_embd > 0) width_ = size_t(opt_.n_embd);
}

namespace {

#define RAGFORM_MODEL_FIELD \
  R"("model": {"type": ["string", "null"], "description": "the served model's id; absent: it, another: 404 model_not_found"})"

const RouteSpec kEncoderHealth{
    .method = "GET",
    .paths = {"/health"},
    .access = Access::Open,
    .summary = "Liveness and the encoder's description (no API key needed)",
    .response =
        R"({"type": "object", "required": ["status", "encoder", "reply_memory", "body_memory"], "properties": {"status": {"const": "ok"}, "encoder": {"type": "string"}, "reply_memory": )" RAGFORM_REPLY_MEMORY
        R"(, "body_memory": )" RAGFORM_BODY_MEMORY R"(}})",
};

const RouteSpec kEmbeddings{
    .method = "POST",
    .paths = {"/v1/embeddings", "/embeddings"},
    .summary = "Embeddings (OpenAI's shape); pooling none gives one vector per token",
    .request =
        R"({"type": "object", "required": ["input"], "properties": {)" RAGFORM_MODEL_FIELD R"(,
      "input": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "minItems": 1, "maxItems": "$max_encoder_inputs", "items": {"type": "string", "minLength": 1}}]},
      "encoding_format": {"type": ["string", "null"], "enum": ["float", "base64", "", null], "description": "base64: each vector's float32 bytes, little-endian, in base64 - the OpenAI SDKs' default"},
      "dimensions": {"type": ["integer", "null"], "minimum": 1, "description": "only the model's own width: vectors are not shortened"},
      "user": {"type": ["string", "null"], "description": "metadata: not read"},
      "pooling": {"type": ["string", "null"], "enum": ["none", "mean", "cls", "last", "", null], "description": "required for a classifier model; none: a vector per token, at most $max_embedding_values numbers in the reply, else 400 response_too_large"},
      "normalize": {"type": ["boolean", "null"], "default": true}}})",
    .response =
        R"({"type": "object", "required": ["object", "model", "data", "usage"], "properties": {
      "object": {"const": "list"}, "model": {"type": "string"},
      "data": {"type": "array", "items": {"type": "object", "required": ["object", "index", "embedding", "n_tokens", "truncated"], "properties": {
        "object": {"const": "embedding"}, "index": {"type": "integer"}, "n_tokens": {"type": "integer"}, "truncated": {"type": "boolean"},
        "embedding": {"oneOf": [{"type": "array", "items": {"oneOf": [{"type": "number"}, {"type": "array", "items": {"type": "number"}}, {"type": "string"}]}}, {"type": "string"}], "description": "numbers; with pooling none one entry per token; with encoding_format base64 the float32 values, little-endian, in base64, per token with pooling none"},
        "pieces": {"type": "array", "items": {"type": "string"}}}}},
      "usage": {"type": "object", "required": ["prompt_tokens", "total_tokens"], "properties": {"prompt_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}}}})",
};

const RouteSpec kRerank{
    .method = "POST",
    .paths = {"/v1/rerank", "/rerank"},
    .summary = "Documents ranked by a cross-encoder's score for a query (llama.cpp / Jina shape)",
    .request =
        R"({"type": "object", "required": ["query", "documents"], "properties": {)" RAGFORM_MODEL_FIELD
        R"(,
      "query": {"type": "string"},
      "documents": {"type": "array", "minItems": 1, "maxItems": "$max_encoder_inputs", "items": {"oneOf": [{"type": "string"}, {"type": "object", "required": ["text"], "additionalProperties": false, "properties": {"text": {"type": "string"}}}]}},
      "top_n": {"type": ["integer", "null"], "minimum": 1, "maximum": 1073741824},
      "return_documents": {"type": ["boolean", "null"]}}})",
    .response =
        R"({"type": "object", "required": ["object", "model", "results", "usage"], "properties": {
      "object": {"const": "list"}, "model": {"type": "string"},
      "results": {"type": "array", "items": {"type": "object", "required": ["index", "relevance_score", "labels", "scores", "n_tokens"], "properties": {
        "index": {"type": "integer"}, "relevance_score": {"type": "number"}, "labels": {"type": "array", "items": {"type": "string"}},
        "scores": {"type": "array", "items": {"type": "number"}}, "n_tokens": {"type": "integer"},
        "document": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}}}},
      "usage": {"type": "object", "required": ["prompt_tokens", "total_tokens"], "properties": {"prompt_tokens": {"type": "integer"}, "total_tokens": {"type": "integer"}}}}})",
};

#undef RAGFORM_MODEL_FIELD

}  // namespace

void EncoderApi::add_routes(Router& router) { routes(router, this); }

void EncoderApi::declare_routes(Router& router) { routes(router, nullptr); }

void EncoderApi::routes(Router& router, EncoderApi* self) {
  auto on = [self](Response (EncoderApi::*fn)(RequestBody&)) { return body_handler(self, fn); };
  auto get = [self](Response (EncoderApi::*fn)()) { return plain_handler(self, fn); };
  router.add(kEncoderHealth, get(&EncoderApi::health));
  router.add(models_route(), get(&EncoderApi::models));
  router.add(kEmbeddings, on(&EncoderApi::embeddings));
  router.add(kRerank, on(&EncoderApi::rerank));
  router.add(model_route(), on(&EncoderApi::model));
  router.default_hint("this server runs an encoder model: /v1/embeddings and /v1/rerank");
}

Response EncoderApi::health() {
  return ok({{"status", "ok"},
             {"encoder", enc_.describe()},
             {"reply_memory", to_json(reply_budget().stats())},
             {"body_memory", to_json(body_budget().stats())}});
}

Response EncoderApi::models() { return models_reply(opt_.model_id, created_, opt_.model_sha256); }
Response EncoderApi::model(RequestBody& body) {
  return model_reply(body.path_parameter, opt_.model_id, created_, opt_.model_sha256);
}

namespace {
// The widest encoder vector the reply budget assumes when the model's width is not known and it
// has not answered yet (BERT-likes have 384 to 1,024).
constexpr size_t kMaxEncoderWidth = 4096;

void check_model(const json& j, const std::string& id) {
  const std::string model = get_str(j, "model", false);
  if (!model.empty() && model != id)
    throw ApiError{404,
                   "model '" + model + "' is not served here (this server serves '" + id + "')",
                   "invalid_request_error", "model_not_found"};
}

json floats(const float* v, size_t n) {
  json a = json::array();
  for (size_t i = 0; i < n; ++i) a.push_back(v[i]);
  return a;
}

// A vector as `encoding_format: "base64"` gives it: its float32 bytes, little-endian, in base64
// (what the OpenAI SDKs ask for by default and decode with numpy.frombuffer(..., "<f4")).
json base64_floats(const float* v, size_t n) {
  static_assert(std::endian::native == std::endian::little, "float32 bytes are little-endian");
  return base64_encode(std::string_view(reinterpret_cast<const char*>(v), n * sizeof(float)));
}
}  // namespace

Response EncoderApi::embeddings(RequestBody& body) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  check_model(j, opt_.model_id);
  if (!j.contains("input") || j["input"].is_null()) bad("missing field 'input'", "missing_field");
  std::vector<std::string> texts;
  const json& in = j["input"];
  if (in.is_string()) {
    texts.push_back(in.get<std::string>());
  } else if (in.is_array()) {
    for (const auto& t : in) {
      if (!t.is_string())
        bad("'input' must be a string or an array of strings (token arrays are not accepted)",
            "invalid_type");
      texts.push_back(t.get<std::string>());
    }
  } else {
    bad("'input' must be a string or an array of strings", "invalid_type");
  }
  if (texts.empty()) bad("'input' is an empty array");
  // OpenAI refuses empty strings; an empty text would embed the bare [CLS] [SEP] pair, a vector
  // that means nothing.
  for (size_t i = 0; i < texts.size(); ++i)
    if (texts[i].empty())
      bad(in.is_string() ? std::string("'input' is an empty string")
                         : "'input' holds an empty string at index " + std::to_string(i));
  if (int(texts.size()) > opt_.max_inputs)
    bad("'input' holds " + std::to_string(texts.size()) + " texts, more than this server's " +
        std::to_string(opt_.max_inputs));
  get_str(j, "user", false);  // not read; a string or null, as declared (pass 18: 5 was taken)
  const std::string fmt = get_str(j, "encoding_format", false);
  if (!fmt.empty() && fmt != "float" && fmt != "base64")
    bad("'encoding_format' must be \"float\" or \"base64\"");
  const auto vector_of = fmt == "base64" ? base64_floats : floats;
  // OpenAI's `dimensions` shortens vectors of the models trained for it; these are served whole,
  // so it may only name their width (checked once the width is known, below).
  const int dimensions = get_int(j, "dimensions", 0, 1, 1 << 20);
  std::optional<reader::Pooling> pooling;
  const std::string pname = get_str(j, "pooling", false);
  if (!pname.empty()) {
    if (pname != "none" && pname != "mean" && pname != "cls" && pname != "last")
      bad("'pooling' must be none, mean, cls or last, got '" + pname + "'");
    pooling = model::parse_pooling(pname);
  } else if (enc_.default_pooling() == reader::Pooling::Rank) {
    bad("the served model is a classifier (pooling rank): ask for 'pooling' (none, mean, cls, "
        "last) or use /v1/rerank");
  }
  const bool normalize = get_bool(j, "normalize", true);
  const bool per_token = pooling && *pooling == reader::Pooling::None;
  // The reply's memory, reserved in the server-wide budget before anything is encoded and held
  // until the body is written (reply_budget.h): a vector per text, or per token (at most one a
  // byte and [CLS] [SEP], at most the model's longest input), of the served model's width
  // (kMaxEncoderWidth until known: 4,096 for tiny-bert's 64 made a 2.86 MB reply reserve
  // 128 MiB, and 30 such requests at once got 503s, issue 40); shrunk to the body once built.
  size_t most = 0;
  for (const std::string& t : texts) {
    size_t n = 1;
    if (per_token) {
      n = t.size() + 2;
      if (opt_.max_tokens > 0) n = std::min(n, size_t(opt_.max_tokens));
    }
    most += n;
  }
  const size_t width = width_.load();
  if (dimensions > 0 && width > 0 && size_t(dimensions) != width)  // known: refused before work
    bad("'dimensions' = " + std::to_string(dimensions) + ": this model's vectors have " +
            std::to_string(width) + " (they are not shortened)",
        kUnsupported);
  ReplyBudget::Hold hold = reply_budget().reserve(
      std::min(most * (width ? width : kMaxEncoderWidth), kMaxEmbeddingValues) *
          kReplyBytesPerNumber +
      (size_t(1) << 16));
  std::vector<reader::Embedding> embs;
  if (per_token) {
    // One vector per token: the reply grows with every text's tokens (100 texts of 512 tokens
    // made 207 MB from 120 KB, 870 would have made 1.8 GB), so the texts are encoded a few at a
    // time and the reply is refused once its vectors pass kMaxEmbeddingValues.
    constexpr size_t kChunk = 16;
    size_t values = 0;
    for (size_t b = 0; b < texts.size(); b += kChunk) {
      const std::vector<std::string> part(
          texts.begin() + std::ptrdiff_t(b),
          texts.begin() + std::ptrdiff_t(std::min(texts.size(), b + kChunk)));
      for (reader::Embedding& e : enc_.embed(part, pooling, normalize)) {
        values += size_t(e.n_tokens) * size_t(e.n_embd);
        if (values > kMaxEmbeddingValues)
          bad("the reply would hold more than " + std::to_string(kMaxEmbeddingValues) +
                  " numbers (per-token vectors, pooling none, of the first " +
                  std::to_string(embs.size() + 1) + " of " + std::to_string(texts.size()) +
                  " texts): ask for fewer texts at a time",
              "response_too_large");
        embs.push_back(std::move(e));
      }
    }
  } else {
    embs = enc_.embed(texts, pooling, normalize);
  }
  for (const reader::Embedding& e : embs) {
    size_t seen = width_.load();
    const size_t w = size_t(std::max(e.n_embd, 0));
    while (w > seen && !width_.compare_exchange_weak(seen, w)) {
    }
  }
  for (const reader::Embedding& e : embs)
    if (dimensions > 0 && dimensions != e.n_embd)
      bad("'dimensions' = " + std::to_string(dimensions) + ": this model's vectors have " +
              std::to_string(e.n_embd) + " (they are not shortened)",
          kUnsupported);
  json data = json::array();
  long n_tok = 0;
  for (size_t i = 0; i < embs.size(); ++i) {
    const reader::Embedding& e = embs[i];
    json item = {{"object", "embedding"},
                 {"index", i},
                 {"n_tokens", e.n_tokens},
                 {"truncated", e.truncated}};
    if (pooling && *pooling == reader::Pooling::None) {
      json rows = json::array();
      for (int t = 0; t < e.n_tokens; ++t)
        rows.push_back(
            vector_of(e.token_vectors.data() + size_t(t) * size_t(e.n_embd), size_t(e.n_embd)));
      item["embedding"] = std::move(rows);
      item["pieces"] = e.pieces;
    } else {
      item["embedding"] = vector_of(e.vector.data(), e.vector.size());
    }
    n_tok += e.n_tokens;
    data.push_back(std::move(item));
  }
  embs.clear();
  Response r = ok({{"object", "list"},
                   {"model", opt_.model_id},
                   {"data", std::move(data)},
                   {"usage", {{"prompt_tokens", n_tok}, {"total_tokens", n_tok}}}});
  return held_reply(std::move(r), std::move(hold));
}

Response EncoderApi::rerank(RequestBody& body) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  check_model(j, opt_.model_id);
  const std::string query = get_str(j, "query", true);
  if (!j.contains("documents") || !j["documents"].is_array())
    bad("'documents' must be an array of strings",
        j.contains("documents") ? "invalid_type" : "missing_field");
  std::vector<std::string> docs;
  for (const auto& d : j["documents"]) {
    // Jina/Cohere also accept {"text": ...} objects; a key besides the text would be dropped
    // (pass 19: a title was neither ranked nor returned), so it is refused.
    if (d.is_string()) {
      docs.push_back(d.get<std::string>());
    } else if (d.is_object() && d.contains("text") && d["text"].is_string()) {
      only_keys(d, {"text"}, "documents[" + std::to_string(docs.size()) + "]");
      docs.push_back(d["text"].get<std::string>());
    } else {
      bad("'documents' must be an array of strings", "invalid_type");
    }
  }
  if (docs.empty()) bad("'documents' is an empty array");
  if (int(docs.size()) > opt_.max_inputs)
    bad("'documents' holds " + std::to_string(docs.size()) + " texts, more than this server's " +
        std::to_string(opt_.max_inputs));
  const int top_n = get_int(j, "top_n", int(docs.size()), 1, 1 << 30);
  const bool return_docs = get_bool(j, "return_documents", false);
  // One query against every document: tokenised once, not copied per document (a 500 KB query
  // against 2,000 documents tokenised it 2,000 times, 57 s, and held 2,000 copies, 1.4 GB).
  // Each result's labels and scores, and with return_documents its document again: reserved
  // before anything is built, held until written (reply_budget.h).
  size_t doc_bytes = 0;
  if (return_docs)
    for (const std::string& d : docs) doc_bytes += d.size();
  ReplyBudget::Hold hold =
      reply_budget().reserve(docs.size() * 8 * kReplyBytesPerNumber +
                             doc_bytes * kReplyBytesPerEchoedByte + (size_t(1) << 16));
  const auto res = enc_.rerank(query, docs);
  std::vector<size_t> order(res.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return res[a].scores[0] > res[b].scores[0]; });
  json results = json::array();
  long n_tok = 0;
  for (const auto& c : res) n_tok += c.n_tokens;
  for (size_t k = 0; k < order.size() && int(k) < top_n; ++k) {
    const reader::Classification& c = res[order[k]];
    json r = {{"index", order[k]},
              {"relevance_score", c.scores[0]},
              {"labels", c.labels},
              {"scores", floats(c.scores.data(), c.scores.size())},
              {"n_tokens", c.n_tokens}};
    if (return_docs) r["document"] = {{"text", docs[order[k]]}};
    results.push_back(std::move(r));
  }
  return held_reply(ok({{"object", "list"},
                        {"model", opt_.model_id},
                        {"results", std::move(results)},
                        {"usage", {{"prompt_tokens", n_tok}, {"total_tokens", n_tok}}}}),
                    std::move(hold));
}

}  // namespace ragform::server

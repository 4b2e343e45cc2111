#include "server/api_retrieve.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/json_release.h"
#include "retrieval/dense_index.h"
#include "retrieval/questions.h"
#include "retrieval/retrieve_options.h"
#include "retrieval/retriever.h"
#include "retrieval/retriever_pool.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/reply_budget.h"
#include "server/router.h"

namespace ragform::server {

using namespace api_json;

namespace {
// The reply budget's least estimate of a hit before its passage is known (a 100-word passage and
// its fields are about 1 KB), and the hits retrieved at a time while the reply is built.
constexpr size_t kRetrieveHitEstimate = 4096;
constexpr size_t kRetrieveBatchHits = 1024;
// A hit's JSON beside its id, title and text: the score, the rank, keys and quotes.
constexpr size_t kRetrieveHitFields = 128;
// Memory a hit takes while the reply is built, in multiples of its bytes: the retrieved passage,
// the row's JSON and its text, and the reply the text is appended to.
constexpr size_t kRetrieveBuildFactor = 3;

size_t hit_bytes(const retrieval::Retrieved& h) {
  return h.id.size() + h.title.size() + h.text.size() + kRetrieveHitFields;
}
}  // namespace

RetrieveApi::RetrieveApi(RetrieveApiOptions opt) : opt_(std::move(opt)) {
  retrieval::RetrieverOptions ro;
  ro.threads = 1;  // parallelism across requests (the pool), not within one
  bm25_ = std::make_unique<retrieval::RetrieverPool>(opt_.index_dir, ro, nullptr, opt_.parallel);
  if (!retrieval::DenseIndex::exists(opt_.index_dir)) {
    why_no_dense_ = "the index has no dense vectors (index build --dense)";
  } else if (!opt_.encoder) {
    why_no_dense_ =
        "the server has no encoder model for this index (serve its encoder, or "
        "--encoder-model)";
  } else {
    ro.encoder = opt_.encoder;
    ro.encoder_sha256 = opt_.encoder_sha256;
    ro.encoder_name = opt_.encoder_name;
    try {
      auto shared = std::make_shared<const retrieval::DenseIndex>(opt_.index_dir);
      ro.mode = retrieval::Mode::Dense;
      dense_ =
          std::make_unique<retrieval::RetrieverPool>(opt_.index_dir, ro, shared, opt_.parallel);
      ro.mode = retrieval::Mode::Hybrid;
      hybrid_ =
          std::make_unique<retrieval::RetrieverPool>(opt_.index_dir, ro, shared, opt_.parallel);
    } catch (const Error& e) {
      dense_.reset();
      why_no_dense_ = e.what();  // another encoder: refused, as `retrieve` refuses it
    }
  }
}

RetrieveApi::~RetrieveApi() = default;

namespace {
const RouteSpec kRetrieve{
    .method = "POST",
    .paths = {"/v1/retrieve", "/retrieve"},
    .summary = "Passages from the retrieval index (--index DIR; retrieve --json's rows)",
    .description =
        "Exactly one of question or questions. dense and hybrid need the index's encoder (the "
        "served encoder, or "
        "--encoder-model): otherwise 400 mode_unavailable.",
    // k and mode: retrieve's declaration (retrieval/retrieve_options.h), k within this server's
    // limit.
    .request = with_declared(R"({"type": "object", "properties": {
      "question": {"oneOf": [{"type": "string"}, {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}}]},
      "questions": {"type": "array", "minItems": 1, "maxItems": "$max_questions", "items": {"oneOf": [{"type": "string"}, {"type": "object", "required": ["question"], "properties": {"question": {"type": "string"}}}]}},
      "k": {"maximum": "$max_retrieve_k"},
      "mode": {"enum": ["bm25", "dense", "hybrid", null]}},
      "description": "exactly one of question or questions"})",
                             declared_schema<retrieval::RetrieveRequest>()),
    .response = R"({"type": "object", "required": ["object", "mode", "k", "data"], "properties": {
      "object": {"const": "list"}, "mode": {"type": "string"}, "k": {"type": "integer"},
      "data": {"type": "array", "items": {"type": "object", "required": ["id", "question", "ctxs"], "properties": {
        "id": {"type": "string"}, "question": {"type": "string"},
        "ctxs": {"type": "array", "items": {"type": "object", "required": ["id", "text", "score", "rank"], "properties": {
          "id": {"type": "string"}, "title": {"type": "string"}, "text": {"type": "string"}, "score": {"type": "number"}, "rank": {"type": "integer"}}}}}}}}})",
};
}  // namespace

void RetrieveApi::declare_routes(Router& router) { router.add(kRetrieve, nullptr); }

void RetrieveApi::add_routes(Router& router) {
  router.add(kRetrieve, [this](const Request&, RequestBody& body) {
    try {
      return retrieve(body);
    } catch (const eval::RowError& e) {
      throw ApiError{400, e.what(), "invalid_request_error", error_code(400)};
    } catch (const UsageError&) {
      throw;  // a bad request: 400
    } catch (const ApiError&) {
      throw;
    } catch (const Error& e) {
      // The index failed (SQLite, FAISS, the encoder): the server's fault, not the request's.
      throw ApiError{500, e.what(), "server_error", error_code(500)};
    }
  });
}

Response RetrieveApi::retrieve(RequestBody& body) {
  json& j = body.json;             // parsed by the router (router.h RequestBody)
  retrieval::RetrieveRequest req;  // k, mode: retrieve's declaration, as the CLI reads them
  read_declared(j, req);
  if (req.k > kMaxRetrieveK)
    bad("'k' = " + std::to_string(req.k) + " is outside [1, " + std::to_string(kMaxRetrieveK) +
        "] (this server's limit)");
  const int k = int(req.k);
  const std::string& mode_s = req.mode;
  retrieval::Mode mode;
  try {
    mode = retrieval::parse_mode(mode_s);
  } catch (const UsageError&) {
    bad("field 'mode': expected bm25, dense or hybrid, got '" + mode_s + "'");
  }
  retrieval::RetrieverPool* pool = bm25_.get();
  if (mode != retrieval::Mode::Bm25) {
    if (!dense_) bad("mode " + mode_s + " is not available: " + why_no_dense_, "mode_unavailable");
    pool = mode == retrieval::Mode::Dense ? dense_.get() : hybrid_.get();
  }
  std::vector<retrieval::Question> qs;
  auto add = [&](json& q, size_t i) {
    if (q.is_string()) {
      retrieval::Question x;
      x.id = "q" + std::to_string(i);
      x.question = q.get<std::string>();
      qs.push_back(std::move(x));
    } else if (q.is_object()) {
      try {
        // Fields moved; without an id, q<i> as a plain string's (pass 18: "line:<i+1>").
        qs.push_back(retrieval::question_from_json(std::move(q), i + 1, "q" + std::to_string(i)));
      } catch (const std::bad_alloc&) {
        throw;  // out of memory is the server's 503, not the question's fault
      } catch (const std::exception& e) {
        bad("questions[" + std::to_string(i) + "]: " + e.what());
      }
    } else {
      bad("questions[" + std::to_string(i) + "]: expected string or object, got " + q.type_name());
    }
  };
  if (j.contains("question") && j.contains("questions"))
    bad("give either 'question' or 'questions', not both");  // (questions were ignored)
  if (j.contains("question")) {
    add(j["question"], 0);
  } else if (j.contains("questions") && j["questions"].is_array()) {
    json& a = j["questions"];
    if (a.empty()) bad("field 'questions' is empty");
    if (a.size() > size_t(opt_.max_questions))
      bad("at most " + std::to_string(opt_.max_questions) + " questions per request");
    for (size_t i = 0; i < a.size(); ++i) add(a[i], i);
  } else {
    bad("missing field 'question' (a string) or 'questions' (an array)", "missing_field");
  }
  // One row per id: a generated q<i> and a question's own id may meet (pass 19: "Paris" and
  // {"question": "Rome", "id": "q0"} were two rows "q0").
  {
    std::unordered_map<std::string, size_t> first;
    for (size_t i = 0; i < qs.size(); ++i) {
      const auto [at, fresh] = first.emplace(qs[i].id, i);
      if (!fresh)
        bad("questions[" + std::to_string(i) + "]'s id '" + printable(excerpt(qs[i].id)) +
            "' is also questions[" + std::to_string(at->second) +
            "]'s: give each question its own id");
    }
  }
  if (qs.size() * size_t(k) > kMaxRetrieveHits)
    bad(std::to_string(qs.size()) + " questions x k = " + std::to_string(k) +
            " exceed the limit of " + std::to_string(kMaxRetrieveHits) +
            " hits per request (ask for fewer questions or a smaller k)",
        "response_too_large");
  // Each hit carries its passage, whose size the index decides: 1,024 questions x k = 20 over an
  // index of 100 KB passages (a 17 KB request) held 2 GB of hits, then their JSON twice, and ended
  // in a 500 bad_alloc at 5.2 GB. The reply is built a few questions at a time, as text, counted as
  // it grows and refused past kMaxResponseBytes; its memory is reserved in the server's reply
  // budget (reply_budget.h) and held until written. The estimate of a hit is the largest this
  // server has sent (at least kRetrieveHitEstimate); a batch whose passages turn out larger (a
  // fixed 4 KB a hit let 120 unread replies of 100 hits of 57 KB take 2.15 GB, none of them
  // counted, issue 40) is dropped, its true size reserved, and retrieved again: a request waiting
  // for room holds no passages.
  const size_t hits = qs.size() * size_t(k);
  const size_t per_hit = std::max(kRetrieveHitEstimate, largest_hit_.load());
  // A question object's other fields (moved into retrieval::Question::extra) are copied into its
  // row, whose tree is parsed and written again: as much as the body's tree a few times over (1 MB
  // of empty objects in one question's field took 27 MB a tree; 100 such requests at once ended a
  // server). Counted in the reply's reservation.
  bool extra = false;
  for (const retrieval::Question& q : qs) extra = extra || !q.extra.empty();
  const size_t extra_bytes = extra ? 2 * kParseBytesPerBodyByte * body.bytes : 0;
  ReplyBudget::Hold hold =
      reply_budget().reserve(kRetrieveBuildFactor * std::min(hits * per_hit, kMaxResponseBytes) +
                             extra_bytes + (size_t(1) << 16));
  const size_t per_batch = std::max<size_t>(1, kRetrieveBatchHits / size_t(k));
  std::string data = "[";
  for (size_t b = 0; b < qs.size(); b += per_batch) {
    const size_t e = std::min(qs.size(), b + per_batch);
    std::vector<std::string> texts;
    for (size_t i = b; i < e; ++i) texts.push_back(qs[i].question);
    auto res = pool->acquire()->retrieve(texts, k);
    // What this batch takes while its rows are built, beside the reply so far.
    auto needs = [&] {
      size_t bytes = 0, largest = 0;
      for (const auto& row : res)
        for (const auto& h : row) {
          bytes += hit_bytes(h);
          largest = std::max(largest, hit_bytes(h));
        }
      size_t seen = largest_hit_.load();
      while (largest > seen && !largest_hit_.compare_exchange_weak(seen, largest)) {
      }
      return data.size() + kRetrieveBuildFactor * std::min(bytes, kMaxResponseBytes) + extra_bytes +
             (size_t(1) << 16);
    };
    if (const size_t need = needs(); need > hold.bytes() && need >= kSmallReplyBytes) {
      res = {};  // not held while waiting
      reply_budget().grow(hold, need);
      res = pool->acquire()->retrieve(texts, k);
      reply_budget().grow(hold, needs());  // (the same passages: nothing more to wait for)
    }
    for (size_t i = b; i < e; ++i) {
      if (i) data += ',';
      // The CLI's row, byte for byte (`ragform retrieve --json`'s line; pass 22: its keys were
      // re-sorted here, the same content in other bytes).
      data += retrieval::retrieval_row(qs[i], res[i - b])
                  .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
      res[i - b] = {};
      if (data.size() > kMaxResponseBytes)
        bad("the reply would be more than " + std::to_string(kMaxResponseBytes) +
                " bytes (the passages of the first " + std::to_string(i + 1) + " of " +
                std::to_string(qs.size()) + " questions x k = " + std::to_string(k) +
                " hits already are " + std::to_string(data.size()) +
                "): ask for fewer questions or a smaller k",
            "response_too_large");
    }
  }
  data += ']';
  Response r;
  r.body = R"({"data":)" + data + R"(,"k":)" + std::to_string(k) + R"(,"mode":)" +
           dump(json(mode_s)) + R"(,"object":"list"})";
  data = std::string();
  return held_reply(std::move(r), std::move(hold));
}

}  // namespace ragform::server

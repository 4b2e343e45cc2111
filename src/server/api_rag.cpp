// The RAG endpoints of `ragform serve` (api.h): /v1/rag/normalize deploys a C-NORM profile,
// /v1/rag/spotlight selects SpotlightRAG evidence, each answering as the matching CLI verb prints.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "base/excerpt.h"
#include "base/json_release.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/spotlight/spotlight.h"
#include "reader/native_reader.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/engine.h"
#include "server/reply_budget.h"
#include "text/sentences.h"

namespace ragform::server {

using namespace api_json;

// C-NORM deployment (cnorm paper, section 4.3): the documents reformatted with the profile's own
// format, by the rule `ragform cnorm apply` and Python's cnorm.apply use (cnorm::apply_profile):
// the documents are the texts of one record's ctxs.
Response Api::normalize(RequestBody& body) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  if (!j.contains("documents") || !j["documents"].is_array())
    bad("'documents' must be an array of strings",
        j.contains("documents") ? "invalid_type" : "missing_field");
  json ctxs = json::array();
  for (auto& d : j["documents"]) {
    if (!d.is_string()) bad("'documents' must be an array of strings", "invalid_type");
    ctxs.push_back({{"text", d}});
  }
  json pj;
  std::string where;
  if (j.contains("profile") && !j["profile"].is_null()) {
    pj = j["profile"];
    where = "request 'profile'";
  } else if (!opt_.cnorm_profile.empty()) {
    pj = json::parse(opt_.cnorm_profile);  // validated when the server started
    where = opt_.cnorm_profile_name;
  } else {
    bad("no 'profile' in the request and the server was started without --cnorm-profile",
        "missing_field");
  }
  // profile_from_json names the bad field; its Error becomes a 400.
  const cnorm::Profile prof = cnorm::profile_from_json(pj, where);
  // Each whitespace run becomes the delimiter, which JSON may write six bytes a byte (\u0001):
  // 16 of them made a 995 KB body a 48 MB reply, and 150 clients that never read such replies
  // exhausted a server. Reserved in the reply budget before anything is built (reply_budget.h),
  // twice over for the tree beside the text; a document's format wrapper adds its own bytes.
  ReplyBudget::Hold hold =
      reply_budget().reserve(body.bytes * 2 * (1 + 6 * prof.best.text.size()) + ctxs.size() * 256);
  json applied;
  try {
    applied = cnorm::apply_profile(prof, {{"ctxs", std::move(ctxs)}}).record;
  } catch (const UsageError& e) {
    bad(where + ": " + e.what());  // a profile apply cannot deploy, named as the request gave it
  }
  json out = json::array();
  for (auto& c : applied["ctxs"]) out.push_back(std::move(c["text"]));
  applied = nullptr;
  Response r = ok({{"documents", std::move(out)},
                   {"delimiter", prof.best.name},
                   {"p", prof.p},
                   {"seed", prof.seed},
                   {"task", prof.task}});
  if (r.body.size() > kMaxResponseBytes)
    bad("the reply would be " + std::to_string(r.body.size()) + " bytes, above the limit of " +
            std::to_string(kMaxResponseBytes) + " (send fewer documents)",
        "response_too_large");
  return held_reply(std::move(r), std::move(hold));
}

namespace {
// {"title", "text"} or {"title", "sentences": [...]} -> a spotlight::Document. Given sentences are
// kept as given (text = their concatenation, as the HotpotQA loader does), so sent_id is the
// caller's own index; a text is split by text::split_sentences.
spotlight::Document spot_document(const json& d, size_t i, const std::string& qid) {
  std::string where = "documents[" + std::to_string(i) + "]";
  if (!d.is_object()) bad(where + " must be an object with 'text' or 'sentences'", "invalid_type");
  only_keys(d, {"title", "id", "text", "sentences"}, where);  // pass 17: others were ignored
  spotlight::Document doc;
  doc.title = get_str(d, "title", false);
  doc.id = get_str(d, "id", false);
  if (doc.id.empty()) doc.id = qid + "/" + std::to_string(i);
  bool has_text = d.contains("text") && !d["text"].is_null();
  bool has_sents = d.contains("sentences") && !d["sentences"].is_null();
  if (has_text == has_sents)
    bad(where + " needs exactly one of 'text' (string) or 'sentences' (array of strings)",
        "invalid_type");
  if (has_text) {
    doc.text = get_str(d, "text", true);
    for (const auto& s : text::split_sentences(doc.text)) doc.sentences.push_back(s.span);
  } else {
    if (!d["sentences"].is_array())
      bad(where + ".sentences must be an array of strings", "invalid_type");
    for (auto& s : d["sentences"]) {
      if (!s.is_string()) bad(where + ".sentences must be an array of strings", "invalid_type");
      size_t b = doc.text.size();
      doc.text += s.get<std::string>();
      doc.sentences.push_back({b, doc.text.size()});
    }
  }
  return doc;
}
}  // namespace

// SpotlightRAG (spotlight paper, eqs. 5-10): the same object `ragform spotlight select --json`
// prints for one question.
Response Api::spotlight(RequestBody& body) {
  using namespace ragform::spotlight;
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  std::string qid = get_str(j, "id", false);
  if (qid.empty()) qid = "request";
  std::string question = get_str(j, "question", true);
  if (question.empty()) bad("'question' must not be empty");
  if (!j.contains("documents") || !j["documents"].is_array() || j["documents"].empty())
    bad("'documents' must be a non-empty array",
        j.contains("documents") ? "invalid_type" : "missing_field");
  if (j["documents"].size() > kMaxSpotlightDocuments)
    bad("more than " + std::to_string(kMaxSpotlightDocuments) +
        " documents (the limit of one request: each is an encoder pass)");
  std::vector<Document> docs;
  for (size_t i = 0; i < j["documents"].size(); ++i)
    docs.push_back(spot_document(j["documents"][i], i, qid));
  // Sentences, not only documents, bound the work and the reply (reply_budget.h holds the memory).
  size_t sentences = 0;
  for (const Document& d : docs) sentences += d.sentences.size();
  if (sentences > kMaxSpotlightSentences)
    bad(std::to_string(sentences) + " sentences in the documents, more than the limit of " +
            std::to_string(kMaxSpotlightSentences) + " in one request",
        "response_too_large");
  // The question's words stand for its tokens (the encoders' tokens are words): the matches grow
  // with both, and the library refuses past kMaxSimilarities once the tokens are known.
  const size_t question_words = text::split_words(question).size();
  // Every sentence of the reply repeats its document's title and id: a 50 KB title over 4,000
  // sentences made a 74 KB request a 200 MB reply. Counted (JSON may write a byte as six), and
  // refused when that alone passes the reply limit.
  size_t echoed = 0;
  for (const Document& d : docs) echoed += (d.title.size() + d.id.size()) * d.sentences.size();
  if (echoed > kMaxResponseBytes)
    bad("the reply would repeat the documents' titles and ids in each of their sentences, " +
            std::to_string(echoed) + " bytes, above the limit of " +
            std::to_string(kMaxResponseBytes) + " (shorter titles and ids, or fewer sentences)",
        "response_too_large");
  ReplyBudget::Hold hold = reply_budget().reserve(
      sentences * kSpotlightBytesPerSentence + 6 * echoed +
      std::min(question_words, spotlight::kMaxSimilarities) * sentences * kSpotlightBytesPerMatch);
  // The request's part of `spotlight select`'s declared options (select_options.h: K, k, lambda,
  // order, special_tokens, with the CLI's and Python's defaults and ranges) over the defaults of
  // `ragform spotlight select` (scoring.h default_score_params), so the endpoint and the command
  // select the same sentences for the same request. The encoder is the server's own.
  ScoreOptions so;
  PromptOptions po;
  read_declared(j, so);
  read_declared(j, po);
  try {
    check_score_options(so);
    check_prompt_options(po);
  } catch (const OptionError& e) {
    bad("'" + e.key() + "': " + e.why());
  }
  ScoreParams sp = score_params(so, default_score_params());
  // Absent or null is the default (idf); "" is not a value here, as the CLI refuses it (pass
  // 17: HTTP took "" for idf).
  std::string alpha = get_str(j, "alpha", false);
  if (j.contains("alpha") && j["alpha"].is_string() && alpha != "idf" && alpha != "uniform")
    bad("'alpha' must be \"idf\" or \"uniform\", got '" + printable(excerpt(alpha)) + "'");
  sp.alpha = alpha == "uniform" ? Alpha::Uniform : Alpha::Idf;
  const SelectParams sel = select_params(so, po);

  ScoredQuestion sq;
  if (opt_.spotlight_encoder == "hidden") {
    // The served model's hidden states: on the engine thread, like every use of the model.
    engine_
        .run([&] {
          HiddenEncoder enc(reader_, opt_.spotlight_layer);
          sq = score_question(enc, question, docs, sp);
        })
        .get();
  } else if (opt_.spotlight_encoder == "model" && opt_.spotlight_model) {
    ModelEncoder enc(*opt_.spotlight_model);  // the encoder serialises its own calls
    sq = score_question(enc, question, docs, sp);
  } else if (opt_.vectors) {
    StaticEncoder enc(*opt_.vectors, OovPolicy::Match);
    sq = score_question(enc, question, docs, sp);
  } else {
    bad("this server has no SpotlightRAG encoder: start it with --vectors FILE or "
        "--spotlight-encoder hidden",
        "not_configured");
  }
  Selection s = select_and_annotate(question, docs, sq, sel);
  // The object `spotlight select --json` prints for the same selection (selection_json.h).
  SelectionJsonOptions layout;
  layout.round9 = true;
  Response r;
  r.body = selection_json(qid, s, layout)
               .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (r.body.size() > kMaxResponseBytes)
    bad("the reply would be " + std::to_string(r.body.size()) + " bytes, above the limit of " +
            std::to_string(kMaxResponseBytes) + " (fewer documents or sentences)",
        "response_too_large");
  return held_reply(std::move(r), std::move(hold));
}

}  // namespace ragform::server

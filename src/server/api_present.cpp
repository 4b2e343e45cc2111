#include "server/api_present.h"

#include <nlohmann/json.hpp>

#include "base/json_release.h"
#include "eval/jsonl.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/reply_budget.h"
#include "server/router.h"
#include "tune/present.h"

namespace ragform::server {

using namespace api_json;

namespace {

// What a /v1/rag/present reply and its tree take while built, per byte of the request's body: a
// 1 MB body of 19,000 short records gave an 8 MB reply (7.7x), and replies of other records 38x
// (60 clients that never read them peaked at 734 MB while 16x was reserved).
constexpr size_t kPresentReplyBytesPerBodyByte = 64;

// One record, its errors named by the request field it came from.
nlohmann::ordered_json present_one(const json& record, const tune::Profile& prof,
                                   reader::Reader* counter, const std::string& where,
                                   size_t place) {
  try {
    return tune::presented_json(tune::present(record, prof, counter, {place, ""}), prof);
  } catch (const eval::RowError& e) {
    bad(where + ": " + e.what());
  }
  return {};  // not reached: bad() throws
}

Response present(RequestBody& body, reader::Reader* counter) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  // present's one declared option, "profile" (tune/present.h PresentRequest): a path for the CLI
  // and Python, here the file's JSON (a client names no server-side file), so it is read here
  // rather than by read_declared.
  if (!j.contains("profile") || !j["profile"].is_object())
    bad("'profile' must be the object of a profile file from `ragform tune`",
        j.contains("profile") ? "invalid_type" : "missing_field");
  // profile_from_json names the bad field; check_profile what cannot render. Both become a 400.
  const tune::Profile prof = tune::profile_from_json(j["profile"], "request 'profile'");
  tune::check_profile(prof);
  const bool one = j.contains("record"), many = j.contains("records");
  if (one == many)
    bad("give exactly one of 'record' (an object) or 'records' (an array of objects)",
        one ? "invalid_request" : "missing_field");
  // The reply repeats each record's documents in its prompt and its document list (1 MB of short
  // records gave 8 MB, and 150 clients that never read such replies ended a server): reserved in
  // the reply budget before it is built, held until it is written (reply_budget.h).
  ReplyBudget::Hold hold = reply_budget().reserve(body.bytes * kPresentReplyBytesPerBodyByte);
  nlohmann::ordered_json out;
  if (one) {
    out = present_one(j["record"], prof, counter, "record", 1);
  } else {
    if (!j["records"].is_array()) bad("'records' must be an array of objects", "invalid_type");
    nlohmann::ordered_json data = nlohmann::ordered_json::array();
    for (size_t i = 0; i < j["records"].size(); ++i)
      data.push_back(
          present_one(j["records"][i], prof, counter, "records[" + std::to_string(i) + "]", i + 1));
    out = {{"object", "list"}, {"data", std::move(data)}};
  }
  Response r;
  // Keys in the order the CLI prints them (api_json's dump would sort them).
  r.body = out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  out = nullptr;
  return held_reply(std::move(r), std::move(hold));
}

}  // namespace

// One record presented, as `ragform present --json` prints it (tune::presented_json).
#define RAGFORM_PRESENTED                                                                                      \
  R"({"type": "object", "required": ["id", "prompt", "documents", "gold_position", "task", "presentation"],)"  \
  R"( "properties": {"id": {"type": "string"}, "prompt": {"type": "string"}, "documents": {"type": "array"},)" \
  R"( "task": {"type": "string"}, "prompt_tokens": {"type": "integer", "description": "with the served model"}}})"

const RouteSpec kPresent{
    .method = "POST",
    .paths = {"/v1/rag/present"},
    .summary = "A profile from `ragform tune` applied to records (ragform present --json)",
    .description = "Exactly one of record or records.",
    .request = R"({"type": "object", "required": ["profile"], "properties": {
      "profile": {"type": "object", "description": "a profile file's JSON from `ragform tune`"},
      "record": {"type": "object", "description": "one record: id, question, answers, ctxs"},
      "records": {"type": "array", "items": {"type": "object"}}}})",
    .response = R"({"oneOf": [)" RAGFORM_PRESENTED R"(,
      {"type": "object", "required": ["object", "data"], "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": )" RAGFORM_PRESENTED
                R"(}}}]})",
};
#undef RAGFORM_PRESENTED

void add_present_route(Router& router, reader::Reader* counter) {
  router.add(kPresent,
             [counter](const Request&, RequestBody& body) { return present(body, counter); });
}

void declare_present_route(Router& router) { router.add(kPresent, nullptr); }

}  // namespace ragform::server

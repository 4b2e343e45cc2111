#include "server/router.h"

#include <filesystem>
#include <stdexcept>

#include "base/error.h"
#include "base/json_release.h"
#include "base/memory_limit.h"
#include "server/api_json.h"
#include "server/request_fields.h"

namespace ragform::server {

using namespace api_json;

Router::Router(std::string api_key) : key_(std::move(api_key)) {}

void Router::add(const RouteSpec& spec, Handler handler) {
  for (const std::string* text : {&spec.request, &spec.response}) try {
      if (!text->empty()) nlohmann::json parsed = nlohmann::json::parse(*text);
    } catch (const nlohmann::json::exception& e) {
      throw Error("serve", "the schema of " + spec.method + " " +
                               (spec.paths.empty() ? "" : spec.paths[0]) +
                               " is not JSON: " + e.what());
    }
  auto shared = std::make_shared<const RouteSpec>(spec);
  auto fields = std::make_shared<const std::set<std::string>>(declared_fields(spec.request));
  for (const std::string& p : spec.paths) {
    for (const Route& r : routes_)
      if (r.path == p) throw Error("serve", "two endpoints for " + p);
    routes_.push_back({spec.method, p, handler, shared, fields});
  }
}

void Router::hint(const std::vector<std::string>& paths, const std::string& why) {
  for (const std::string& p : paths) hints_.emplace_back(p, why);
}

namespace {
// The part of a route's path before its parameter ("/v1/models/" of "/v1/models/{model}"), or
// npos for an exact path.
size_t parameter_at(const std::string& route_path) {
  const size_t open = route_path.find('{');
  return open != std::string::npos && route_path.back() == '}' ? open : std::string::npos;
}
}  // namespace

const Router::Route* Router::find(const std::string& path, std::string* parameter) const {
  for (const Route& r : routes_)
    if (r.path == path) return &r;
  const Route* best = nullptr;
  size_t best_len = 0;
  for (const Route& r : routes_) {
    const size_t at = parameter_at(r.path);
    if (at == std::string::npos || path.size() <= at || path.compare(0, at, r.path, 0, at) != 0)
      continue;
    if (!best || at > best_len) best = &r, best_len = at;
  }
  if (best && parameter) *parameter = path.substr(best_len);
  return best;
}

std::string Router::not_found(const std::string& path) const {
  std::string why = default_hint_;
  for (const auto& [p, w] : hints_)
    if (p == path) why = w;
  return "no endpoint " + path + (why.empty() ? "" : " (" + why + ")");
}

void Router::hide(const std::vector<std::string>& server_paths) {
  for (const std::string& p : server_paths) {
    if (p.empty()) continue;
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(p, ec);
    const std::string name = std::filesystem::path(p).filename().string();
    // The absolute form first: it contains the relative one as a suffix.
    if (!ec && abs.string() != p) hidden_.emplace_back(abs.string(), name);
    hidden_.emplace_back(p, name);
  }
}

Response Router::handle(const Request& req) const noexcept {
  // The memory reserve (base/memory_limit.h) spent by an allocation that failed in an earlier
  // request is taken again once that request's memory is back.
  if (memory_reserve_spent()) refill_memory_reserve();
  try {
    return dispatch(req);
  } catch (...) {
    return response_for_current_exception(hidden_);
  }
}

Response Router::dispatch(const Request& req) const {
  std::string parameter;
  const Route* r = find(req.path, &parameter);
  if (!r || r->spec->access == Access::Key) require_api_key(req, key_);
  if (!r) throw ApiError{404, not_found(req.path), "invalid_request_error", "not_found"};
  // httplib answers HEAD through the GET handlers (and drops the body).
  const bool same = req.method == r->method || (r->method == "GET" && req.method == "HEAD");
  if (!same) {
    // RFC 9110 section 15.5.6: a 405 names the methods the path takes.
    Response no = error_response(405, "use " + r->method, "invalid_request_error");
    no.headers.emplace_back("Allow", r->method == "GET" ? "GET, HEAD" : r->method);
    return no;
  }
  if (!r->handler) throw std::logic_error(r->method + " " + r->path + " is declared, not served");
  if (req.multipart)
    throw ApiError{400, kMultipartRefusal, "invalid_request_error", "invalid_json"};
  const std::shared_ptr<void> admitted = admit_ ? admit_(req) : nullptr;
  RequestBody body;
  body.bytes = req.body.size();
  body.path_parameter = std::move(parameter);
  ReleaseAtExit release(body.json);  // base/json_release.h: before `admitted` ends
  if (!r->spec->request.empty()) {
    body.json = parse_body(req.body);
    drop_null_fields(body.json);
    check_request_fields(body.json, *r->fields, r->method + " " + r->path);
  }
  return r->handler(req, body);
}

std::vector<Router::Entry> Router::table() const {
  std::vector<Entry> out;
  for (const Route& r : routes_) out.push_back({r.method, r.path, r.spec});
  return out;
}

std::vector<std::string> Router::routes() const {
  std::vector<std::string> out;
  for (const Route& r : routes_) out.push_back(r.method + " " + r.path);
  return out;
}

}  // namespace ragform::server

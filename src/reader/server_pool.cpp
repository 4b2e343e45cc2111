#include "reader/server_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/json_file.h"

namespace ragform::reader {

using nlohmann::json;

HttpEndpoint::HttpEndpoint(const std::string& base_url, const char* who, std::string api_key,
                           int timeout_s)
    : http_(base_url, who), api_key_(std::move(api_key)), timeout_s_(timeout_s) {}

HttpAnswer HttpEndpoint::post(const std::string& endpoint, const std::string& body) const {
  return http_.send_once(endpoint, &body, api_key_, timeout_s_);
}

HttpAnswer HttpEndpoint::get(const std::string& endpoint) const {
  // A model list is small and quick: a server that takes longer is as good as down.
  return http_.send_once(endpoint, nullptr, api_key_, std::min(timeout_s_, 30));
}

std::vector<std::string> split_url_list(const std::string& list) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= list.size()) {
    size_t e = list.find(',', b);
    if (e == std::string::npos) e = list.size();
    std::string item = list.substr(b, e - b);
    const size_t first = item.find_first_not_of(" \t");
    const size_t last = item.find_last_not_of(" \t");
    if (first != std::string::npos) out.push_back(item.substr(first, last - first + 1));
    b = e + 1;
  }
  return out;
}

std::vector<std::string> served_models(const std::string& models_body) {
  std::vector<std::string> out;
  const json j = parse_json_or_discarded(models_body);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array())
    return out;
  for (const json& m : j["data"]) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) continue;
    // A server's answer is not trusted: an owned_by that is not a string is left out (nlohmann's
    // value() threw type_error.302 for a number, with no word of which server said it).
    const std::string owner =
        m.contains("owned_by") && m["owned_by"].is_string() ? m["owned_by"].get<std::string>() : "";
    out.push_back(m["id"].get<std::string>() + (owner.empty() ? "" : " (" + owner + ")"));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string reported_sha256(const std::string& models_body) {
  const json j = parse_json_or_discarded(models_body);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array()) return "";
  std::vector<std::string> out;
  for (const json& m : j["data"]) {
    if (!m.is_object() || !m.contains("ragform") || !m["ragform"].is_object()) continue;
    const json& r = m["ragform"];
    if (!r.contains("model_sha256") || !r["model_sha256"].is_string()) continue;
    const std::string id =
        m.contains("id") && m["id"].is_string() ? m["id"].get<std::string>() : "";
    out.push_back(id + "=" + r["model_sha256"].get<std::string>());
  }
  if (out.size() == 1) return out[0].substr(out[0].find('=') + 1);
  std::sort(out.begin(), out.end());
  std::string s;
  for (const auto& x : out) s += (s.empty() ? "" : ", ") + x;
  return s;
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return "[" + s + "]";
}

bool client_refused(const HttpAnswer& a) { return a.status == 401 || a.status == 403; }

}  // namespace

ServerPool::ServerPool(std::vector<std::unique_ptr<Endpoint>> servers, PoolOptions opt)
    : opt_(std::move(opt)) {
  if (servers.empty()) throw UsageError("openai reader", "no server URL given");
  opt_.per_server = std::max(1, opt_.per_server);
  opt_.retries = std::max(0, opt_.retries);
  for (auto& ep : servers) {
    Server s;
    s.ep = std::move(ep);
    servers_.push_back(std::move(s));
  }
}

std::vector<std::string> ServerPool::names() const {
  std::vector<std::string> out;
  for (const auto& s : servers_) out.push_back(s.ep->name());
  return out;
}

std::vector<int64_t> ServerPool::answered() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> out;
  for (const auto& s : servers_) out.push_back(s.answered);
  return out;
}

double ServerPool::now() const {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void ServerPool::note(const std::string& line) const {
  if (opt_.note)
    opt_.note(line);
  else
    std::fprintf(stderr, "ragform: note: %s\n", line.c_str());
}

void ServerPool::mark_down(int s, const HttpAnswer& a) {
  Server& sv = servers_[s];
  sv.retry_at = now() + opt_.recheck_s;
  if (sv.down) return;
  sv.down = true;
  // One server has nobody to hand over to: its failures are the request's error, as ever.
  if (servers_.size() < 2) return;
  const bool others = std::any_of(servers_.begin(), servers_.end(), [](const Server& o) {
    return !o.down && o.check != Check::refused;
  });
  note("server " + sv.ep->name() + " is down (" + a.error + "); " +
       (others ? "the other servers take its requests" : "no server answers"));
}

int ServerPool::acquire(const std::vector<bool>& tried, bool& probe) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const double t = now();
    int best_up = -1, best_down = -1;
    bool any = false, any_up = false;
    for (int s = 0; s < int(servers_.size()); ++s) {
      const Server& sv = servers_[s];
      if (tried[s] || sv.check == Check::refused) continue;
      any = true;
      const bool up = !sv.down || t >= sv.retry_at;
      any_up = any_up || up;
      if (sv.in_flight >= opt_.per_server) continue;
      int& best = up ? best_up : best_down;
      if (best < 0 || sv.in_flight < servers_[best].in_flight) best = s;
    }
    if (!any) return -1;
    // A down server takes a request only when no server that answers is left to try (all
    // down: the request fails as with one server, after its rounds).
    const int s = best_up >= 0 ? best_up : (any_up ? -1 : best_down);
    if (s >= 0) {
      Server& sv = servers_[s];
      probe = sv.down;
      if (sv.down) sv.retry_at = t + opt_.recheck_s;  // one probe of a down server at a time
      ++sv.in_flight;
      return s;
    }
    // Every candidate is busy: wait for a slot (or for a down server's recheck time).
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

void ServerPool::release(int s, const HttpAnswer* a, bool probe) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Server& sv = servers_[s];
    --sv.in_flight;
    if (!a) {
      // No request went out (the server was left out): nothing learnt about it.
    } else if (a->ok()) {
      ++sv.answered;
      // Only a request sent while it was down says it is back: one sent before, answered
      // late (a stopping server finishes its requests under way), does not.
      if (sv.down && probe) {
        sv.down = false;
        if (servers_.size() > 1) note("server " + sv.ep->name() + " answers again");
      }
    } else if (a->status == 0 || a->status >= 500) {
      mark_down(s, *a);
    }
  }
  cv_.notify_all();
}

std::string ServerPool::compare_models(int s, const HttpAnswer& a) {
  const std::vector<std::string> mine = served_models(a.body);
  if (mine.empty()) return "names no model in its /models answer, so its model is unknown";
  if (reference_ < 0 || reference_ == s) {
    reference_ = s;
    return "";
  }
  const Server& ref = servers_[reference_];
  const std::vector<std::string> theirs = served_models(ref.models->body);
  if (mine == theirs) return "";
  return "serves " + join(mine) + ", but " + ref.ep->name() + " serves " + join(theirs);
}

std::optional<std::string> ServerPool::probe_of(int s, HttpAnswer& failure) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (servers_[s].probe) return servers_[s].probe;
  }
  HttpAnswer a = servers_[s].ep->post(opt_.probe_endpoint, opt_.probe_body);
  if (!a.ok()) {
    failure = a;
    return std::nullopt;
  }
  std::string text;
  try {
    text = opt_.probe_answer ? opt_.probe_answer(a.body) : a.body;
  } catch (const std::exception& e) {
    failure = a;
    failure.status = 200;
    failure.error = std::string("an answer of another shape (") + e.what() + ")";
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(mu_);
  servers_[s].probe = text;
  return text;
}

namespace {
std::string short_hash(const std::string& h) {
  return h.size() > 16 && h.find(',') == std::string::npos ? h.substr(0, 16) + "..." : excerpt(h);
}
std::string quoted_answer(const std::string& t) { return "\"" + excerpt(t, 80) + "\""; }
}  // namespace

ServerPool::Verdict ServerPool::examine(int s) {
  Verdict v;
  HttpAnswer m = servers_[s].ep->get("/models");
  if (client_refused(m)) throw RequestFailed(m.error, m.status, 1);
  if (m.transient()) {
    v.kind = Verdict::no_answer;
    v.failure = m;
    return v;
  }
  if (!m.ok()) {
    v.kind = Verdict::differs;
    v.why = "answers /models with " + m.error + ", so its model is unknown";
    return v;
  }
  v.models = m;
  v.sha256 = reported_sha256(m.body);
  int ref = -1;
  std::string ref_name, ref_sha;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool first = reference_ < 0;
    if (first) {
      // The reference's list and hash are there for every server compared with it from now on.
      servers_[s].models = m;
      servers_[s].sha256 = v.sha256;
    }
    v.why = compare_models(s, m);
    if (!v.why.empty()) {
      v.kind = Verdict::differs;
      return v;
    }
    if (reference_ == s) return v;
    ref = reference_;
    ref_name = servers_[ref].ep->name();
    ref_sha = servers_[ref].sha256;
  }
  // The same model id: are they the same weights? The hashes when both servers report one.
  if (!v.sha256.empty() && !ref_sha.empty()) {
    if (v.sha256 != ref_sha) {
      v.kind = Verdict::differs;
      v.why = "serves the same model id with other weights: its /models reports model sha256 " +
              short_hash(v.sha256) + ", " + ref_name + "'s " + short_hash(ref_sha) +
              " (the hashes differ)";
    }
    return v;
  }
  if (opt_.probe_endpoint.empty()) return v;  // nothing more to compare
  // Else the probe: the same request to both, whose greedy answers must be equal.
  HttpAnswer failure;
  const std::optional<std::string> mine = probe_of(s, failure);
  if (!mine) {
    if (client_refused(failure)) throw RequestFailed(failure.error, failure.status, 1);
    v.kind = failure.transient() ? Verdict::no_answer : Verdict::differs;
    v.failure = failure;
    v.why = "answers the weights probe (POST " + opt_.probe_endpoint + ") with " + failure.error +
            ", so its weights cannot be compared with " + ref_name + "'s";
    return v;
  }
  const std::optional<std::string> theirs = probe_of(ref, failure);
  if (!theirs) {
    if (client_refused(failure)) throw RequestFailed(failure.error, failure.status, 1);
    // The reference did not answer now: s is checked again when next reached.
    v.kind = failure.transient() ? Verdict::no_answer : Verdict::differs;
    v.failure = failure;
    v.why = "cannot be compared with " + ref_name + ", which answers the weights probe (POST " +
            opt_.probe_endpoint + ") with " + failure.error;
    return v;
  }
  if (*mine != *theirs) {
    const std::string why_probe =
        v.sha256.empty() && ref_sha.empty() ? "neither server reports a model sha256 in /models"
        : v.sha256.empty()                  ? "it reports no model sha256 in /models"
                                            : ref_name + " reports no model sha256 in /models";
    v.kind = Verdict::differs;
    v.why =
        "serves the same model id with other weights or settings: its greedy answer to the "
        "weights probe is " +
        quoted_answer(*mine) + ", " + ref_name + "'s " + quoted_answer(*theirs) +
        " (the probe answers differ; " + why_probe + ")";
  }
  return v;
}

bool ServerPool::settle(int s, const Verdict& v) {
  Server& sv = servers_[s];
  if (v.kind == Verdict::same) {
    sv.models = v.models;
    sv.sha256 = v.sha256;
    sv.check = Check::same;
    return true;
  }
  if (sv.models && reference_ != s) sv.models.reset();
  sv.check = Check::refused;
  return false;
}

bool ServerPool::checked(int s, HttpAnswer& a) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (servers_.size() == 1) return true;  // nothing to compare with
    if (servers_[s].check != Check::unchecked) return servers_[s].check == Check::same;
  }
  const Verdict v = examine(s);
  std::lock_guard<std::mutex> lock(mu_);
  Server& sv = servers_[s];
  if (sv.check != Check::unchecked) return sv.check == Check::same;  // another thread checked
  if (v.kind == Verdict::no_answer) {
    a = v.failure;  // down: release() marks it, the next check is at its next request
    return false;
  }
  if (settle(s, v)) return true;
  note("server " + sv.ep->name() + " " + v.why +
       "; it is left out (every --base-url must serve the same model)");
  return false;
}

void ServerPool::check_all() {
  if (servers_.size() < 2) return;
  for (int s = 0; s < int(servers_.size()); ++s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (servers_[s].check != Check::unchecked) continue;
    }
    const Verdict v = examine(s);
    std::lock_guard<std::mutex> lock(mu_);
    Server& sv = servers_[s];
    if (v.kind == Verdict::no_answer) {
      mark_down(s, v.failure);  // checked when first reached
      continue;
    }
    if (!settle(s, v))
      throw Error("openai reader", "server " + sv.ep->name() + " " + v.why +
                                       ": every --base-url must serve the same model");
  }
}

std::optional<HttpAnswer> ServerPool::models_answer() {
  std::vector<int> order;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : servers_)
      if (s.models) return s.models;
    // Servers that answer first: a down one may cost a timeout.
    for (int s = 0; s < int(servers_.size()); ++s)
      if (servers_[s].check != Check::refused && !servers_[s].down) order.push_back(s);
    for (int s = 0; s < int(servers_.size()); ++s)
      if (servers_[s].check != Check::refused && servers_[s].down) order.push_back(s);
  }
  std::optional<HttpAnswer> last;
  for (int s : order) {
    HttpAnswer a = servers_[s].ep->get("/models");
    if (a.status == 0) continue;
    if (!a.transient()) return a;
    last = a;
  }
  return last;
}

std::string ServerPool::post(const std::string& endpoint, const std::string& body) {
  const size_t n = servers_.size();
  std::vector<bool> tried(n, false);
  HttpAnswer last;
  last.error = "every server was left out (none serves the same model as the first)";
  int attempts = 0;
  for (int round = 0;;) {
    bool probe = false;
    const int s = acquire(tried, probe);
    if (s < 0) {
      if (round >= opt_.retries || attempts == 0) break;
      ++round;
      const double delay = retry_delay_s(opt_.backoff_s, round);
      std::this_thread::sleep_for(std::chrono::milliseconds(int64_t(delay * 1000)));
      tried.assign(n, false);
      continue;
    }
    tried[s] = true;
    HttpAnswer a;
    bool go = false;
    try {
      go = checked(s, a);
    } catch (...) {
      release(s, nullptr, probe);
      throw;
    }
    if (go) a = servers_[s].ep->post(endpoint, body);
    const bool sent = go || !a.error.empty();  // the request, or the model check, went out
    attempts += sent;
    release(s, sent ? &a : nullptr, probe);
    if (a.ok()) return std::move(a.body);
    if (!sent) continue;
    last = a;
    if (!a.transient()) throw_refusal(a, attempts);
  }
  std::string where = n > 1 ? " on " + std::to_string(n) + " servers" : "";
  if (attempts == 0) throw RequestFailed(last.error, last.status, 0);
  throw RequestFailed(
      last.error + " (after " + std::to_string(attempts) + " attempts" + where + ")", last.status,
      attempts);
}

}  // namespace ragform::reader

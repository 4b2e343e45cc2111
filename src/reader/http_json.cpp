#include "reader/http_json.h"

// Debian's cpp-httplib is a compiled library built with OpenSSL, zlib and brotli support; the
// build passes its pkg-config flags (CPPHTTPLIB_*_SUPPORT) so this header matches the library.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/excerpt.h"
#include "base/json_error.h"
#include "base/json_file.h"

namespace ragform::reader {

using nlohmann::json;

HttpJsonClient::HttpJsonClient(const std::string& u, const char* who) : who_(who) {
  const size_t scheme_end = u.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : u.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    throw UsageError(
        who, "base URL '" + excerpt(redact_url(u)) + "' must start with http:// or https://");
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (scheme == "https")
    throw UsageError(who,
                     "this build has no HTTPS support (cpp-httplib without OpenSSL); use http://");
#endif
  // The host starts after the userinfo, whose password may hold a '/' (base/excerpt.h).
  const size_t at = userinfo_end(u, scheme_end + 3);
  const size_t host = at == std::string::npos ? scheme_end + 3 : at + 1;
  // A query or a fragment is refused, unquoted: "?api_key=sk-..." is a secret that every message
  // naming the URL would print, and the path of every request would carry it
  // ("/v1?api_key=.../completions").
  if (u.find_first_of("?#", host) != std::string::npos)
    throw UsageError(who,
                     "the base URL (--base-url, base_url=) holds a query string or a fragment ('?' "
                     "or '#'), which is not accepted (not quoted here: it may hold a key); give "
                     "http(s)://host[:port][/path] and the key through --api-key-env, "
                     "OPENAI_API_KEY or RAGFORM_API_KEY");
  const size_t path = u.find('/', host);
  scheme_host_port_ = u.substr(0, path);
  prefix_ = path == std::string::npos ? "/v1" : u.substr(path);
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
}

void check_api_key(const std::string& key) {
  for (const char c : key)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw UsageError("api_key",
                       "the key holds a control character (CR, LF, NUL, ...), which an HTTP "
                       "header cannot carry (the key is not shown)");
}

HttpAnswer HttpJsonClient::send_once(const std::string& endpoint, const std::string* body,
                                     const std::string& api_key, int timeout_s) const {
  check_api_key(api_key);
  httplib::Headers headers;
  if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
  httplib::Client cli(scheme_host_port_);
  cli.set_connection_timeout(timeout_s, 0);
  cli.set_read_timeout(timeout_s, 0);
  cli.set_write_timeout(timeout_s, 0);
  httplib::Request req;
  req.method = body ? "POST" : "GET";
  req.path = prefix_ + endpoint;
  req.headers = std::move(headers);
  if (body) {
    req.headers.emplace("Content-Type", "application/json");
    req.body = *body;
  }
  // The body is read up to kMaxAnswerBytes: an announced length over it stops before the body,
  // a longer body stops at the byte past it.
  std::string got;
  int status = 0;
  bool oversized = false;
  std::string announced;  // an oversized Content-Length
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    const std::string n = r.get_header_value("Content-Length");
    if (!n.empty() && n.size() <= 20 &&
        std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const size_t first = n.find_first_not_of('0');
      if (first != std::string::npos &&
          (n.size() - first > 18 || std::stoull(n.substr(first)) > kMaxAnswerBytes)) {
        oversized = true;
        announced = n.substr(first);
      }
    }
    return !oversized;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (got.size() + n > kMaxAnswerBytes) {
      oversized = true;
      return false;
    }
    got.append(data, n);
    return true;
  };
  auto res = cli.send(req);
  HttpAnswer a;
  if (oversized) {
    a.status = status;
    a.oversized = true;
    a.error = "the answer of " + redact_url(scheme_host_port_ + prefix_ + endpoint) + " (HTTP " +
              std::to_string(status) + ") is larger than " + std::to_string(kMaxAnswerBytes >> 20) +
              " MiB, the most a remote answer may hold (kMaxAnswerBytes)" +
              (announced.empty() ? std::string(": not read past that")
                                 : ": it announces " + announced + " bytes");
    return a;
  }
  if (!res) {
    // A URL's user:password@ is not printed (a log is not the place for credentials).
    a.error = "no answer from " + redact_url(scheme_host_port_ + prefix_ + endpoint) + " (" +
              httplib::to_string(res.error()) + ")";
    return a;
  }
  a.status = res->status;
  a.body = std::move(got);
  if (!a.ok()) {
    // A server may quote the request's "Authorization: Bearer KEY" in its error ("bad key:
    // Bearer KEY"): the key is taken out of the message, before it is cut, so no message,
    // exception or stored row carries it. (The body stays as sent, for is_context_overflow: a
    // short key replaced in it could break its JSON.)
    a.error = "HTTP " + std::to_string(a.status) + " from " + prefix_ + endpoint + ": " +
              http_error_text(a.body, api_key);
  }
  return a;
}

double retry_delay_s(double backoff_s, int n) {
  return std::min(kMaxRetryDelayS, backoff_s * double(int64_t(1) << std::clamp(n - 1, 0, 30)));
}

std::string HttpJsonClient::post(const std::string& endpoint, const std::string& body,
                                 const HttpJsonOptions& opt) const {
  const int retries = std::max(0, opt.retries);
  HttpAnswer last;
  last.error = "no attempt";
  for (int attempt = 0; attempt <= retries; ++attempt) {
    if (attempt > 0) {
      const double delay = retry_delay_s(opt.backoff_s, attempt);
      std::this_thread::sleep_for(std::chrono::milliseconds(int64_t(delay * 1000)));
    }
    last = send_once(endpoint, &body, opt.api_key, opt.timeout_s);
    if (last.ok()) return std::move(last.body);
    // A prompt longer than the server's context is the prompt's property, not a failed request.
    if (last.status == 400 && is_context_overflow(last.body))
      throw ContextOverflow(who_, last.error);
    if (!last.transient()) throw RequestFailed(last.error, last.status, attempt + 1, who_);
  }
  throw RequestFailed(last.error + " (after " + std::to_string(retries + 1) + " attempts)",
                      last.status, retries + 1, who_);
}

void throw_refusal(const HttpAnswer& a, int attempts, const std::string& who) {
  // A prompt longer than the server's context is the prompt's property, not a failed request.
  if (a.status == 400 && is_context_overflow(a.body)) throw ContextOverflow(who, a.error);
  throw RequestFailed(a.error, a.status, attempts, who);
}

bool is_context_overflow(const std::string& body) {
  try {
    const json j = parse_json_text(body);
    if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return false;
    const json& e = j["error"];
    auto field = [&](const char* k) {
      return e.contains(k) && e[k].is_string() ? e[k].get<std::string>() : std::string();
    };
    return field("code") == "context_length_exceeded" ||       // OpenAI, ragform serve
           field("type") == "exceed_context_size_error" ||     // llama-server
           field("message").find("maximum context length") !=  // vLLM
               std::string::npos;
  } catch (...) {
    return false;
  }
}

std::string http_error_text(const std::string& body, const std::string& secret) {
  try {
    auto j = parse_json_text(body);
    if (j.contains("error")) {
      const auto& e = j["error"];
      // A server's message is quoted, not trusted to be short; the secret goes before the cut.
      if (e.is_object() && e.contains("message") && e["message"].is_string())
        return excerpt(redact_secret(e["message"].get<std::string>(), secret));
      if (e.is_string()) return excerpt(redact_secret(e.get<std::string>(), secret));
    }
  } catch (...) {
  }
  return excerpt(redact_secret(body, secret));
}

json parse_json_answer(const std::string& body, const char* what, const std::string& who) {
  try {
    return parse_json_text(body);
  } catch (const JsonTextError& e) {
    throw RequestFailed(std::string(what) + ": the server's answer is not JSON: " + e.what(), 200,
                        1, who);
  }
}

}  // namespace ragform::reader

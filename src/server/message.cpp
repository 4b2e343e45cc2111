#include "server/message.h"

#include <nlohmann/json.hpp>

#include "server/api_json.h"

namespace ragform::server {

namespace {
thread_local const std::function<bool()>* t_client_gone = nullptr;
}  // namespace

bool client_gone() { return t_client_gone && (*t_client_gone)(); }

ClientWatch::ClientWatch(std::function<bool()> gone)
    : gone_(std::move(gone)), outer_(t_client_gone) {
  t_client_gone = &gone_;
}

ClientWatch::~ClientWatch() { t_client_gone = outer_; }

std::string error_code(int status) {
  switch (status) {
    case 400:
      return "invalid_request";
    case 401:
      return "invalid_api_key";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 408:
      return "request_timeout";
    case 413:
      return "request_too_large";
    case 414:
      return "uri_too_long";
    case 500:
      return "internal_error";
    case 503:
      return "unavailable";
    default:
      return "http_" + std::to_string(status);
  }
}

Response error_response(int status, const std::string& message, const std::string& type,
                        const std::string& code) {
  Response r;
  r.status = status;
  r.body = api_json::dump({{"error",
                            {{"message", message},
                             {"type", type},
                             {"code", code.empty() ? error_code(status) : code}}}});
  return r;
}

}  // namespace ragform::server

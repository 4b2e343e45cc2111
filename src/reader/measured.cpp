#include "reader/measured.h"

#include "reader/http_json.h"

namespace ragform::reader {

int failure_status(const std::exception& e) {
  if (const auto* rf = dynamic_cast<const RequestFailed*>(&e)) return rf->status();
  return -1;
}

bool is_client_error(int status) { return status == 401 || status == 403 || status == 404; }

bool is_outage(const std::exception& e) {
  const int s = failure_status(e);
  return s == 0 || is_client_error(s) || s == 429 || s >= 500;
}

void MeasuredTally::failed(const std::string& error, int status) {
  ++failed_;
  client_errors_ += is_client_error(status);
  no_answer_ += status == 0;
  if (first_error_.empty()) {
    // One line: the message ends up as the front end's one-line error.
    first_error_ = error.empty() ? "unknown error" : error;
    for (char& c : first_error_)
      if (c == '\n' || c == '\r') c = ' ';
  }
}

bool MeasuredTally::hopeless() const {
  return measured_ == 0 && failed_ > 0 && client_errors_ + no_answer_ == failed_;
}

void MeasuredTally::check(const std::string& run, std::optional<int64_t> results) const {
  if (failed_ == 0) return;
  if (results.value_or(measured_) > 0 && client_errors_ < failed_) return;
  throw NothingMeasured(run, std::to_string(failed_) + " of " +
                                 std::to_string(failed_ + measured_) +
                                 " rows unmeasured: " + first_error_);
}

void MeasuredTally::fail_fast(const std::string& run) const {
  if (hopeless()) check(run);
}

}  // namespace ragform::reader

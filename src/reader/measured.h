// When a run through a reader succeeded: the one rule every runner that goes on past a failed
// row applies (sure prepare, perturb, filter and eval; SpotlightRAG's generation in reproduce), so
// that no front end (CLI, Python) reports success over a run that measured nothing. (C-NORM's
// runners stop at the first reader error; is_outage() keeps them from calling a server's failure
// a prompt that does not fit.)
//   - a *failure* is a row the reader could not answer (a failed request, a prompt over the
//     context, a judge without a verdict), stored as unmeasured;
//   - a *client error* is a request the server refused with 401, 403 or 404 (a wrong or missing
//     key, model or URL): no retry and no resume mends it;
//   - the run failed when something failed and nothing was measured, or when every failure is a
//     client error: check() throws NothingMeasured, whose message carries the first failure's (the
//     server's reason) on one line;
//   - otherwise it succeeded and unmeasured() rows wait for a resume (front ends print the count).
// hopeless() tells a runner to stop early: nothing measured yet and every failure so far a client
// error or a server that never answered (after its retries), so a run against a wrong key or a
// closed port fails after its first batch instead of trying every row.
#pragma once
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "base/error.h"

namespace ragform::reader {

// A run that measured nothing, or whose every failure is a client error.
// what(): "<run>: <failed> of <attempted> rows unmeasured: <first failure>".
class NothingMeasured : public Error {
 public:
  using Error::Error;
};

// The HTTP status of a failed request (RequestFailed::status(): 0 = no answer), or -1 when `e`
// is not a failed request (a prompt over the context, a bad answer, a judge without a verdict).
int failure_status(const std::exception& e);
// 401, 403 or 404.
bool is_client_error(int status);
// A failure that says nothing about the prompt: the server did not answer, refused the key,
// model or URL (a client error), or stayed overloaded or broken (429, 5xx) after the retries —
// as opposed to a refusal of this prompt (400, 413: e.g. longer than the server's context).
bool is_outage(const std::exception& e);

class MeasuredTally {
 public:
  void measured(int64_t n = 1) { measured_ += n; }
  // A row left unmeasured by `error` (the reader's message), with failure_status() of its cause.
  void failed(const std::string& error, int status);
  // A row left unmeasured by the exception `e`.
  void failed(const std::exception& e) { failed(e.what(), failure_status(e)); }

  int64_t measured_count() const { return measured_; }
  int64_t unmeasured() const { return failed_; }
  bool hopeless() const;
  // Throws NothingMeasured (what() begins with `run`) when the run failed by the rule above.
  // `results`: what the run's result counts when that is not its rows (sure eval's pairs, each
  // of three rows): none of them measured is nothing measured.
  void check(const std::string& run, std::optional<int64_t> results = std::nullopt) const;
  // Throws NothingMeasured when hopeless(): called by runners between batches.
  void fail_fast(const std::string& run) const;

 private:
  int64_t measured_ = 0, failed_ = 0, client_errors_ = 0, no_answer_ = 0;
  std::string first_error_;
};

}  // namespace ragform::reader

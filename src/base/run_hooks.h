// How long-running library code reports to its caller: notes for the user and the progress of its
// stages. It lives at the bottom of the layering so that every layer that does long work (the
// retrieval index build as well as the pipelines' runners, pipelines/common/run.h) reports the
// same way, and only a front end decides how it is shown (the CLI draws base/progress.h's line,
// Python calls its progress callback).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

namespace ragform {

// Every member may be empty: a caller that wants no notes or no progress leaves it unset.
struct RunHooks {
  std::function<void(const std::string&)> note;                         // one line for the user
  std::function<void(const std::string& label, uint64_t total)> begin;  // a stage starts
  std::function<void(uint64_t n)> advance;                              // n more steps of it done
  std::function<void()> end;                                            // the stage is over

  // note(line) when there is a note hook.
  void say(const std::string& line) const {
    if (note) note(line);
  }
};

// One progress stage: begin on construction, end on destruction (also when the work throws, so
// that the caller's progress line is closed before its error is printed). total = 0: unknown.
class Stage {
 public:
  Stage(const RunHooks& h, const std::string& label, uint64_t total);
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  void add(uint64_t n = 1) const;

 private:
  const RunHooks& h_;
};

}  // namespace ragform

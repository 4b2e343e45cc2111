// Progress of long work on stderr: "label  done/total  rate/s  ETA". Silent when stderr is not a
// terminal (logs and CI stay clean) unless forced or asked (Progress::set_mode, which the CLI sets
// from RAGFORM_PROGRESS=always|never|auto). On a terminal one line is redrawn in place at most ~10
// times a second; elsewhere (asked for) a plain line is appended at most every 2 seconds, and the
// final line always.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace ragform {

class Progress {
 public:
  enum class Mode { automatic, always, never };
  // The process-wide choice: automatic = only when stderr is a terminal.
  static void set_mode(Mode m);
  // total = 0 means unknown (no ETA shown).
  Progress(std::string label, uint64_t total, bool force = false);
  ~Progress();  // prints the final line (when enabled)
  void add(uint64_t n = 1);
  void set_total(uint64_t total);
  bool enabled() const { return enabled_; }
  // The text of the status line for `done` items after `seconds` (exposed for tests).
  static std::string format_line(const std::string& label, uint64_t done, uint64_t total,
                                 double seconds);

 private:
  void draw(bool final);
  std::string label_;
  std::atomic<uint64_t> total_;
  std::atomic<uint64_t> done_{0};
  bool enabled_;
  bool terminal_;  // redraw in place (\r) rather than append lines
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::mutex mu_;
};

}  // namespace ragform

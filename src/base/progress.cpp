#include "base/progress.h"

#include <unistd.h>
#include <cstdio>

namespace ragform {

namespace {
std::atomic<Progress::Mode> g_mode{Progress::Mode::automatic};
}

void Progress::set_mode(Mode m) { g_mode = m; }

Progress::Progress(std::string label, uint64_t total, bool force)
    : label_(std::move(label)), total_(total), terminal_(::isatty(STDERR_FILENO) != 0) {
  const Mode m = g_mode.load();
  enabled_ = m != Mode::never && (force || m == Mode::always || terminal_);
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() {
  if (enabled_) draw(true);
}

void Progress::set_total(uint64_t total) { total_ = total; }

void Progress::add(uint64_t n) {
  done_ += n;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (now - last_draw_ < std::chrono::milliseconds(terminal_ ? 100 : 2000)) return;
  last_draw_ = now;
  draw(false);
}

std::string Progress::format_line(const std::string& label, uint64_t done, uint64_t total,
                                  double seconds) {
  char buf[256];
  double rate = seconds > 0 ? done / seconds : 0.0;
  if (total > 0) {
    double eta = rate > 0 && done <= total ? (total - done) / rate : 0.0;
    std::snprintf(buf, sizeof buf, "%s  %llu/%llu  %.1f/s  ETA %dm%02ds", label.c_str(),
                  (unsigned long long)done, (unsigned long long)total, rate, int(eta) / 60,
                  int(eta) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%s  %llu  %.1f/s", label.c_str(), (unsigned long long)done,
                  rate);
  }
  return buf;
}

void Progress::draw(bool final) {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = format_line(label_, done_.load(), total_.load(), secs);
  if (terminal_)
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
  else
    std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace ragform

// RunHooks (base/run_hooks.h) that record every call, for the tests of the runner contract: a
// runner under test gets hooks(), and the test reads back what it reported, in order.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/run_hooks.h"

namespace ragform::testing {

struct RecordingHooks {
  // "begin <label> <total>", "advance <n>", "end", "note <text>", in the order of the calls.
  std::vector<std::string> events;
  uint64_t advanced = 0;  // the sum of every advance

  RunHooks hooks() {
    RunHooks h;
    h.note = [this](const std::string& s) { events.push_back("note " + s); };
    h.begin = [this](const std::string& label, uint64_t total) {
      events.push_back("begin " + label + " " + std::to_string(total));
    };
    h.advance = [this](uint64_t n) {
      advanced += n;
      events.push_back("advance " + std::to_string(n));
    };
    h.end = [this] { events.push_back("end"); };
    return h;
  }

  // The steps advanced between the event `begin` ("begin <label> <total>") and its "end"; -1 when
  // the stage is missing or not closed.
  long long steps(const std::string& begin) const {
    auto b = std::find(events.begin(), events.end(), begin);
    if (b == events.end()) return -1;
    long long n = 0;
    for (auto it = b + 1; it != events.end(); ++it) {
      if (*it == "end") return n;
      if (it->rfind("advance ", 0) == 0) n += std::stoll(it->substr(8));
    }
    return -1;
  }

  // How many events start with `prefix`.
  size_t count_prefix(const std::string& prefix) const {
    return size_t(std::count_if(events.begin(), events.end(),
                                [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }));
  }

  // The notes' texts, in order.
  std::vector<std::string> notes() const {
    std::vector<std::string> out;
    for (const auto& e : events)
      if (e.rfind("note ", 0) == 0) out.push_back(e.substr(5));
    return out;
  }
};

}  // namespace ragform::testing

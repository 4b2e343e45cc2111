#include "cli/run_hooks.h"

#include <cstdio>
#include <string>

namespace ragform::cli {

common::RunHooks cli_run_hooks(std::optional<Progress>* progress) {
  common::RunHooks h;
  h.note = [](const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); };
  h.begin = [progress](const std::string& label, uint64_t total) {
    progress->emplace(label, total);
  };
  h.advance = [progress](uint64_t n) {
    if (*progress) (*progress)->add(n);
  };
  h.end = [progress] { progress->reset(); };
  return h;
}

}  // namespace ragform::cli

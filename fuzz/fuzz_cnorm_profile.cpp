// libFuzzer target for C-NORM profiles (cnorm/calibrate.h): any byte string is a profile file that
// either loads or is refused with ragform::Error naming the field. A profile that loads must
// deploy: its format reformats a document (cnorm apply, /v1/rag/normalize) without throwing
// anything but ragform::Error, and it must survive save and reload (profile_to_json ->
// profile_from_json) with the same best delimiter, p, seed and S.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "fuzz_file.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/tasks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ragform;
  static fuzz::ScratchFile scratch(".json");
  cnorm::Profile p;
  try {
    p = cnorm::load_profile(scratch.write(data, size));
  } catch (const Error&) {
    return 0;
  }
  const std::string saved = cnorm::profile_to_json(p).dump(2);
  cnorm::Profile q;
  try {
    q = cnorm::profile_from_json(nlohmann::json::parse(saved), "reloaded");
  } catch (const Error&) {
    __builtin_trap();  // a profile we accepted must load again once saved
  }
  if (q.best.name != p.best.name || q.seed != p.seed || q.S != p.S || q.task != p.task ||
      q.candidates.size() != p.candidates.size() || q.best_wrapper != p.best_wrapper)
    __builtin_trap();
  const cnorm::Task task = cnorm::parse_task(p.task);
  const cnorm::Format f = cnorm::profile_format(p);
  static const char* kDocs[] = {
      "", "One sentence.", "Alpha beta gamma. Delta epsilon!\nZeta eta theta? Iota, kappa; lambda.",
      "key-123: value-456"};
  for (const char* d : kDocs) {
    try {
      volatile size_t sink = cnorm::format_text(task, d, f).size();
      (void)sink;
    } catch (const Error&) {
    }
  }
  return 0;
}

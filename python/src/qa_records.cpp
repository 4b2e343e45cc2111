#include "qa_records.h"

#include <optional>
#include <string>

#include "eval/datasets.h"

namespace ragform::py {

std::vector<eval::QaRecord> qa_records(const pyb::iterable& records) {
  std::vector<eval::QaRecord> out;
  std::optional<eval::Format> fmt;
  size_t i = 0;
  for (pyb::handle h : records) {
    ++i;
    nlohmann::json j = to_json(h);
    if (!fmt) {
      fmt = eval::detect_format(j);
      if (!fmt) {
        // The formats by name, and the one page that describes them: `ragform data check`
        // in docs/cli.md (which also checks a file of such records).
        std::string names;
        for (eval::Format k : eval::known_formats())
          names += std::string(names.empty() ? "" : ", ") + eval::format_name(k);
        throw UsageError("record " + std::to_string(i),
                         "its fields match no known QA format (" + names +
                             "; see `ragform data check` in docs/cli.md)");
      }
    }
    try {
      out.push_back(eval::to_qa_record(j, *fmt, {i, ""}));
    } catch (const eval::RowError& e) {
      throw UsageError("record " + std::to_string(i), e.what());
    }
  }
  return out;
}

}  // namespace ragform::py

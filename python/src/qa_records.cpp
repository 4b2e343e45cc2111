#include "qa_records.h"

#include <optional>
#include <string>

#include "eval/datasets.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::py {

std::vector<eval::QaRecord> qa_records(
    const pyb::iterable& records,
    const std::function<void(const nlohmann::json&, const eval::QaRecord&)>& each) {
  std::vector<eval::QaRecord> out;
  std::optional<eval::Format> fmt;
  size_t i = 0;
  for (pyb::handle h : records) {
    ++i;
    nlohmann::json j = to_json(h, "record " + std::to_string(i));
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
      if (each) each(j, out.back());
    } catch (const eval::RowError& e) {
      throw UsageError("record " + std::to_string(i), e.what());
    }
  }
  return out;
}

RecordsArg records_arg(const pyb::object& records, bool with_sha) {
  RecordsArg out;
  if (pyb::isinstance<pyb::str>(records) ||
      pyb::isinstance(records, pyb::module_::import("os").attr("PathLike"))) {
    const std::string path = pyb::str(pyb::module_::import("os").attr("fspath")(records));
    pyb::gil_scoped_release nogil;
    out.records = eval::load_qa_file(path).records;
    if (with_sha) out.sha256 = store::sha256_file(path);
  } else if (!records.is_none()) {
    out.records = qa_records(records);
    if (!with_sha) return out;
    std::string lines;
    for (pyb::handle h : records) lines += store::canonical_json(to_json(h)) + "\n";
    out.sha256 = lines.empty() ? "" : store::sha256_hex(lines);
  }
  return out;
}

}  // namespace ragform::py

// Writing a run store's report to a file, the use case `ragform report` and `ragform demo` share:
// the page is rendered (report.h), written to a new temporary file beside FILE and renamed to FILE
// (base/atomic_file.h), so a failed write never leaves half a report; errors name FILE and the
// reason, not the temporary file.
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "report/report.h"
#include "store/run_store.h"

namespace ragform::report {

struct WrittenReport {
  std::string path;        // the HTML file written
  std::string store_path;  // the run store rendered, as the caller named it
  ReportStats stats;
  size_t bytes = 0;
  // "report: N runs, M rows, C charts -> PATH"
  std::string summary_line() const;
  // {report, store, runs, rows, sections, charts, bytes}
  nlohmann::json to_json() const;
};

// Throws Error("<path>", "cannot write the report: <reason>").
WrittenReport write_report(const store::RunStore& st, const std::string& store_path,
                           const ReportOptions& opt, const std::string& path);

}  // namespace ragform::report

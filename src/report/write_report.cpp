#include "report/write_report.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_error.h"
#include "base/plural.h"

namespace ragform::report {

std::string WrittenReport::summary_line() const {
  return "report: " + count_of((long long)stats.runs, "run") + ", " +
         count_of((long long)stats.rows, "row") + ", " +
         count_of((long long)stats.charts, "chart") + " -> " + path;
}

nlohmann::json WrittenReport::to_json() const {
  return nlohmann::json{
      {"report", path},     {"store", store_path},        {"runs", stats.runs},
      {"rows", stats.rows}, {"sections", stats.sections}, {"charts", stats.charts},
      {"bytes", bytes}};
}

WrittenReport write_report(const store::RunStore& st, const std::string& store_path,
                           const ReportOptions& opt, const std::string& path) {
  WrittenReport w;
  w.path = path;
  w.store_path = store_path;
  std::string html;
  try {
    html = render_report(st, opt, &w.stats);
  } catch (const nlohmann::json::exception& e) {
    // A stored value the sections read without stored_value (sections.h): named as the store's,
    // without the JSON library's tag (pass 19).
    throw Error(store_path, "a stored run does not have the shape ragform writes: " +
                                json_error_text(e.what()));
  }
  w.bytes = html.size();
  // Written beside the target and renamed into place (base/atomic_file.h); the error names the
  // user's path and the reason, not the temporary file.
  try {
    write_file_atomically(path, html, "report");
  } catch (const FileError& e) {
    std::string why = std::strerror(e.error_code() ? e.error_code() : EIO);
    if (!why.empty()) why[0] = char(std::tolower(static_cast<unsigned char>(why[0])));
    throw Error(path, "cannot write the report: " + why);
  }
  return w;
}

}  // namespace ragform::report

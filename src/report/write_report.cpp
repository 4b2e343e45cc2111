#include "report/write_report.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
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
  const std::string html = render_report(st, opt, &w.stats);
  w.bytes = html.size();
  const std::string tmp = path + ".tmp";
  auto fail = [&](int err) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    std::string why = std::strerror(err);
    if (!why.empty()) why[0] = char(std::tolower(static_cast<unsigned char>(why[0])));
    throw Error(path, "cannot write the report: " + why);
  };
  {
    errno = 0;
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(errno ? errno : EIO);
    f.write(html.data(), std::streamsize(html.size()));
    if (!f.flush()) fail(errno ? errno : EIO);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) fail(ec.value());
  return w;
}

}  // namespace ragform::report

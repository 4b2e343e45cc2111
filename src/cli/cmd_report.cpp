// ragform report RUN.sqlite -o report.html: renders a run store as one self-contained HTML page
// (src/report/report.h): C-NORM, SURE and SpotlightRAG sections, per-instance drill-downs and the
// runs' metadata. Inline CSS and SVG only: no scripts, fonts or images from the network.
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/plural.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "report/report.h"
#include "store/run_store.h"

namespace ragform::cli {
namespace {

int run_report(const std::vector<std::string>& argv) {
  Args a(
      "report", "Render a run store as one self-contained HTML report.",
      "Sections appear for the runs the store holds: cnorm calibrate / cnorm eval (ABS per\n"
      "candidate, Figure 3, accuracy by gold position, OAA/OPA), sure eval (Figure 4 radar, Table\n"
      "1 layout, WR vs LR), spotlight eval (recall@K per method, selected sentences with their\n"
      "matches); each with a per-instance drill-down, then every run's metadata. Prints one JSON\n"
      "line: the output path, runs, rows and charts drawn.");
  auto& store_path = a.positional("RUN.sqlite", "the run store to render");
  auto& out = a.opt<std::string>("-o,--output", "FILE", "HTML file to write").required();
  auto& title = a.opt<std::string>("--title", "TEXT", "page title", "ragform report");
  auto& per_section = a.opt<int>("--instances", "N", "instances per section in the drill-down", 20);
  auto& resamples =
      a.opt<int>("--resamples", "N", "bootstrap resamples of SURE's RR CI", 1000).range(1, kMaxInt);
  if (!a.parse(argv)) return 0;
  store::RunStore st(*store_path.value, store::RunStore::Mode::read_only);
  report::ReportOptions opt;
  opt.title = title.value;
  opt.drilldown_instances = size_t(per_section.value);
  opt.resamples = size_t(resamples.value);
  report::ReportStats stats;
  std::string html = report::render_report(st, opt, &stats);
  // Written to a temporary file first, so a failed write never leaves half a report.
  // Errors name the user's -o path and the reason, not the temporary file.
  std::string tmp = out.value + ".tmp";
  auto fail = [&](int err) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    std::string why = std::strerror(err);
    if (!why.empty()) why[0] = char(std::tolower(static_cast<unsigned char>(why[0])));
    throw Error(out.value, "cannot write the report: " + why);
  };
  {
    errno = 0;
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) fail(errno ? errno : EIO);
    f.write(html.data(), std::streamsize(html.size()));
    if (!f.flush()) fail(errno ? errno : EIO);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out.value, ec);
  if (ec) fail(ec.value());
  std::fprintf(stderr, "report: %s, %s, %s -> %s\n", count_of((long long)stats.runs, "run").c_str(),
               count_of((long long)stats.rows, "row").c_str(),
               count_of((long long)stats.charts, "chart").c_str(), out.value.c_str());
  print_json_line(nlohmann::json{{"report", out.value},
                                 {"store", *store_path.value},
                                 {"runs", stats.runs},
                                 {"rows", stats.rows},
                                 {"sections", stats.sections},
                                 {"charts", stats.charts},
                                 {"bytes", html.size()}});
  return 0;
}

RAGFORM_COMMAND("report", "render a run store as one self-contained HTML report", run_report, 75);

}  // namespace
}  // namespace ragform::cli

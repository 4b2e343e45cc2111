// ragform report RUN.sqlite -o report.html: renders a run store as one self-contained HTML page
// (src/report/report.h): C-NORM, SURE and SpotlightRAG sections, per-instance drill-downs and the
// runs' metadata. Inline CSS and SVG only: no scripts, fonts or images from the network.
#include <cstdio>

#include "base/error.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "eval/stats.h"
#include "report/report.h"
#include "report/write_report.h"
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
  auto& resamples = a.opt<int>("--resamples", "N", "bootstrap resamples of SURE's RR CI", 1000)
                        .range(1, int(eval::kMaxResamples));
  if (!a.parse(argv)) return 0;
  store::RunStore st(*store_path.value, store::RunStore::Mode::read_only);
  report::ReportOptions opt;
  opt.title = title.value;
  opt.drilldown_instances = size_t(per_section.value);
  opt.resamples = size_t(resamples.value);
  const report::WrittenReport w = report::write_report(st, *store_path.value, opt, out.value);
  std::fprintf(stderr, "%s\n", w.summary_line().c_str());
  print_json_line(w.to_json());
  return 0;
}

RAGFORM_COMMAND("report", "render a run store as one self-contained HTML report", run_report, 75);

}  // namespace
}  // namespace ragform::cli

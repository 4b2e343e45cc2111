// Internal to the report layer: the page sections of report.h, each rendered from the runs of one
// pipeline. Every function returns an HTML fragment (escaped) and counts the charts it drew.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.h"
#include "store/run_store.h"

namespace ragform::report {

struct RunRows {
  store::RunInfo info;
  std::vector<store::Result> rows;
};

struct Html {
  std::string out;
  size_t charts = 0;
  Html& operator<<(const std::string& s) {
    out += s;
    return *this;
  }
};

// "<p class=nodata>no data: why</p>"
std::string no_data(const std::string& why);
// A table from a header and rows of already-escaped cells.
std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows);
// The final token's attention over the prompt tokens as coloured spans (weight / max weight), or
// "" when extra has no usable {"attention": [numbers], "tokens": [strings]} of equal length.
std::string attention_strip(const nlohmann::json& extra);
// Per-instance drill-down of the runs' rows: the first opt.drilldown_instances instances.
std::string drilldown(const std::vector<const RunRows*>& runs, const ReportOptions& opt);
std::string drilldown(const std::vector<RunRows>& runs, const ReportOptions& opt);
// "run 3 · cnorm eval · seed 0 · 600 rows"
std::string run_caption(const RunRows& r);

void cnorm_section(Html& h, const std::vector<RunRows>& calibrate, const std::vector<RunRows>& eval,
                   const ReportOptions& opt);
void sure_section(Html& h, const store::RunStore& st, const std::vector<RunRows>& runs,
                  const ReportOptions& opt);
void spotlight_section(Html& h, const std::vector<RunRows>& runs, const ReportOptions& opt);
// `ragform tune`'s card (tune_section.cpp): "tune" runs with their stored summary, and the
// "tune holdout" runs in the drill-down.
void tune_section(Html& h, const store::RunStore& st, const std::vector<RunRows>& runs,
                  const ReportOptions& opt);
// Indices of the candidates on the accuracy x tokens x robustness Pareto front (tune_section.cpp;
// NaN = not measured).
std::vector<size_t> pareto_front(const std::vector<double>& accuracy,
                                 const std::vector<double>& tokens,
                                 const std::vector<double>& robustness);
// `ragform position-bias` runs (bias curves), `position-bias --rank` runs (ranking recall) and
// `position-bias --sweep` runs (accuracy by gold position, OAA) (steering_section.cpp).
void steering_section(Html& h, const std::vector<RunRows>& bias, const std::vector<RunRows>& rank,
                      const std::vector<RunRows>& sweep);
// `ragform reproduce` runs beside the papers' numbers (paper_section.cpp).
void paper_section(Html& h, const std::vector<RunRows>& runs, const ReportOptions& opt);

}  // namespace ragform::report

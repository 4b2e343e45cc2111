// Internal to the report layer: the page sections of report.h, each rendered from the runs of one
// pipeline. Every function returns an HTML fragment (escaped) and counts the charts it drew.
#pragma once
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
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

// The value of `key` in a stored object (a run's config, a row's extra), or `def` when it is
// absent or null (base/json_keys.h). Another type throws Error naming `what` ("run 3's config")
// and the key, never the JSON library's own text (pass 19: "[json.exception.type_error.302] type
// must be string, but is null" for a run whose config was edited).
template <class T>
T stored_value(const nlohmann::json& o, const char* key, T def, const std::string& what) {
  if (!o.is_object() || !o.contains(key) || o[key].is_null()) return def;
  const nlohmann::json& v = o[key];
  bool fits = false;
  if constexpr (std::is_same_v<T, std::string>)
    fits = v.is_string();
  else if constexpr (std::is_same_v<T, bool>)
    fits = v.is_boolean();
  else if constexpr (std::is_integral_v<T>)
    fits = v.is_number_integer();
  else
    fits = v.is_number();
  if (!fits)
    throw Error("report", what + ": '" + key + "' is " + v.type_name() + ", not the " +
                              (std::is_same_v<T, std::string> ? "string"
                               : std::is_same_v<T, bool>      ? "boolean"
                                                              : "number") +
                              " ragform writes");
  return v.get<T>();
}
// "run 3's config"
inline std::string config_of(const RunRows& r) {
  return "run " + std::to_string(r.info.id) + "'s config";
}

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

#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/plural.h"
#include "report/sections.h"
#include "report/svg.h"

namespace ragform::report {

namespace {

const char* kCss = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;
color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:22px} header p{margin:4px 0 0;color:#c5cad3}
nav{padding:8px 32px;background:#e9ecf1} nav a{margin-right:18px;color:#0b4f8a}
main{padding:8px 32px 40px;max-width:1200px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:12px 20px;margin:18px 0}
h2{margin:6px 0 8px;font-size:19px} h3{font-size:15px;margin:16px 0 6px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{background:#fff;border:1px solid #eceef2;max-width:100%;height:auto}
svg .ct{font-weight:600;font-size:13px} svg .tick{font-size:10px;fill:#4a5160}
svg .al{font-size:11px;fill:#333} svg .lg{font-size:11px}
svg .grid{stroke:#e3e6eb;stroke-width:1} svg .err{stroke:#222;stroke-width:1.2;fill:none}
svg .line{stroke-width:2}
section{overflow-x:auto}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px;max-width:100%}
th,td{border:1px solid #dde1e7;padding:3px 8px;text-align:right;overflow-wrap:anywhere}
.pairs td{text-align:left;vertical-align:top;max-width:320px}
th{background:#f0f2f5} td:first-child,th:first-child{text-align:left}
.nodata{color:#8a5a00;background:#fff6e0;padding:6px 10px;border-radius:4px}
.muted{color:#6b7280} .ok{color:#137333;font-weight:600} .bad{color:#b3261e;font-weight:600}
details{margin:4px 0} summary{cursor:pointer}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;border:1px solid #eceef2;
padding:6px 8px;margin:4px 0;font-size:12px;max-height:320px;overflow:auto}
.strip{font:12px/1.9 ui-monospace,"DejaVu Sans Mono",monospace;border:1px solid #eceef2;padding:6px;
white-space:pre-wrap;word-break:break-word;max-height:320px;overflow:auto}
.strip span{border-radius:2px}
.spans mark{border-radius:3px;padding:0 1px}
.legend{display:inline-block;width:160px;height:10px;vertical-align:middle;
background:linear-gradient(90deg,#ffffff,#e6550d);border:1px solid #ccc}
)";

std::string short_sha(const std::string& s) { return s.size() > 12 ? s.substr(0, 12) : s; }

std::string metadata_section(const std::vector<store::RunInfo>& runs, const store::RunStore& st) {
  std::string s = "<section id=\"runs\"><h2>Runs</h2>";
  s += "<p class=\"muted\">Store: " + escape_html(st.path().string()) + "</p>";
  std::vector<std::vector<std::string>> rows;
  for (const auto& info : runs) {
    store::Counts c = st.counts(info.id);
    rows.push_back({std::to_string(info.id), escape_html(info.pipeline),
                    escape_html(info.created_at), escape_html(info.model_path),
                    "<span title=\"" + escape_html(info.model_sha256) + "\">" +
                        escape_html(short_sha(info.model_sha256)) + "</span>",
                    escape_html(info.reader), escape_html(info.chat_mode),
                    std::to_string(info.seed), escape_html(info.tool_version),
                    std::to_string(c.rows), std::to_string(c.unmeasured)});
  }
  s += table({"run", "pipeline", "created", "model", "sha256", "reader", "chat mode", "seed",
              "tool version", "rows", "unmeasured"},
             rows);
  for (const auto& info : runs)
    s += "<details><summary>config of run " + std::to_string(info.id) + " (" +
         escape_html(info.pipeline) + ")</summary><pre>" + escape_html(info.config.dump(2)) +
         "</pre></details>";
  return s + "</section>";
}

}  // namespace

std::string no_data(const std::string& why) {
  return "<p class=\"nodata\">no data: " + escape_html(why) + "</p>";
}

std::string table(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string s = "<table><thead><tr>";
  for (const auto& h : header) s += "<th>" + h + "</th>";
  s += "</tr></thead><tbody>";
  for (const auto& r : rows) {
    s += "<tr>";
    for (const auto& c : r) s += "<td>" + c + "</td>";
    s += "</tr>";
  }
  return s + "</tbody></table>";
}

std::string attention_strip(const nlohmann::json& extra) {
  if (!extra.is_object() || !extra.contains("attention") || !extra.contains("tokens")) return "";
  const auto& a = extra["attention"];
  const auto& t = extra["tokens"];
  if (!a.is_array() || !t.is_array() || a.size() != t.size() || a.empty()) return "";
  double mx = 0;
  for (const auto& v : a) {
    if (!v.is_number()) return "";
    double d = v.get<double>();
    if (!std::isfinite(d) || d < 0) return "";
    mx = std::max(mx, d);
  }
  std::string s =
      "<div class=\"muted\">attention of the final token over the prompt (colour = weight / "
      "max " +
      fmt(mx, 4) + ") <span class=\"legend\"></span></div><div class=\"strip\">";
  for (size_t i = 0; i < a.size(); ++i) {
    double w = a[i].get<double>();
    std::string tok = t[i].is_string() ? t[i].get<std::string>() : t[i].dump();
    s += "<span style=\"background:" + heat_color(mx > 0 ? w / mx : 0) + "\" title=\"" +
         std::to_string(i) + ": " + fmt(w, 4) + "\">" + escape_html(tok) + "</span>";
  }
  return s + "</div>";
}

std::string run_caption(const RunRows& r) {
  return "run " + std::to_string(r.info.id) + " · " + escape_html(r.info.pipeline) + " · seed " +
         std::to_string(r.info.seed) + " · " + count_of((long long)r.rows.size(), "row");
}

namespace {
std::string runs_pipeline(const std::vector<const RunRows*>& runs, int64_t id) {
  for (const auto* r : runs)
    if (r->info.id == id) return r->info.pipeline;
  return "";
}
}  // namespace

std::string drilldown(const std::vector<RunRows>& runs, const ReportOptions& opt) {
  std::vector<const RunRows*> ptrs;
  for (const auto& r : runs) ptrs.push_back(&r);
  return drilldown(ptrs, opt);
}

std::string drilldown(const std::vector<const RunRows*>& runs, const ReportOptions& opt) {
  // Instances in first-appearance order across the runs; rows grouped under their instance.
  // Keyed by (run, instance): two runs may use the same instance ids for different prompts.
  using RunInstance = std::pair<int64_t, std::string>;
  std::vector<RunInstance> order;
  std::map<RunInstance, std::vector<const store::Result*>> by;
  size_t total = 0;
  for (const auto* r : runs)
    for (const auto& row : r->rows) {
      auto& v = by[{r->info.id, row.instance}];
      if (v.empty()) order.push_back({r->info.id, row.instance});
      v.push_back(&row);
      ++total;
    }
  if (order.empty()) return "";
  size_t shown = std::min(order.size(), opt.drilldown_instances);
  std::string s = "<h3>Instances</h3><p class=\"muted\">The first " + std::to_string(shown) +
                  " of " + count_of((long long)order.size(), "instance") + " (" +
                  count_of((long long)total, "row") + "); every row is in the store.</p>";
  for (size_t i = 0; i < shown; ++i) {
    const auto& rows = by[order[i]];
    size_t ok = 0, bad = 0;
    for (const auto* r : rows) {
      if (r->correct && *r->correct) ++ok;
      if (r->correct && !*r->correct) ++bad;
    }
    // The first instance and its first row start open, so the page shows one example at once.
    s += std::string(i == 0 ? "<details open>" : "<details>") + "<summary><b>" +
         escape_html(order[i].second) + "</b>" +
         (runs.size() > 1 ? " <span class=\"muted\">(run " + std::to_string(order[i].first) + ", " +
                                escape_html(runs_pipeline(runs, order[i].first)) + ")</span>"
                          : std::string()) +
         " — " + count_of((long long)rows.size(), "row");
    if (ok + bad > 0)
      s += ", <span class=\"ok\">" + std::to_string(ok) + " correct</span>, <span class=\"bad\">" +
           std::to_string(bad) + " wrong</span>";
    s += "</summary>";
    size_t n = std::min(rows.size(), opt.drilldown_rows);
    for (size_t j = 0; j < n; ++j) {
      const store::Result& r = *rows[j];
      std::string mark = !r.correct   ? "<span class=\"muted\">not graded</span>"
                         : *r.correct ? "<span class=\"ok\">correct</span>"
                                      : "<span class=\"bad\">wrong</span>";
      if (r.status == store::Status::unmeasured)
        mark = "<span class=\"bad\">unmeasured: " + escape_html(r.error) + "</span>";
      s += std::string(i == 0 && j == 0 ? "<details open>" : "<details>") + "<summary>" +
           escape_html(r.variant) + " — " + mark;
      for (const auto& [k, v] : r.scores) s += " · " + escape_html(k) + " " + fmt(v, 4);
      s += "</summary>";
      if (!r.prompt.empty())
        s += "<div class=\"muted\">prompt" +
             (r.prompt_tokens ? " (" + std::to_string(*r.prompt_tokens) + " tokens)" : "") +
             "</div><pre>" + escape_html(r.prompt) + "</pre>";
      if (!r.output.empty())
        s += "<div class=\"muted\">output</div><pre>" + escape_html(r.output) + "</pre>";
      if (r.extra.is_object() && r.extra.contains("original_output") &&
          r.extra["original_output"].is_string())
        s += "<div class=\"muted\">output on the original document</div><pre>" +
             escape_html(r.extra["original_output"].get<std::string>()) + "</pre>";
      s += attention_strip(r.extra);
      s += "</details>";
    }
    if (rows.size() > n)
      s += "<p class=\"muted\">… " + std::to_string(rows.size() - n) + " more rows</p>";
    s += "</details>";
  }
  return s;
}

std::string render_report(const store::RunStore& st, const ReportOptions& opt, ReportStats* stats) {
  const std::vector<store::RunInfo> infos = st.runs();
  std::vector<RunRows> calib, ceval, sure, spot, paper, bias, rank, sweep, tune, other;
  size_t rows = 0;
  for (const auto& info : infos) {
    RunRows r{info, st.results(info.id)};
    rows += r.rows.size();
    const std::string& p = info.pipeline;
    auto& bucket = p == "cnorm calibrate"                             ? calib
                   : p == "cnorm eval"                                ? ceval
                   : p == "sure eval"                                 ? sure
                   : p == "spotlight eval" || p == "spotlight select" ? spot
                   : p == "reproduce"                                 ? paper
                   : p == "position-bias"                             ? bias
                   : p == "position-bias rank"                        ? rank
                   : p == "position-bias sweep"                       ? sweep
                   : p == "tune" || p == "tune holdout"               ? tune
                                                                      : other;
    bucket.push_back(std::move(r));
  }
  Html body;
  size_t sections = 0;
  std::string nav;
  if (!paper.empty()) {
    paper_section(body, paper, opt);
    nav += "<a href=\"#paper\">Paper vs this run</a>";
    ++sections;
  }
  if (!calib.empty() || !ceval.empty()) {
    cnorm_section(body, calib, ceval, opt);
    nav += "<a href=\"#cnorm\">C-NORM</a>";
    ++sections;
  }
  if (!sure.empty()) {
    sure_section(body, st, sure, opt);
    nav += "<a href=\"#sure\">SURE</a>";
    ++sections;
  }
  if (!spot.empty()) {
    spotlight_section(body, spot, opt);
    nav += "<a href=\"#spotlight\">Spotlight</a>";
    ++sections;
  }
  if (!tune.empty()) {
    tune_section(body, st, tune, opt);
    nav += "<a href=\"#tune\">Tune</a>";
    ++sections;
  }
  if (!bias.empty() || !rank.empty() || !sweep.empty()) {
    steering_section(body, bias, rank, sweep);
    nav += "<a href=\"#steering\">Steering</a>";
    ++sections;
  }
  if (!other.empty()) {
    body << "<section id=\"other\"><h2>Other runs</h2><p class=\"muted\">Pipelines without a "
            "report section; their rows are listed below.</p>"
         << drilldown(other, opt) << "</section>";
    nav += "<a href=\"#other\">Other</a>";
  }
  if (infos.empty())
    body << "<section>" << no_data("the store " + st.path().string() + " holds no runs")
         << "</section>";
  nav += "<a href=\"#runs\">Runs</a>";
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>" +
      escape_html(opt.title) + "</title><style>" + kCss + "</style></head><body><header><h1>" +
      escape_html(opt.title) + "</h1><p>" + count_of((long long)infos.size(), "run") + ", " +
      count_of((long long)rows, "row") + " · " + escape_html(st.path().filename().string()) +
      "</p></header><nav>" + nav + "</nav><main>" + body.out + metadata_section(infos, st) +
      "</main></body></html>\n";
  if (stats) *stats = {infos.size(), rows, body.charts, sections};
  return page;
}

}  // namespace ragform::report

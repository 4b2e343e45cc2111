// "Paper vs this run": the runs `ragform reproduce` writes (pipeline "reproduce", one run per
// experiment; config {paper, experiment, scale, model_name, paper_model}; one row per measured
// value: instance = the paper's method, variant = the paper's metric, scores {value, n, and ci_lo,
// ci_hi when there is an interval}) beside the papers' own numbers (paper_numbers.h). The paper's
// value is shown beside the run's only when the run's model is the paper's model (paper_model set
// by name or --paper-model); otherwise the paper's values are listed as reference only. A value
// over no item is stored as an unmeasured row and shown as "not measured".
#include <map>

#include "report/paper_numbers.h"
#include "report/sections.h"
#include "report/svg.h"

namespace ragform::report {

namespace {

std::string cfg(const store::RunInfo& info, const char* key) {
  if (info.config.is_object() && info.config.contains(key) && info.config[key].is_string())
    return info.config[key].get<std::string>();
  return "";
}

double score(const store::Result& r, const char* k, double def) {
  auto it = r.scores.find(k);
  return it == r.scores.end() ? def : it->second;
}

bool has(const store::Result& r, const char* k) { return r.scores.count(k) > 0; }

// The run's value, its 95% interval and n as cells.
std::vector<std::string> run_cells(const store::Result& r) {
  std::string ci = has(r, "ci_lo") && has(r, "ci_hi") ? "[" + fmt(score(r, "ci_lo", 0), 3) + ", " +
                                                            fmt(score(r, "ci_hi", 0), 3) + "]"
                                                      : "—";
  return {fmt(score(r, "value", 0), 3), ci, std::to_string((long long)score(r, "n", 0))};
}

void one_run(Html& h, const RunRows& run) {
  const std::string paper = cfg(run.info, "paper"), exp = cfg(run.info, "experiment");
  const std::string pm = cfg(run.info, "paper_model"), name = cfg(run.info, "model_name");
  std::vector<const PaperNumber*> refs;
  for (const auto& e : paper_numbers())
    if (paper == e.paper && exp == e.experiment) refs.push_back(&e);
  h << "<h3>" << escape_html(paper + " · " + exp) << "</h3><p class=\"muted\">" << run_caption(run)
    << " · scale " << escape_html(cfg(run.info, "scale")) << " · model "
    << escape_html(name.empty() ? run.info.model_path : name) << " · "
    << (pm.empty() ? std::string("not one of the paper's models: the paper's values are reference "
                                 "only")
                   : "compared with the paper's " + escape_html(pm))
    << "</p>";
  const std::string note = cfg(run.info, "note");
  if (!note.empty()) h << "<p class=\"muted\">" << escape_html(note) << "</p>";
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : run.rows) {
    const PaperNumber* ref = nullptr;
    for (const auto* e : refs)
      if (!pm.empty() && pm == e->model && r.instance == e->method && r.variant == e->metric)
        ref = e;
    std::string paper_cell = "—";
    if (ref) {
      paper_cell =
          fmt(ref->value, 3) + " <span class=\"muted\">(" + escape_html(ref->source) + ")</span>";
    } else {
      // Not the paper's model: the paper's values of the same method and metric, as reference.
      std::string refs_text;
      for (const auto* e : refs)
        if (r.instance == e->method && r.variant == e->metric)
          refs_text += std::string(refs_text.empty() ? "" : "<br>") + fmt(e->value, 3) +
                       " <span class=\"muted\">(reference: " + escape_html(e->model) + ", " +
                       escape_html(e->source) + ")</span>";
      if (!refs_text.empty()) paper_cell = refs_text;
    }
    std::vector<std::string> row = {escape_html(r.instance), escape_html(r.variant), paper_cell};
    const bool measured = r.status == store::Status::ok;
    if (measured) {
      for (auto& c : run_cells(r)) row.push_back(c);
    } else {
      // A value over no item: shown as such, never as a 0 beside the paper's.
      row.insert(row.end(), {"<span class=\"bad\">not measured</span>", "—", "0"});
    }
    row.push_back(ref && measured ? fmt(score(r, "value", 0) - ref->value, 3) : "—");
    rows.push_back(std::move(row));
  }
  if (rows.empty())
    h << no_data("the run holds no measured values yet (resume it with the same command)");
  else
    h << table({"method", "metric", "paper", "this run", "95% CI", "n", "difference"}, rows);
  if (refs.empty()) {
    h << "<p class=\"muted\">The paper reports no number for this experiment in its text (a "
         "figure only).</p>";
    return;
  }
  std::vector<std::vector<std::string>> ref_rows;
  for (const auto* e : refs)
    ref_rows.push_back({escape_html(e->model), escape_html(e->method), escape_html(e->metric),
                        fmt(e->value, 3), escape_html(e->source)});
  h << "<details><summary>The paper's numbers for this experiment (" << std::to_string(refs.size())
    << ")</summary>" << table({"model", "method", "metric", "value", "source"}, ref_rows)
    << "</details>";
}

}  // namespace

void paper_section(Html& h, const std::vector<RunRows>& runs, const ReportOptions&) {
  h << "<section id=\"paper\"><h2>Paper vs this run</h2><p class=\"muted\">Each experiment "
       "<code>ragform reproduce</code> ran, with the paper's value beside this run's (95% "
       "interval, n) "
       "when the model is the paper's. Values are in the paper's unit (% or a fraction).</p>";
  for (const auto& r : runs) one_run(h, r);
  h << "</section>";
}

}  // namespace ragform::report

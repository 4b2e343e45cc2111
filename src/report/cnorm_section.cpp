// The C-NORM section of the report (cnorm-surface-formatting.txt): calibration (4.2, Figure 3)
// and the gold-position evaluation (5.1).
#include <cmath>
#include <map>
#include <set>

#include "base/error.h"
#include "pipelines/cnorm/cnorm.h"
#include "report/sections.h"
#include "report/svg.h"

namespace ragform::report {

namespace {

std::string display_variant(const std::string& v) {
  if (v == "baseline") return "Baseline";
  if (v == "cnorm") return "C-NORM";
  if (v == "min-token") return "Min-Token";
  return v;
}

// Calibration of one run: ABS per candidate (4.2) and mass by relative position (Figure 3).
void calibration(Html& h, const RunRows& run) {
  struct Cand {
    std::string name, delim;
    std::vector<double> abs;
    std::vector<double> mass_sum = std::vector<double>(10, 0.0);
    size_t mass_n = 0;
  };
  std::vector<Cand> cands;
  std::map<std::string, size_t> idx;
  for (const auto& r : run.rows) {
    if (r.status != store::Status::ok) continue;
    auto it = idx.find(r.variant);
    if (it == idx.end()) {
      it = idx.emplace(r.variant, cands.size()).first;
      Cand c;
      c.name = r.variant;
      if (r.extra.contains("delimiter") && r.extra["delimiter"].is_string())
        c.delim = r.extra["delimiter"].get<std::string>();
      cands.push_back(c);
    }
    Cand& c = cands[it->second];
    auto a = r.scores.find("abs");
    if (a != r.scores.end()) c.abs.push_back(a->second);
    if (r.extra.contains("mass_by_position")) {
      const auto& m = r.extra["mass_by_position"];
      bool good = m.is_array() && m.size() == 10;
      for (size_t i = 0; good && i < 10; ++i) good = m[i].is_number();
      if (good) {
        for (size_t i = 0; i < 10; ++i) c.mass_sum[i] += m[i].get<double>();
        ++c.mass_n;
      }
    }
  }
  h << "<h3>Calibration — " << run_caption(run) << "</h3>";
  std::vector<std::string> names;
  Series mean{"mean ABS", {}, {}};
  std::vector<std::vector<std::string>> trs;
  double best = -1;
  size_t best_i = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    const Cand& c = cands[i];
    names.push_back(c.name);
    if (c.abs.empty()) {
      mean.values.push_back(NAN);
      mean.errors.push_back(NAN);
      continue;
    }
    auto [m, sd] = cnorm::abs_mean_std(c.abs);
    mean.values.push_back(m);
    mean.errors.push_back(sd);
    if (m > best) best = m, best_i = i;
  }
  for (size_t i = 0; i < cands.size(); ++i)
    trs.push_back({escape_html(cands[i].name), "<code>" + escape_html(cands[i].delim) + "</code>",
                   std::to_string(cands[i].abs.size()), fmt(mean.values[i], 4),
                   fmt(mean.errors[i], 4), best >= 0 && i == best_i ? "f*" : ""});
  if (best < 0) {
    h << no_data("the calibration rows carry no scores.abs");
  } else {
    ChartOptions o;
    o.title = "Attention Balance Score per candidate (mean ± sd over prompts)";
    o.x_label = "candidate delimiter";
    o.y_label = "ABS = 1 − 2|μ − 0.5|";
    h << "<div class=\"charts\">" << bar_chart(names, {mean}, o);
    ++h.charts;
    std::vector<Series> mass;
    for (const auto& c : cands) {
      if (c.mass_n == 0) continue;
      Series s{c.name, {}, {}};
      for (double v : c.mass_sum) s.values.push_back(v / double(c.mass_n));
      mass.push_back(s);
    }
    if (!mass.empty()) {
      ChartOptions mo;
      mo.title = "Attention mass by relative position (Figure 3)";
      mo.x_label = "relative position in the context (bins of 10%)";
      mo.y_label = "mean attention mass";
      std::vector<std::string> bins;
      for (int b = 0; b < 10; ++b)
        bins.push_back(std::to_string(b * 10) + "–" + std::to_string(b * 10 + 10) + "%");
      h << line_chart(bins, mass, mo);
      ++h.charts;
      h << "</div>";
    } else {
      h << "</div>" << no_data("no extra.mass_by_position (10 numbers) in the calibration rows");
    }
    h << table({"candidate", "delimiter", "prompts", "mean ABS", "sd", ""}, trs);
  }
}

struct EvalRun {
  std::vector<cnorm::Graded> graded;
  std::vector<std::string> names;
  size_t k = 0;
};

EvalRun graded_rows(const RunRows& run) {
  EvalRun e;
  std::set<std::string> seen;
  for (const auto& r : run.rows) {
    if (r.status != store::Status::ok || !r.correct) continue;
    std::string v;
    long pos = -1;
    size_t at = r.variant.rfind('@');
    if (r.extra.contains("variant") && r.extra["variant"].is_string())
      v = r.extra["variant"].get<std::string>();
    else if (at != std::string::npos)
      v = r.variant.substr(0, at);
    for (const char* key : {"gold_position", "position"})
      if (pos < 0 && r.extra.contains(key) && r.extra[key].is_number_integer())
        pos = r.extra[key].get<long>();
    if (pos < 0 && at != std::string::npos) {
      try {
        pos = std::stol(r.variant.substr(at + 1));
      } catch (const std::exception&) {
        pos = -1;
      }
    }
    if (v.empty() || pos < 0 || pos > 100000) continue;  // not a gold position
    if (seen.insert(v).second) e.names.push_back(v);
    e.k = std::max(e.k, size_t(pos) + 1);
    e.graded.push_back({v, size_t(pos), *r.correct});
  }
  // Baseline, Min-Token, C-NORM first (the paper's order), others after.
  std::vector<std::string> order;
  for (const char* n : {"baseline", "min-token", "cnorm"})
    if (seen.count(n)) order.push_back(n);
  for (const auto& n : e.names)
    if (n != "baseline" && n != "min-token" && n != "cnorm") order.push_back(n);
  e.names = order;
  return e;
}

void evaluation(Html& h, const std::vector<RunRows>& runs) {
  std::vector<std::vector<cnorm::VariantSummary>> sums;
  std::vector<EvalRun> ers;
  for (const auto& r : runs) {
    EvalRun e = graded_rows(r);
    if (e.graded.empty()) continue;
    sums.push_back(cnorm::summarize(e.graded, e.names, e.k));
    ers.push_back(e);
  }
  h << "<h3>Accuracy by gold position (section 5.1)</h3>";
  if (sums.empty()) {
    h << no_data(
        "no graded 'cnorm eval' rows with extra.variant and extra.gold_position (or position)");
    return;
  }
  std::vector<cnorm::VariantSummary> avg = sums[0];
  std::string caption = run_caption(runs[0]);
  bool averaged = false;
  if (sums.size() > 1) {
    try {
      avg = cnorm::average_over_seeds(sums);
      averaged = true;
      caption = "mean over " + std::to_string(sums.size()) + " runs (seeds)";
    } catch (const Error& e) {
      caption = run_caption(runs[0]) +
                " (other runs differ in k or variants: " + escape_html(e.what()) + ")";
    }
  }
  std::vector<std::string> xs;
  for (size_t j = 0; j < avg[0].accuracy.size(); ++j) xs.push_back(std::to_string(j + 1));
  std::vector<Series> lines;
  std::vector<std::vector<std::string>> trs;
  for (const auto& s : avg) {
    Series se{display_variant(s.name), {}, {}};
    for (size_t j = 0; j < s.accuracy.size(); ++j)
      se.values.push_back(j < s.n.size() && s.n[j] == 0 ? NAN : s.accuracy[j]);
    lines.push_back(se);
    size_t n = 0;
    for (size_t c : s.n) n += c;
    trs.push_back({escape_html(display_variant(s.name)), fmt(s.oaa, 4), fmt(s.opa, 4),
                   std::to_string(s.best_position + 1), std::to_string(n)});
  }
  ChartOptions o;
  o.title = "Accuracy by gold position — " + caption;
  o.x_label = "position of the gold document (1 = first)";
  o.y_label = "accuracy";
  o.y_max = 1;
  o.width = 640;
  h << "<div class=\"charts\">" << line_chart(xs, lines, o) << "</div>";
  ++h.charts;
  h << table({"variant", "OAA", "OPA", "best position", "answers"}, trs);
  // Over several seeds OPA is each seed's own, averaged (docs/cnorm.md), which the mean curve's
  // highest point need not equal (pass 22: OPA 0.50 beside a mean curve of [0.25, 0.40]).
  if (averaged)
    h << "<p class=\"muted\">OAA: mean accuracy over gold positions; OPA: each seed's accuracy "
         "at its own best position, averaged over the seeds; best position: the mean curve's "
         "highest (C-NORM 5.1).</p>";
  else
    h << "<p class=\"muted\">OAA: mean accuracy over gold positions; OPA: accuracy at the best "
         "position (C-NORM 5.1).</p>";
}

}  // namespace

void cnorm_section(Html& h, const std::vector<RunRows>& calibrate, const std::vector<RunRows>& eval,
                   const ReportOptions& opt) {
  h << "<section id=\"cnorm\"><h2>C-NORM: attention-balanced context formatting</h2>";
  if (calibrate.empty())
    h << "<h3>Calibration</h3>" << no_data("no 'cnorm calibrate' run in the store");
  for (const auto& r : calibrate) calibration(h, r);
  if (eval.empty())
    h << "<h3>Accuracy by gold position</h3>" << no_data("no 'cnorm eval' run in the store");
  else
    evaluation(h, eval);
  std::vector<const RunRows*> all;
  for (const auto& r : calibrate) all.push_back(&r);
  for (const auto& r : eval) all.push_back(&r);
  h << drilldown(all, opt) << "</section>";
}

}  // namespace ragform::report

// The SURE section of the report (sure-spurious-features.txt, section 3.5): the metrics come from
// sure::outcomes_from_store and sure::robustness_report, the code `sure eval` prints with.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/error.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/metrics.h"
#include "pipelines/sure/taxonomy.h"
#include "report/sections.h"
#include "report/svg.h"

namespace ragform::report {

namespace {

std::string pct(double v) { return fmt(100 * v, 1); }

const sure::ReportRow* find(const std::vector<sure::ReportRow>& rows, const std::string& scope,
                            const std::string& key, const std::string& subset) {
  for (const auto& r : rows)
    if (r.scope == scope && r.key == key && r.subset == subset) return &r;
  return nullptr;
}

std::string reader_name(const RunRows& r) {
  std::string s = r.info.model_path;
  size_t slash = s.find_last_of('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  return "run " + std::to_string(r.info.id) + (s.empty() ? "" : " " + s);
}

}  // namespace

void sure_section(Html& h, const store::RunStore& st, const std::vector<RunRows>& runs,
                  const ReportOptions& opt) {
  h << "<section id=\"sure\"><h2>SURE: robustness to spurious features</h2>"
    << "<p class=\"muted\">Per instance pair, C = Y(original) − Y(perturbed): RR = share with "
       "C = 0, WR = C = −1 (wrong → right), LR = C = 1 (right → wrong), in % (section 3.5). "
       "Subsets: Known/Unknown (closed-book answer) × Golden/Noise (document holds the "
       "answer).</p>";
  std::vector<std::vector<sure::ReportRow>> reports;
  std::vector<const RunRows*> used;
  for (const auto& r : runs) {
    std::vector<sure::Outcome> outs;
    try {
      outs = sure::outcomes_from_store(st, r.info.id);
    } catch (const Error& e) {
      h << no_data(std::string("run ") + std::to_string(r.info.id) + ": " + e.what());
      continue;
    }
    if (outs.empty()) {
      h << no_data("run " + std::to_string(r.info.id) +
                   " has no pair with measured closed-book, original and perturbed rows");
      continue;
    }
    reports.push_back(sure::robustness_report(outs, opt.seed, opt.resamples));
    used.push_back(&r);
  }
  if (!reports.empty()) {
    // Figure 4: RR per category, one polygon per run (reader), as the paper defines it: the mean
    // of the per-perturbation RR on Golden pairs (sure::category_robustness).
    std::vector<std::string> cats;
    for (const auto& c : sure::categories())
      for (const auto& rep : reports)
        if (find(rep, "category", c, "golden")) {
          cats.push_back(c);
          break;
        }
    std::vector<Series> radar;
    for (size_t i = 0; i < reports.size(); ++i) {
      Series s{reader_name(*used[i]), {}, {}};
      for (const auto& c : cats) {
        const auto* row = find(reports[i], "category", c, "golden");
        s.values.push_back(row ? 100 * row->rates.rr : NAN);
      }
      radar.push_back(s);
    }
    ChartOptions ro;
    ro.title = "Robustness Rate per category (Figure 4: mean RR of its perturbations, Golden), %";
    ro.y_max = 100;
    ro.width = 420;
    ro.height = 360;
    h << "<div class=\"charts\">";
    if (cats.size() >= 3) {
      h << radar_chart(cats, radar, ro);
      ++h.charts;
    } else {
      ChartOptions bo = ro;
      bo.title =
          "Robustness Rate per category (mean RR of its perturbations, Golden), % (fewer "
          "than 3 categories: bars)";
      h << bar_chart(cats, radar, bo);
      ++h.charts;
    }
    // WR vs LR per perturbation (first run).
    std::vector<std::string> perts;
    for (const auto& k : sure::all_kinds())
      if (find(reports[0], "perturbation", k.name, "all")) perts.push_back(k.name);
    Series wr{"WR", {}, {}}, lr{"LR", {}, {}};
    std::vector<std::string> short_names;
    for (const auto& p : perts) {
      const auto* row = find(reports[0], "perturbation", p, "all");
      wr.values.push_back(100 * row->rates.wr);
      lr.values.push_back(100 * row->rates.lr);
      short_names.push_back(p.substr(p.find('/') + 1));
    }
    ChartOptions wo;
    wo.title = "Win Rate vs Lose Rate per perturbation, % — " + reader_name(*used[0]);
    wo.x_label = "perturbation";
    wo.y_label = "% of pairs";
    wo.width = std::max(560, int(70 * perts.size()) + 80);
    h << bar_chart(short_names, {wr, lr}, wo) << "</div>";
    ++h.charts;

    // Table 1 layout per run: rows = perturbations, columns = LR/RR/WR per subset, plus Org/Acc.
    const char* subsets[] = {"K-G", "K-N", "U-G", "U-N", "all"};
    for (size_t i = 0; i < reports.size(); ++i) {
      const auto& rep = reports[i];
      h << "<h3>Table 1 layout — " << run_caption(*used[i]) << "</h3>";
      std::vector<std::string> head = {"perturbation"};
      for (const char* s : subsets)
        for (const char* m : {"LR", "RR", "WR"})
          head.push_back(std::string(s == std::string("all") ? "All" : s) + " " + m);
      head.insert(head.end(), {"Org", "Acc", "n"});
      std::vector<std::vector<std::string>> trs;
      auto add = [&](const std::string& scope, const std::string& key, const std::string& label) {
        const auto* all = find(rep, scope, key, "all");
        if (!all) return;
        std::vector<std::string> tr = {label};
        for (const char* s : subsets) {
          const auto* row = find(rep, scope, key, s);
          for (int m = 0; m < 3; ++m)
            tr.push_back(!row ? "–"
                              : pct(m == 0   ? row->rates.lr
                                    : m == 1 ? row->rates.rr
                                             : row->rates.wr));
        }
        tr.push_back(pct(all->rates.org));
        tr.push_back(pct(all->rates.acc));
        tr.push_back(std::to_string(all->rates.n));
        trs.push_back(tr);
      };
      for (const auto& k : sure::all_kinds()) add("perturbation", k.name, escape_html(k.name));
      for (const auto& c : sure::categories())
        add("category_pooled", c, "<b>" + escape_html(c) + "</b> (pooled)");
      add("overall", "", "<b>overall</b>");
      h << table(head, trs);
      // The paper's category robustness (4.2, Figure 4) beside the pooled rows above.
      std::vector<std::vector<std::string>> crs;
      for (const auto& c : sure::categories())
        if (const auto* row = find(rep, "category", c, "golden"))
          crs.push_back({escape_html(c), pct(row->rates.lr), pct(row->rates.rr), pct(row->rates.wr),
                         std::to_string(row->perturbations), std::to_string(row->rates.n)});
      if (!crs.empty())
        h << "<p class=\"muted\">Category robustness as the paper computes it (Figure 4): the "
             "mean over a category's perturbations of each one's rate on Golden pairs (K-G and "
             "U-G); the (pooled) rows above weigh every pair alike instead.</p>"
          << table({"category", "LR", "RR", "WR", "perturbations", "Golden pairs"}, crs);
      if (const auto* o = find(rep, "overall", "", "all"))
        h << "<p class=\"muted\">Overall RR " << pct(o->rates.rr) << "%"
          << (o->rates.rr_ci_lo ? " (95% bootstrap CI " + pct(*o->rates.rr_ci_lo) + "–" +
                                      pct(*o->rates.rr_ci_hi) + ")"
                                : std::string())
          << ", McNemar p = " << fmt(o->rates.mcnemar_p, 4) << " over "
          << std::to_string(o->rates.n) << " pairs.</p>";
    }
  }
  h << drilldown(runs, opt) << "</section>";
}

}  // namespace ragform::report

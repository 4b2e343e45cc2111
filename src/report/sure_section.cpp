// The SURE section of the report (sure-spurious-features.txt, section 3.5): the metrics come from
// sure::outcomes_from_store and sure::robustness_report, the code `sure eval` prints with.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/error.h"
#include "pipelines/sure/sure.h"
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

std::string verdict(bool org, bool pert) {
  if (org == pert) return "<span class=\"ok\">robust</span> (C = 0)";
  return org ? "<span class=\"bad\">lose</span>: right → wrong (C = 1)"
             : "<span class=\"ok\">win</span>: wrong → right (C = −1)";
}

std::string yes_no(bool y) {
  return y ? "<span class=\"ok\">correct</span>" : "<span class=\"bad\">wrong</span>";
}

// The instance pairs first (section 3.5): per perturbed row, its original row, both answers and
// the verdict C = Y(original) − Y(perturbed); the prompts open below.
std::string pairs_drilldown(const std::vector<RunRows>& runs, const ReportOptions& opt) {
  struct PairView {
    const RunRows* run;
    const store::Result* org;
    const store::Result* pert;
  };
  std::vector<PairView> pairs;
  for (const auto& r : runs) {
    std::map<std::string, const store::Result*> originals;
    for (const auto& row : r.rows)
      if (row.variant == "original" && row.correct) originals[row.instance] = &row;
    for (const auto& row : r.rows) {
      if (row.variant == "original" || row.variant == "closed-book" || !row.correct) continue;
      auto o = originals.find(row.instance);
      if (o != originals.end()) pairs.push_back({&r, o->second, &row});
    }
  }
  if (pairs.empty()) return "";
  size_t shown = std::min(pairs.size(), opt.drilldown_instances);
  std::string s = "<h3>Instance pairs</h3><p class=\"muted\">The first " + std::to_string(shown) +
                  " of " + std::to_string(pairs.size()) +
                  " measured pairs: the answer on the original and on the perturbed document, "
                  "and the verdict.</p>";
  std::vector<std::vector<std::string>> trs;
  for (size_t i = 0; i < shown; ++i) {
    const auto& p = pairs[i];
    trs.push_back({escape_html(p.pert->instance), escape_html(p.pert->variant),
                   escape_html(p.org->output) + "<br>" + yes_no(*p.org->correct),
                   escape_html(p.pert->output) + "<br>" + yes_no(*p.pert->correct),
                   verdict(*p.org->correct, *p.pert->correct)});
  }
  s += "<div class=\"pairs\">" +
       table(
           {"pair", "perturbation", "answer on the original", "answer on the perturbed", "verdict"},
           trs) +
       "</div>";
  for (size_t i = 0; i < shown; ++i) {
    const auto& p = pairs[i];
    s += std::string(i == 0 ? "<details open>" : "<details>") + "<summary>prompts of <b>" +
         escape_html(p.pert->instance) + "</b> · " + escape_html(p.pert->variant) +
         "</summary><div class=\"muted\">original</div><pre>" + escape_html(p.org->prompt) +
         "</pre><div class=\"muted\">perturbed</div><pre>" + escape_html(p.pert->prompt) +
         "</pre></details>";
  }
  return s;
}

// Figure 4's radar (RR per category, one polygon per run) and the first run's WR vs LR per
// perturbation.
void robustness_charts(Html& h, const std::vector<std::vector<sure::ReportRow>>& reports,
                       const std::vector<const RunRows*>& used) {
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
  std::vector<std::string> labels;  // "category/perturbation": the category stays readable
  for (const auto& p : perts) {
    const auto* row = find(reports[0], "perturbation", p, "all");
    wr.values.push_back(100 * row->rates.wr);
    lr.values.push_back(100 * row->rates.lr);
    labels.push_back(p);
  }
  ChartOptions wo;
  wo.title = "Win Rate vs Lose Rate per perturbation, % — " + reader_name(*used[0]);
  wo.x_label = "perturbation";
  wo.y_label = "% of pairs";
  wo.width = std::max(560, int(70 * perts.size()) + 80);
  h << bar_chart(labels, {wr, lr}, wo) << "</div>";
  ++h.charts;
}

// Table 1 layout of one run: rows = perturbations, columns = LR/RR/WR per subset, plus Org/Acc.
void table1(Html& h, const std::vector<sure::ReportRow>& rep, const RunRows& run) {
  const char* subsets[] = {"K-G", "K-N", "U-G", "U-N", "all"};
  h << "<h3>Table 1 layout — " << run_caption(run) << "</h3>";
  std::vector<std::string> head = {"perturbation"};
  for (const char* s : subsets)
    for (const char* m : {"LR", "RR", "WR", "n"})
      head.push_back(std::string(s == std::string("all") ? "All" : s) + " " + m);
  head.insert(head.end(), {"Org", "Acc"});
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
      // The pairs behind the cell's rates: a rate over 3 pairs is not one over 300.
      tr.push_back(row ? std::to_string(row->rates.n) : "0");
    }
    tr.push_back(pct(all->rates.org));
    tr.push_back(pct(all->rates.acc));
    trs.push_back(tr);
  };
  for (const auto& k : sure::all_kinds()) add("perturbation", k.name, escape_html(k.name));
  for (const auto& c : sure::categories())
    add("category_pooled", c, "<b>" + escape_html(c) + "</b> (pooled)");
  add("overall", "", "<b>overall</b>");
  h << table(head, trs)
    << "<p class=\"muted\">LR/RR/WR in % of the cell's n instance pairs; Org and Acc: "
       "accuracy on the original and the perturbed documents over all pairs.</p>";
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
      << ", McNemar p = " << fmt(o->rates.mcnemar_p, 4) << " over " << std::to_string(o->rates.n)
      << " pairs.</p>";
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
    robustness_charts(h, reports, used);
    for (size_t i = 0; i < reports.size(); ++i) table1(h, reports[i], *used[i]);
  }
  h << pairs_drilldown(runs, opt);
  // The rows per instance after the pairs: pair instances ("q#doc") before closed-book ones.
  std::vector<RunRows> ordered = runs;
  for (auto& r : ordered)
    std::stable_partition(r.rows.begin(), r.rows.end(),
                          [](const store::Result& x) { return x.variant != "closed-book"; });
  h << drilldown(ordered, opt) << "</section>";
}

}  // namespace ragform::report

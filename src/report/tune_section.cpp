// The `ragform tune` card of the report: the budgeted search over presentation choices, read from
// the summary the search stores with its run (run meta "tune_summary" of a "tune" run, the object
// `ragform tune --json` prints; tune/run.h), so the card and the command show the same numbers:
//   - the profile (the winning value of every dimension) and what the search spent, with the
//     rungs that grew their records for want of signal;
//   - the winner against the original presentation on the held-out split: accuracy, robustness,
//     tokens, the 95% CI of the paired accuracy difference and McNemar's p;
//   - the trajectory: how many candidates each stage dropped, and every candidate's last stage;
//   - the accuracy x tokens x robustness Pareto front (see pareto_front);
//   - per-dimension main effects: the mean first-rung accuracy of the candidates with each value.
// A run without a summary (a search stopped before its first complete pass, a shard) says so; the
// rows are in the drill-down either way.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>

#include "base/error.h"
#include "report/sections.h"
#include "report/svg.h"

namespace ragform::report {

namespace {

using nlohmann::json;

double num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

std::string str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// What a full grid would have cost, and when the budget covered it, why the search did not run
// one (tune::spending_text's wording for the card).
std::string grid_sentence(const json& summary) {
  const double grid = num(summary, "grid"), budget = num(summary, "budget");
  const std::string g = fmt(grid, 0);
  if (!(grid <= budget)) return "a full grid over the same dev items would cost " + g;
  const json& plan = summary.contains("plan") ? summary["plan"] : json();
  bool cut = num(plan, "abs_cost") > 0 && num(plan, "abs_keep") < num(plan, "candidates");
  if (plan.is_object() && plan.contains("rungs") && plan["rungs"].is_array()) {
    cut = cut && !plan["rungs"].empty();
    for (const json& r : plan["rungs"]) cut = cut || num(r, "keep") < num(r, "candidates");
  }
  if (cut)
    return "the budget covered a full grid over the same dev items (" + g +
           " prompts), but the search cut candidates (ABS filter, halving) instead of measuring "
           "them all";
  return "that was the full grid over the same dev items (" + g + " prompts)";
}

std::string pct(double v) { return std::isfinite(v) ? fmt(100 * v, 1) + "%" : "n/a"; }

// One candidate of the trajectory.
struct Cand {
  std::string label, dropped_at;
  double accuracy = NAN, tokens = NAN, robustness = NAN, abs = NAN;
  long long n = 0;
};

std::vector<Cand> candidates(const json& summary) {
  std::vector<Cand> out;
  if (!summary.contains("trajectory") || !summary["trajectory"].is_array()) return out;
  for (const auto& t : summary["trajectory"]) {
    if (!t.is_object()) continue;
    Cand c;
    c.label = str(t, "label");
    c.dropped_at = str(t, "dropped_at");
    c.accuracy = num(t, "accuracy");
    c.tokens = num(t, "tokens");
    c.robustness = num(t, "robustness");
    c.abs = num(t, "abs");
    c.n = t.contains("n") && t["n"].is_number_integer() ? t["n"].get<long long>() : 0;
    // A candidate the ABS filter (or the context cap) dropped answered no dev record: its stored
    // accuracy and tokens (0) are not measurements and must not put it on the Pareto front.
    if (c.n == 0) c.accuracy = c.tokens = NAN;
    out.push_back(c);
  }
  return out;
}

}  // namespace

// Candidates no other candidate dominates: at least as accurate, no more tokens and at least as
// robust, better in one of them. Robustness is measured on the search's survivors only, so it
// counts only where the dominated candidate has it: a candidate dropped before the robustness
// check is compared on accuracy and tokens. Candidates without an accuracy are left out.
std::vector<size_t> pareto_front(const std::vector<double>& accuracy,
                                 const std::vector<double>& tokens,
                                 const std::vector<double>& robustness) {
  auto dominates = [&](size_t a, size_t b) {
    const bool rb = std::isfinite(robustness[b]);
    if (rb && !std::isfinite(robustness[a])) return false;
    const bool ge = accuracy[a] >= accuracy[b] && tokens[a] <= tokens[b] &&
                    (!rb || robustness[a] >= robustness[b]);
    const bool gt =
        accuracy[a] > accuracy[b] || tokens[a] < tokens[b] || (rb && robustness[a] > robustness[b]);
    return ge && gt;
  };
  std::vector<size_t> front;
  for (size_t b = 0; b < accuracy.size(); ++b) {
    if (!std::isfinite(accuracy[b]) || !std::isfinite(tokens[b])) continue;
    bool dominated = false;
    for (size_t a = 0; a < accuracy.size() && !dominated; ++a)
      dominated =
          a != b && std::isfinite(accuracy[a]) && std::isfinite(tokens[a]) && dominates(a, b);
    if (!dominated) front.push_back(b);
  }
  return front;
}

namespace {

std::string n1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

// Accuracy over prompt tokens, one dot per candidate (hover: label, n, robustness), the Pareto
// front's dots filled and joined by a line in token order.
std::string pareto_chart(const std::vector<Cand>& cs, const std::vector<size_t>& front) {
  const int W = 620, H = 340;
  const double x0 = 60, x1 = W - 16, y0 = H - 50, y1 = 34;
  double tmin = INFINITY, tmax = -INFINITY;
  for (const Cand& c : cs)
    if (std::isfinite(c.tokens) && std::isfinite(c.accuracy))
      tmin = std::min(tmin, c.tokens), tmax = std::max(tmax, c.tokens);
  const double pad = std::max(1.0, (tmax - tmin) * 0.05);
  const LinearScale x{tmin - pad, tmax + pad, x0, x1}, y{0, 1, y0, y1};
  const std::string title = "Accuracy × prompt tokens (Pareto front filled)";
  std::string s =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart scatter\" viewBox=\"0 0 " +
      std::to_string(W) + " " + std::to_string(H) + "\" width=\"" + std::to_string(W) +
      "\" height=\"" + std::to_string(H) + "\" role=\"img\" aria-label=\"" + title + "\"><title>" +
      title + "</title><text class=\"ct\" x=\"" + n1(W / 2.0) +
      "\" y=\"18\" text-anchor=\"middle\">" + title + "</text>";
  for (int i = 0; i <= 5; ++i) {
    const double v = i / 5.0;
    s += "<line class=\"grid\" x1=\"" + n1(x0) + "\" x2=\"" + n1(x1) + "\" y1=\"" + n1(y(v)) +
         "\" y2=\"" + n1(y(v)) + "\"/><text class=\"tick\" x=\"" + n1(x0 - 4) + "\" y=\"" +
         n1(y(v) + 4) + "\" text-anchor=\"end\">" + fmt(v, 1) + "</text>";
  }
  for (double t : {tmin, (tmin + tmax) / 2, tmax})
    s += "<text class=\"tick\" x=\"" + n1(x(t)) + "\" y=\"" + n1(y0 + 14) +
         "\" text-anchor=\"middle\">" + fmt(t, 0) + "</text>";
  s += "<text class=\"al\" x=\"" + n1((x0 + x1) / 2) + "\" y=\"" + n1(H - 14.0) +
       "\" text-anchor=\"middle\">mean prompt tokens</text><text class=\"al\" "
       "transform=\"translate(14," +
       n1((y0 + y1) / 2) + ") rotate(-90)\" text-anchor=\"middle\">dev accuracy</text>";
  std::vector<size_t> line = front;
  std::sort(line.begin(), line.end(),
            [&](size_t a, size_t b) { return cs[a].tokens < cs[b].tokens; });
  std::string d;
  for (size_t i = 0; i < line.size(); ++i)
    d += (i ? " L" : "M") + n1(x(cs[line[i]].tokens)) + " " + n1(y(cs[line[i]].accuracy));
  if (!d.empty())
    s += "<path class=\"line\" fill=\"none\" stroke=\"" + std::string(series_color(0)) + "\" d=\"" +
         d + "\"/>";
  for (size_t i = 0; i < cs.size(); ++i) {
    const Cand& c = cs[i];
    if (!std::isfinite(c.tokens) || !std::isfinite(c.accuracy)) continue;
    const bool on = std::find(front.begin(), front.end(), i) != front.end();
    s += "<circle cx=\"" + n1(x(c.tokens)) + "\" cy=\"" + n1(y(c.accuracy)) + "\" r=\"" +
         (on ? "5" : "3.5") + "\" fill=\"" + (on ? series_color(0) : "#bbbbbb") +
         "\" stroke=\"#333\" stroke-width=\"0.5\"><title>" +
         escape_html(c.label + " · accuracy " + fmt(c.accuracy, 3) + " (n " + std::to_string(c.n) +
                     ") · tokens " + fmt(c.tokens, 1) + " · robustness " + fmt(c.robustness, 3)) +
         "</title></circle>";
  }
  return s + "</svg>";
}

void profile_table(Html& h, const json& summary) {
  const json& prof = summary.contains("profile") ? summary["profile"] : json();
  const json& pres =
      prof.is_object() && prof.contains("presentation") ? prof["presentation"] : json();
  std::vector<std::string> searched;
  if (prof.is_object() && prof.contains("searched") && prof["searched"].is_array())
    for (const auto& d : prof["searched"])
      if (d.is_string()) searched.push_back(d.get<std::string>());
  std::vector<std::vector<std::string>> rows;
  if (pres.is_object())
    for (const auto& [k, v] : pres.items()) {
      const bool s = std::find(searched.begin(), searched.end(), k) != searched.end();
      // 0 is how the profile writes "every document" (k) and "no selection" (spotlight).
      const bool zero = v.is_number_integer() && v.get<int64_t>() == 0;
      const std::string shown = zero && k == "k"           ? "all"
                                : zero && k == "spotlight" ? "off"
                                : v.is_string()            ? v.get<std::string>()
                                                           : v.dump();
      rows.push_back({escape_html(k), "<code>" + escape_html(shown) + "</code>",
                      s ? "searched" : "<span class=\"muted\">held</span>"});
    }
  h << "<p>Task <b>" << escape_html(str(summary, "task")) << "</b>, objective <b>"
    << escape_html(str(summary, "objective")) << "</b>"
    << (std::isfinite(num(summary, "robust_floor"))
            ? " (robustness floor " + fmt(num(summary, "robust_floor"), 2) + ")"
            : std::string())
    << ". The search spent <b>" << fmt(num(summary, "spent"), 0) << "</b> of a budget of "
    << fmt(num(summary, "budget"), 0) << " prompts; " << grid_sentence(summary)
    << ". Winner: <code>" << escape_html(str(summary, "winner")) << "</code>.</p>";
  // Rungs with no signal grew their records before the cut (tune/search.h kMaxRungGrowth); those
  // prompts are in "spent" beyond the plan.
  if (summary.contains("grown") && summary["grown"].is_array())
    for (const json& g : summary["grown"])
      h << "<p>Rung " << fmt(num(g, "rung") + 1, 0)
        << " had no signal (every candidate it ranked answered alike) and grew from "
        << fmt(num(g, "from"), 0) << " to " << fmt(num(g, "to"), 0) << " dev records ("
        << fmt(num(g, "prompts"), 0) << " prompts beyond the plan)"
        << (stored_value(g, "signal", false, "the tune summary's 'grown'")
                ? std::string(".")
                : std::string(": <span class=\"muted\">still no signal, so the cut fell to the "
                              "tie-breaker (fewer prompt tokens)</span>."))
        << "</p>";
  // What the profile holds, and why (tune/deploy.h): the winner only when the held-out split
  // confirmed it. Summaries stored before the deploy rule have no decision.
  const std::string deployed = str(summary, "deployed");
  if (!deployed.empty())
    h << "<p>Deployed: <b" << (deployed == "tuned" ? " class=\"ok\"" : "") << ">"
      << escape_html(deployed) << "</b>"
      << (str(summary, "deploy").empty()
              ? std::string()
              : " (--deploy " + escape_html(str(summary, "deploy")) + ")")
      << ": " << escape_html(str(summary, "why")) << ". The winner was chosen on "
      << fmt(num(summary, "final_n"), 0) << " dev records per finalist"
      << (num(summary, "final_n") < 20 ? " <span class=\"muted\">(too few to tell candidates "
                                         "apart)</span>"
                                       : std::string())
      << ".</p>";
  else
    h << "<p class=\"muted\">This search was stored before tune's deploy rule: the profile holds "
         "its winner, confirmed by the held-out split or not.</p>";
  // Candidates the context cap removed never ran: say so, or the space looks smaller than asked.
  const double dropped = num(summary, "dropped_for_context");
  const json& ctx = summary.contains("context") ? summary["context"] : json();
  if (dropped > 0)
    h << "<p class=\"muted\">" << fmt(dropped, 0)
      << " candidates were dropped before the search: their prompts with the answer exceed the "
      << fmt(num(ctx, "tokens"), 0) << "-token context (" << escape_html(str(ctx, "from"))
      << ").</p>";
  if (!rows.empty()) h << table({"dimension", "value", ""}, rows);
}

void holdout_table(Html& h, const json& summary) {
  h << "<h3>Winner vs original on the held-out split</h3>";
  const json& ho = summary.contains("holdout") ? summary["holdout"] : json();
  if (!ho.is_object()) {
    h << no_data("the search stored no held-out evaluation (no --holdout, or it has not run)");
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const char* side : {"original", "tuned"}) {
    const json& s = ho.contains(side) ? ho[side] : json();
    rows.push_back({side, "<code>" + escape_html(str(s, "label")) + "</code>",
                    pct(num(s, "accuracy")), fmt(num(s, "robustness"), 3),
                    fmt(num(s, "tokens"), 1)});
  }
  h << table({"", "presentation", "accuracy", "robustness", "mean prompt tokens"}, rows);
  double lo = NAN, hi = NAN;
  if (ho.contains("diff_ci95") && ho["diff_ci95"].is_array() && ho["diff_ci95"].size() == 2 &&
      ho["diff_ci95"][0].is_number() && ho["diff_ci95"][1].is_number())
    lo = ho["diff_ci95"][0].get<double>(), hi = ho["diff_ci95"][1].get<double>();
  const double p = num(ho, "mcnemar_p");
  const bool sure = std::isfinite(lo) && (lo > 0 || hi < 0);
  h << "<p>Accuracy difference (tuned − original), 95% bootstrap CI over questions: <b>["
    << fmt(100 * lo, 1) << ", " << fmt(100 * hi, 1) << "] points</b>; McNemar's p = <b>"
    << fmt(p, 4) << "</b> over " << fmt(num(ho, "items"), 0) << " held-out questions ("
    << fmt(num(ho, "prompts"), 0) << " prompts, not counted in the budget"
    << (num(ho, "unmeasured") > 0
            ? "; " + fmt(num(ho, "unmeasured"), 0) +
                  " records without an answer under one side left out, not counted as wrong"
            : std::string())
    << "). "
    << (sure ? "<span class=\"ok\">The interval excludes 0.</span>"
             : "<span class=\"muted\">The interval includes 0: no difference shown.</span>")
    << "</p>";
}

// How many candidates each stage dropped, in the order the search runs its stages.
void trajectory(Html& h, const std::vector<Cand>& cs, const json& summary) {
  h << "<h3>Trajectory</h3>";
  std::vector<std::string> stages;
  std::map<std::string, size_t> dropped;
  for (const Cand& c : cs) {
    const std::string st = c.dropped_at.empty() ? "winner" : c.dropped_at;
    if (!dropped.count(st)) stages.push_back(st);
    ++dropped[st];
  }
  // context, abs, rung 0, rung 1, ..., final, winner.
  auto rank = [](const std::string& s) {
    if (s == "context") return -3.0;
    if (s == "abs") return -2.0;
    if (s.rfind("rung ", 0) == 0) return std::atof(s.c_str() + 5);
    if (s == "final") return 1e6;
    return 1e7;
  };
  std::stable_sort(stages.begin(), stages.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  Series bars{"candidates", {}, {}};
  for (const auto& s : stages) bars.values.push_back(double(dropped[s]));
  ChartOptions o;
  o.title = "Candidates dropped at each stage of the search";
  o.x_label = "stage (context cap, ABS filter, halving rungs, final pick)";
  o.y_label = "candidates";
  h << "<div class=\"charts\">" << bar_chart(stages, {bars}, o) << "</div>";
  ++h.charts;
  if (summary.contains("plan") && summary["plan"].contains("rungs") &&
      summary["plan"]["rungs"].is_array()) {
    std::vector<std::vector<std::string>> rows;
    size_t i = 0;
    for (const auto& r : summary["plan"]["rungs"])
      rows.push_back({"rung " + std::to_string(i++), fmt(num(r, "candidates"), 0),
                      fmt(num(r, "items"), 0), fmt(num(r, "keep"), 0), fmt(num(r, "cost"), 0)});
    h << table({"rung", "candidates", "dev items", "kept", "prompts"}, rows);
  }
  std::vector<std::vector<std::string>> rows;
  for (const Cand& c : cs)
    rows.push_back(
        {"<code>" + escape_html(c.label) + "</code>",
         c.dropped_at.empty() ? "<span class=\"ok\">winner</span>" : escape_html(c.dropped_at),
         fmt(c.accuracy, 3), std::to_string(c.n), fmt(c.tokens, 1), fmt(c.robustness, 3),
         fmt(c.abs, 3)});
  h << "<details><summary>every candidate (" << std::to_string(cs.size()) << ")</summary>"
    << table({"candidate", "dropped at", "accuracy", "n", "tokens", "robustness", "ABS"}, rows)
    << "</details>";
}

void pareto(Html& h, const std::vector<Cand>& cs) {
  h << "<h3>Accuracy × tokens × robustness</h3>";
  std::vector<double> a, t, r;
  for (const Cand& c : cs)
    a.push_back(c.accuracy), t.push_back(c.tokens), r.push_back(c.robustness);
  const std::vector<size_t> front = pareto_front(a, t, r);
  if (front.empty()) {
    h << no_data("no candidate has an accuracy and a token count");
    return;
  }
  h << "<div class=\"charts\">" << pareto_chart(cs, front) << "</div>";
  ++h.charts;
  std::vector<std::vector<std::string>> rows;
  for (size_t i : front)
    rows.push_back({"<code>" + escape_html(cs[i].label) + "</code>", fmt(cs[i].accuracy, 3),
                    std::to_string(cs[i].n), fmt(cs[i].tokens, 1), fmt(cs[i].robustness, 3)});
  h << table({"Pareto candidate", "accuracy", "n", "tokens", "robustness"}, rows)
    << "<p class=\"muted\">A candidate is on the front when no other is at least as accurate, "
       "as short and as robust (robustness where both were checked) and better in one. Accuracies "
       "are over the dev items each candidate reached (n): a candidate dropped early was "
       "measured on fewer.</p>";
}

void main_effects(Html& h, const json& summary) {
  h << "<h3>Main effects</h3>";
  const json& eff = summary.contains("main_effects") ? summary["main_effects"] : json();
  if (!eff.is_object() || eff.empty()) {
    h << no_data("no first-rung accuracies (the search varied no dimension or ran no rung)");
    return;
  }
  h << "<p class=\"muted\">Mean first-rung dev accuracy of the candidates holding each value: how "
       "much each knob moved accuracy, every value measured on the same first-rung items.</p>"
       "<div class=\"charts\">";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [dim, values] : eff.items()) {
    if (!values.is_object() || values.empty()) continue;
    std::vector<std::string> cats;
    Series s{dim, {}, {}};
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& [v, acc] : values.items()) {
      const double x = acc.is_number() ? acc.get<double>() : NAN;
      cats.push_back(dim == "k" && v == "0" ? "all" : v);  // k 0 shows every document
      s.values.push_back(x);
      if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x);
    }
    ChartOptions o;
    o.title = dim;
    o.y_label = "accuracy";
    o.width = std::max(300, int(70 * cats.size()) + 80);
    o.height = 240;
    h << bar_chart(cats, {s}, o);
    ++h.charts;
    rows.push_back({escape_html(dim), std::to_string(cats.size()),
                    std::isfinite(hi) ? fmt(100 * (hi - lo), 1) : "n/a"});
  }
  h << "</div>" << table({"dimension", "values", "spread (points)"}, rows);
}

const RunRows* run_with_id(const std::vector<RunRows>& runs, int64_t id) {
  for (const auto& r : runs)
    if (r.info.id == id) return &r;
  return nullptr;
}

}  // namespace

void tune_section(Html& h, const store::RunStore& st, const std::vector<RunRows>& runs,
                  const ReportOptions& opt) {
  h << "<section id=\"tune\"><h2>ragform tune: the presentation search</h2>";
  std::vector<const RunRows*> shown;
  for (const auto& run : runs) {
    if (run.info.pipeline != "tune") continue;
    h << "<h3>Search — " << run_caption(run) << "</h3>";
    shown.push_back(&run);
    const std::optional<json> summary = st.run_meta(run.info.id, "tune_summary");
    if (summary && !summary->is_object())
      throw Error(st.path().string(),
                  "run " + std::to_string(run.info.id) +
                      ": metadata 'tune_summary' is not an object (the store is "
                      "damaged)");
    if (!summary) {
      h << no_data(
          "the search of this run has not completed a pass (no stored summary; a "
          "shard stops after its share of a stage — merge and rerun)");
      continue;
    }
    if (summary->contains("complete") && (*summary)["complete"] == false) {
      h << no_data("the search stopped before it finished: " + str(*summary, "pending"));
      continue;
    }
    const std::vector<Cand> cs = candidates(*summary);
    profile_table(h, *summary);
    holdout_table(h, *summary);
    trajectory(h, cs, *summary);
    pareto(h, cs);
    main_effects(h, *summary);
    if (summary->contains("holdout_run") && (*summary)["holdout_run"].is_number_integer())
      if (const RunRows* ho = run_with_id(runs, (*summary)["holdout_run"].get<int64_t>()))
        shown.push_back(ho);
  }
  for (const auto& run : runs)
    if (std::find(shown.begin(), shown.end(), &run) == shown.end()) shown.push_back(&run);
  h << drilldown(shown, opt) << "</section>";
}

}  // namespace ragform::report

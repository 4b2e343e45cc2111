// The SpotlightRAG section of the report: evidence recall@K per ranking method and, for the
// selected sentences, the match matrix of equations (5)-(7) (each query token's best context
// token) as highlighted spans.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/sections.h"
#include "report/svg.h"

namespace ragform::report {

namespace {

// K of a score named "recall@K", or -1.
int recall_k(const std::string& name) {
  if (name.rfind("recall@", 0) != 0) return -1;
  try {
    size_t used = 0;
    int k = std::stoi(name.substr(7), &used);
    return used == name.size() - 7 && k > 0 ? k : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// A sentence with its matched context tokens highlighted (strength = s^_ij, the prior-weighted
// cosine); overlapping matches keep the strongest.
std::string highlighted(const std::string& text, const nlohmann::json& matches) {
  struct M {
    size_t b, e;
    double s;
    std::string q, c;
  };
  std::vector<M> ms;
  if (matches.is_array())
    for (const auto& m : matches) {
      if (!m.is_object() || !m.contains("begin") || !m.contains("end") || !m.contains("s") ||
          !m["begin"].is_number_unsigned() || !m["end"].is_number_unsigned() || !m["s"].is_number())
        continue;
      size_t b = m["begin"].get<size_t>(), e = m["end"].get<size_t>();
      if (b >= e || e > text.size()) continue;
      ms.push_back({b, e, m["s"].get<double>(),
                    stored_value(m, "q", std::string(), "a stored match"),
                    stored_value(m, "c", std::string(), "a stored match")});
    }
  std::sort(ms.begin(), ms.end(), [](const M& a, const M& b) { return a.s > b.s; });
  std::vector<M> kept;
  for (const auto& m : ms) {
    bool overlap = false;
    for (const auto& k : kept) overlap = overlap || (m.b < k.e && k.b < m.e);
    if (!overlap) kept.push_back(m);
  }
  std::sort(kept.begin(), kept.end(), [](const M& a, const M& b) { return a.b < b.b; });
  std::string s;
  size_t at = 0;
  for (const auto& m : kept) {
    s += escape_html(text.substr(at, m.b - at));
    s += "<mark style=\"background:" + heat_color(std::max(0.0, m.s)) + "\" title=\"" +
         escape_html(m.q + " → " + m.c + "  s = " + fmt(m.s, 3)) + "\">" +
         escape_html(text.substr(m.b, m.e - m.b)) + "</mark>";
    at = m.e;
  }
  return s + escape_html(text.substr(at));
}

// Mean evidence recall@K per ranking method of one run: a bar chart and a table.
void recall_table(Html& h, const RunRows& run) {
  // method -> K -> (sum, n), methods in first-appearance order.
  std::vector<std::string> methods;
  std::map<std::string, std::map<int, std::pair<double, size_t>>> acc;
  std::set<int> ks;
  std::set<std::string> questions;
  for (const auto& r : run.rows) {
    if (r.status != store::Status::ok) continue;
    for (const auto& [name, v] : r.scores) {
      int k = recall_k(name);
      if (k < 0) continue;
      if (!acc.count(r.variant)) methods.push_back(r.variant);
      auto& cell = acc[r.variant][k];
      cell.first += v;
      ++cell.second;
      ks.insert(k);
      questions.insert(r.instance);
    }
  }
  if (methods.empty()) {
    h << no_data("the rows carry no recall@K scores");
  } else {
    std::vector<std::string> head = {"method"};
    for (int k : ks) head.push_back("recall@" + std::to_string(k));
    head.push_back("questions");
    std::vector<std::vector<std::string>> trs;
    std::vector<Series> bars;
    for (int k : ks) bars.push_back({"recall@" + std::to_string(k), {}, {}});
    for (const auto& m : methods) {
      std::vector<std::string> tr = {escape_html(m)};
      size_t n = 0, bi = 0;
      for (int k : ks) {
        auto it = acc[m].find(k);
        double v = it == acc[m].end() ? NAN : it->second.first / double(it->second.second);
        if (it != acc[m].end()) n = std::max(n, it->second.second);
        tr.push_back(fmt(v, 4));
        bars[bi++].values.push_back(v);
      }
      tr.push_back(std::to_string(n));
      trs.push_back(tr);
    }
    ChartOptions o;
    o.title = "Evidence recall@K per method (HotpotQA supporting facts)";
    o.x_label = "ranking method";
    o.y_label = "mean recall";
    o.y_max = 1;
    o.width = std::max(560, int(90 * methods.size()) + 80);
    h << "<div class=\"charts\">" << bar_chart(methods, bars, o) << "</div>";
    ++h.charts;
    h << table(head, trs);
    h << "<p class=\"muted\">recall@K = |gold ∩ top-K| / |gold| per question, averaged over "
      << std::to_string(questions.size()) << " questions.</p>";
  }
}

// The selected sentences of the first questions, their matched tokens highlighted.
void selected_sentences(Html& h, const RunRows& run, const ReportOptions& opt) {
  // Selected sentences with their matches (the rows whose extra has "selected").
  size_t shown = 0, with_sel = 0;
  std::string sel;
  for (const auto& r : run.rows) {
    if (!r.extra.contains("selected") || !r.extra["selected"].is_array()) continue;
    ++with_sel;
    if (shown >= opt.drilldown_instances) continue;
    ++shown;
    const std::string of = "row " + r.instance + "'s extra";
    std::string q = stored_value(r.extra, "question", std::string(), of);
    sel += std::string(shown == 1 ? "<details open>" : "<details>") + "<summary><b>" +
           escape_html(r.instance) + "</b> " + escape_html(q);
    for (const auto& [name, v] : r.scores) sel += " · " + escape_html(name) + " " + fmt(v, 2);
    sel +=
        "</summary><table><thead><tr><th>sentence (matched context tokens)</th><th>R</th>"
        "<th>category</th><th>gold</th></tr></thead><tbody>";
    for (const auto& s : r.extra["selected"]) {
      if (!s.is_object()) continue;
      std::string text = stored_value(s, "text", std::string(), of);
      bool gold = stored_value(s, "gold", false, of);
      sel += "<tr><td class=\"spans\" style=\"text-align:left\"><span class=\"muted\">" +
             escape_html(stored_value(s, "title", std::string(), of)) + ":</span> " +
             highlighted(text, s.contains("matches") ? s["matches"] : nlohmann::json()) +
             "</td><td>" + fmt(stored_value(s, s.contains("R_raw") ? "R" : "R_norm", NAN, of), 2) +
             "</td><td>" + escape_html(stored_value(s, "category", std::string(), of)) +
             "</td><td>" + (gold ? "<span class=\"ok\">gold</span>" : "") + "</td></tr>";
    }
    sel += "</tbody></table>";
    if (!r.prompt.empty())
      sel += "<details><summary>prompt (eq. 10)</summary><pre>" + escape_html(r.prompt) +
             "</pre></details>";
    if (!r.output.empty())
      sel += "<div class=\"muted\">output</div><pre>" + escape_html(r.output) + "</pre>";
    sel += "</details>";
  }
  h << "<h3>Selected sentences</h3>";
  if (with_sel == 0) {
    h << no_data("no row carries extra.selected (the selected sentences and their matches)");
  } else {
    h << "<p class=\"muted\">The first " << std::to_string(shown) << " of "
      << std::to_string(with_sel)
      << " questions. Highlight = a query token's best-matching context token in the sentence "
         "(eq. 5-7), colour = similarity ŝ (hover for query → context and value). <span "
         "class=\"legend\"></span></p>"
      << sel;
  }
}

}  // namespace

void spotlight_section(Html& h, const std::vector<RunRows>& runs, const ReportOptions& opt) {
  h << "<section id=\"spotlight\"><h2>SpotlightRAG: span-level evidence selection</h2>";
  for (const auto& run : runs) {
    h << "<h3>Evidence recall — " << run_caption(run) << "</h3>";
    recall_table(h, run);
    selected_sentences(h, run, opt);
  }
  h << "</section>";
}

}  // namespace ragform::report

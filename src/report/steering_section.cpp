// The attention steering section of the report: the positional bias curves of `ragform
// position-bias` runs (Found in the Middle's U shape, one line per model and task, and each run's
// layers), and the document ranking recall@k of `position-bias --rank` runs (raw attention,
// calibrated attention, BM25). Every number is recomputed from the stored rows.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <string>

#include "report/sections.h"
#include "report/svg.h"

namespace ragform::report {

namespace {

// A run's curve from its rows (pipelines/cnorm/position_bias.h layout): the mean of "mass" per
// slot (extra.slot) and of each "l<L>" score per layer.
struct Curve {
  std::vector<double> overall;
  std::map<int, std::vector<double>> layers;
};

Curve curve_of(const RunRows& r, size_t k) {
  Curve c;
  c.overall.assign(k, 0.0);
  std::vector<size_t> n(k, 0);
  for (const store::Result& row : r.rows) {
    if (row.status != store::Status::ok || !row.extra.is_object()) continue;
    const int slot = stored_value(row.extra, "slot", -1, "a row's extra of " + config_of(r));
    if (slot < 0 || size_t(slot) >= k || !row.scores.count("mass")) continue;
    ++n[size_t(slot)];
    c.overall[size_t(slot)] += row.scores.at("mass");
    for (const auto& [name, v] : row.scores) {
      if (name.size() < 2 || name[0] != 'l') continue;
      auto& lc = c.layers[std::stoi(name.substr(1))];
      lc.resize(k, 0.0);
      lc[size_t(slot)] += v;
    }
  }
  for (size_t s = 0; s < k; ++s) {
    const double d = n[s] ? double(n[s]) : std::numeric_limits<double>::quiet_NaN();
    c.overall[s] /= d;
    for (auto& [l, v] : c.layers) v[s] /= d;
  }
  return c;
}

size_t slots_of(const RunRows& r) {
  if (r.info.config.contains("k") && r.info.config["k"].is_number_unsigned())
    return r.info.config["k"].get<size_t>();
  return 0;
}

// "stories260K · needle": the model file without the reader's prefix, its engine options and the
// extension, so that a chart's one-row legend holds several runs.
std::string model_label(const RunRows& r) {
  std::string m = r.info.reader.empty() ? r.info.model_path : r.info.reader;
  if (m.rfind("native:", 0) == 0) m = m.substr(7);
  m = m.substr(0, m.find('#'));  // engine options the reader names ("#f16-gemm=exact")
  if (m.size() > 5 && m.compare(m.size() - 5, 5, ".gguf") == 0) m.resize(m.size() - 5);
  return m + " · " + stored_value(r.info.config, "task", std::string("?"), config_of(r));
}

std::vector<std::string> slot_labels(size_t k) {
  std::vector<std::string> x;
  for (size_t s = 0; s < k; ++s) x.push_back(std::to_string(s + 1));
  return x;
}

// How a position-bias run read the filler's attention: per token (the paper's mean) or its sum;
// runs stored before the choice existed have no "measure" and summed.
std::string measure_label(const RunRows& r) {
  return stored_value(r.info.config, "measure", std::string("sum"), config_of(r)) == "mean"
             ? "attention per token"
             : "attention mass";
}

// Three significant digits: per-token attention is of the order of 1e-4.
std::string sig3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

void bias_curves(Html& h, const std::vector<const RunRows*>& runs) {
  h << "<h3>Positional attention bias</h3><p class=\"muted\">The attention the final prompt "
       "token pays a fixed uninformative document at each slot, per token (the paper's measure) "
       "or summed over its tokens (mean over heads, items, fillers and layers): the bias Found in "
       "the Middle subtracts (eq. 4). A U shape means the first and last documents get attention "
       "for their place alone.</p>";
  // One chart per number of slots and measure (sums and means are on other scales).
  std::map<std::pair<size_t, std::string>, std::vector<const RunRows*>> by_k;
  for (const RunRows* r : runs)
    if (slots_of(*r) > 0) by_k[{slots_of(*r), measure_label(*r)}].push_back(r);
  if (by_k.empty()) {
    h << no_data("the position-bias runs have no slots recorded");
    return;
  }
  h << "<div class=\"charts\">";
  for (const auto& [key, rs] : by_k) {
    const size_t k = key.first;
    std::vector<Series> lines;
    for (const RunRows* r : rs)
      lines.push_back({model_label(*r) + " (run " + std::to_string(r->info.id) + ")",
                       curve_of(*r, k).overall,
                       {}});
    ChartOptions o;
    o.title = "Bias curve, " + std::to_string(k) + " slots (" + key.second + ")";
    o.x_label = "slot";
    o.y_label = key.second;
    o.width = 900;
    h << line_chart(slot_labels(k), lines, o);
    ++h.charts;
  }
  h << "</div>";
  // The same curves as numbers (the chart's legend is one row).
  for (const auto& [key, rs] : by_k) {
    std::vector<std::string> header = {"run", "model · task", "measure"};
    for (const auto& x : slot_labels(key.first)) header.push_back("slot " + x);
    std::vector<std::vector<std::string>> rows;
    for (const RunRows* r : rs) {
      std::vector<std::string> cells = {std::to_string(r->info.id), escape_html(model_label(*r)),
                                        key.second};
      for (double m : curve_of(*r, key.first).overall) cells.push_back(sig3(m));
      rows.push_back(cells);
    }
    h << table(header, rows);
  }
  for (const RunRows* r : runs) {
    const size_t k = slots_of(*r);
    if (k == 0) continue;
    const Curve c = curve_of(*r, k);
    std::vector<Series> lines;
    for (const auto& [l, v] : c.layers) lines.push_back({"layer " + std::to_string(l), v, {}});
    ChartOptions o;
    o.title = "Per layer — " + model_label(*r);
    o.x_label = "slot";
    o.y_label = measure_label(*r);
    h << "<details><summary>" << run_caption(*r) << " — per layer</summary>"
      << line_chart(slot_labels(k), lines, o) << "</details>";
    ++h.charts;
  }
}

// Mean of the "<method>@<k>" scores over a run's rows, for k = 1..K.
std::vector<std::vector<double>> recall_table(const RunRows& r, const std::vector<std::string>& m,
                                              size_t& k) {
  k = 0;
  for (const store::Result& row : r.rows)
    for (const auto& [name, v] : row.scores) {
      const size_t at = name.find('@');
      if (at != std::string::npos) k = std::max(k, size_t(std::stoul(name.substr(at + 1))));
    }
  std::vector<std::vector<double>> t(m.size(), std::vector<double>(k, 0.0));
  size_t n = 0;
  for (const store::Result& row : r.rows) {
    if (row.status != store::Status::ok) continue;
    ++n;
    for (size_t i = 0; i < m.size(); ++i)
      for (size_t j = 0; j < k; ++j) {
        auto it = row.scores.find(m[i] + "@" + std::to_string(j + 1));
        if (it != row.scores.end()) t[i][j] += it->second;
      }
  }
  for (auto& v : t)
    for (double& x : v) x = n ? x / double(n) : std::numeric_limits<double>::quiet_NaN();
  return t;
}

void ranking_recall(Html& h, const std::vector<const RunRows*>& runs) {
  h << "<h3>Document ranking recall@k</h3><p class=\"muted\">The documents of each prompt "
       "ranked by the final token's raw attention (under the bias curve's measure), by that "
       "attention minus the bias curve (calibrated, eq. 4) and by BM25; recall@k = gold "
       "documents in the top k / gold documents.</p>";
  const std::vector<std::string> methods = {"raw", "calibrated", "bm25"};
  for (const RunRows* r : runs) {
    size_t k = 0;
    const auto t = recall_table(*r, methods, k);
    std::vector<std::vector<std::string>> rows;
    for (size_t j = 0; j < k; ++j) {
      std::vector<std::string> cells = {std::to_string(j + 1)};
      for (const auto& v : t) cells.push_back(fmt(v[j], 3));
      rows.push_back(cells);
    }
    h << "<p>" << run_caption(*r) << "</p>"
      << (k ? table({"k", "raw attention", "calibrated attention", "BM25"}, rows)
            : no_data("the run has no recall scores"));
  }
}

// Accuracy by gold position of a sweep run's rows ("<variant>@<position>", correct), per variant
// in first-seen order; NaN where a position has no graded row.
struct SweepTable {
  std::vector<std::string> variants;
  std::vector<std::vector<double>> accuracy;  // [variant][position]
};

SweepTable sweep_table(const RunRows& r) {
  std::vector<std::string> names;
  std::map<std::string, std::map<size_t, std::pair<double, double>>> acc;  // correct, n
  size_t k = 0;
  for (const store::Result& row : r.rows) {
    const size_t at = row.variant.find('@');
    if (row.status != store::Status::ok || !row.correct || at == std::string::npos) continue;
    const std::string name = row.variant.substr(0, at);
    const size_t pos = size_t(std::stoul(row.variant.substr(at + 1)));
    if (!acc.count(name)) names.push_back(name);
    auto& cell = acc[name][pos];
    cell.first += *row.correct ? 1 : 0;
    cell.second += 1;
    k = std::max(k, pos + 1);
  }
  SweepTable t;
  t.variants = names;
  for (const auto& n : names) {
    std::vector<double> v(k, std::numeric_limits<double>::quiet_NaN());
    for (const auto& [pos, c] : acc[n]) v[pos] = c.first / c.second;
    t.accuracy.push_back(v);
  }
  return t;
}

// How a sweep run shared its attention: runs stored before proportional allocation existed have
// no "allocation" in their identity, and they gave it all to the top document.
std::string allocation_of(const RunRows& r) {
  return stored_value(r.info.config, "allocation", std::string("top"), config_of(r));
}

// What sets a sweep run's steering: softmax's temperature (it keeps each row's own total, so it
// has no share), gold's oracle (no setting), the share of the others.
std::string setting_of(const RunRows& r) {
  if (allocation_of(r) == "gold") return "oracle";
  if (allocation_of(r) == "softmax") {
    char buf[32];
    std::snprintf(buf, sizeof buf, "t %g",
                  stored_value(r.info.config, "temperature", 0.0, config_of(r)));
    return buf;
  }
  return "share " + fmt(stored_value(r.info.config, "share", 0.0, config_of(r)), 2);
}

void calibrated_sweeps(Html& h, const std::vector<RunRows>& runs) {
  h << "<h3>Accuracy by gold position, with and without calibration</h3><p class=\"muted\">The "
       "gold document at each position; baseline answers the prompt as it is, calibrated "
       "steers the documents' attention by their calibrated relevance while answering: each "
       "row's own attention on the documents split as softmax(relevance / t) (allocation "
       "softmax, Found in the Middle's eq. 5-6), the run's share split in proportion to the "
       "relevance (allocation proportional, ragform's variant) or all of the share to the "
       "document of highest calibrated relevance (allocation top). OAA = mean accuracy over the "
       "positions.</p>";
  std::vector<std::vector<std::string>> oaa_rows;
  std::string charts = "<div class=\"charts\">";
  for (const RunRows& r : runs) {
    const SweepTable t = sweep_table(r);
    std::vector<Series> lines;
    for (size_t v = 0; v < t.variants.size(); ++v) {
      double sum = 0;
      for (double a : t.accuracy[v]) sum += a;
      const double oaa = t.accuracy[v].empty() ? std::numeric_limits<double>::quiet_NaN()
                                               : sum / double(t.accuracy[v].size());
      oaa_rows.push_back({std::to_string(r.info.id), escape_html(model_label(r)),
                          escape_html(setting_of(r)), escape_html(allocation_of(r)),
                          escape_html(t.variants[v]), fmt(oaa, 3)});
      lines.push_back({t.variants[v], t.accuracy[v], {}});
    }
    ChartOptions o;
    o.title = "Run " + std::to_string(r.info.id) + " — " + model_label(r) + ", " + setting_of(r) +
              " (" + allocation_of(r) + ")";
    o.x_label = "gold position";
    o.y_label = "accuracy";
    o.y_max = 1;
    charts += line_chart(slot_labels(t.accuracy.empty() ? 0 : t.accuracy[0].size()), lines, o);
    ++h.charts;
  }
  h << table({"run", "model · task", "setting", "allocation", "variant", "OAA"}, oaa_rows) << charts
    << "</div>";
}

}  // namespace

void steering_section(Html& h, const std::vector<RunRows>& bias, const std::vector<RunRows>& rank,
                      const std::vector<RunRows>& sweep) {
  h << "<section id=\"steering\"><h2>Attention steering: positional bias and calibrated "
       "relevance</h2>";
  std::vector<const RunRows*> b, k;
  for (const auto& r : bias) b.push_back(&r);
  for (const auto& r : rank) k.push_back(&r);
  if (b.empty())
    h << "<h3>Positional attention bias</h3>" << no_data("no 'position-bias' run in the store");
  else
    bias_curves(h, b);
  if (!k.empty()) ranking_recall(h, k);
  if (!sweep.empty()) calibrated_sweeps(h, sweep);
  h << "</section>";
}

}  // namespace ragform::report

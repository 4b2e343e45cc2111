// `ragform report`: one self-contained HTML page (inline CSS and SVG, no JavaScript, nothing
// fetched from the network) rendering a run store (store/run_store.h) written by the pipelines:
//   C-NORM    "cnorm calibrate" rows (variant = candidate, scores {abs, mu}, extra {delimiter, p,
//             mass_by_position[10], attention[], tokens[]}): ABS per candidate with its sample
//             standard deviation, attention mass by relative position per format (the paper's
//             Figure 3); "cnorm eval" rows (extra {variant, position or gold_position}): accuracy
//             by gold position for Baseline, Min-Token and C-NORM, OAA/OPA (section 5.1).
//   SURE      "sure eval" runs, through sure::outcomes_from_store and sure::robustness_report (the
//             same code as `sure eval`): RR per category radar (Figure 4), the Table 1 layout,
//             WR vs LR bars.
//   Spotlight "spotlight eval" rows (variant = ranking method, scores recall@K; the spotlight
//             rows' extra.selected holds the selected sentences with their match matrix): recall@K
//             per method, selected sentences with the matched context tokens highlighted.
//   Each section has a bounded per-instance drill-down (<details>: prompt, output, correctness,
//   the attention over the prompt as a coloured strip when the row carries it), and the page ends
//   with every run's metadata (model, SHA-256, reader, chat mode, tool version, config).
// Missing fields never abort the report: the affected chart says "no data" and why.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "store/run_store.h"

namespace ragform::report {

struct ReportOptions {
  std::string title = "ragform report";
  size_t drilldown_instances = 20;  // per section
  size_t drilldown_rows = 12;       // per instance
  size_t resamples = 1000;          // SURE's bootstrap CI of RR
  uint64_t seed = 0;
};

// What the page shows, for a one-line summary on the terminal.
struct ReportStats {
  size_t runs = 0, rows = 0, charts = 0, sections = 0;
};

std::string render_report(const store::RunStore& store, const ReportOptions& opt,
                          ReportStats* stats = nullptr);

}  // namespace ragform::report

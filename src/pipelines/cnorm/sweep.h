// C-NORM evaluation by gold-position sweep (cnorm-surface-formatting.txt, section 5.1 and the OAA /
// OPA metrics of section 2): every question is asked k times per variant, with its gold document
// at position 0..k-1 among k - 1 fixed distractors (tasks.h arrange()), the answer is generated
// greedily, and graded by lost-in-the-middle's best_subspan_em (text::substring_match) on its first
// line. Per variant:
//     accuracy[j] = correct answers with the gold at j / answers with the gold at j
//     OAA = mean_j accuracy[j]        OPA = max_j accuracy[j]   (best_position = first argmax)
// Variants (section 5.2's comparison): Baseline (p = 0, the text as given), C-NORM (the profile's
// f* and p) and Min-Token (among the profile's candidates, the delimiter whose formatted contexts
// have the fewest tokens in total over the evaluated items, gold at position 0; first on ties).
//
// Layout: items in input order; per item, positions 0..k-1; per position, variants in the given
// order (sweep_layout). Each item's pending cells are generated as one batch.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "pipelines/cnorm/tasks.h"
#include "reader/reader.h"

namespace ragform::cnorm {

struct Variant {
  std::string name;  // "baseline", "cnorm", "min-token"
  Format format;
};

struct Cell {
  size_t item = 0, position = 0, variant = 0;
  bool operator==(const Cell&) const = default;
};
std::vector<Cell> sweep_layout(size_t n_items, size_t k, size_t n_variants);

// The run-store variant key of a cell: "<variant>@<position>".
std::string variant_key(const std::string& variant, size_t position);

struct SweepSetup {
  Task task = Task::Qa;
  std::string tmpl;
  size_t k = 10;
  reader::GenerateParams gen;  // greedy by default; "\n" is added to the stop strings
  std::vector<Variant> variants;
  // Ask each item only with its gold at its own position (Item::natural_position mod k) instead
  // of at every position: for data that already holds the gold at every position (`ragform kv
  // generate`).
  bool natural_positions = false;
};

struct CellAnswer {
  std::string instance;  // item id
  std::string variant;   // variant name
  size_t position = 0;
  Format format;  // the variant's format
  std::string prompt;
  int prompt_tokens = 0;
  std::string output;  // raw generation
  std::string answer;  // its first line, trimmed
  bool correct = false;
  double ms = 0;  // wall time of the item's batch divided by its cells
};

// The graded part of a generation: the first line, trimmed of surrounding whitespace.
std::string first_line(const std::string& s);

// Runs every cell for which skip(instance, variant_key) is false, calling on_answer for each.
void run_sweep(reader::Reader& r, const SweepSetup& setup, const std::vector<Item>& items,
               const std::function<bool(const std::string&, const std::string&)>& skip,
               const std::function<void(const CellAnswer&)>& on_answer);

struct Graded {
  std::string variant;
  size_t position = 0;
  bool correct = false;
};

struct VariantSummary {
  std::string name;
  std::vector<double>
      accuracy;  // per gold position (NaN-free: positions without answers are 0 with n = 0)
  std::vector<size_t> n;    // answers per position
  double oaa = 0, opa = 0;  // over positions with answers
  size_t best_position = 0;
};
std::vector<VariantSummary> summarize(const std::vector<Graded>& rows,
                                      const std::vector<std::string>& variants, size_t k);

// The mean over seeds (section 5.1: "averaged over three random seeds") of per-seed summaries
// of the same variants and k: accuracy[j], OAA and OPA are the means of the seeds' values, n[j]
// the sum, best_position the first argmax of the mean accuracy. Throws Error on mismatched input.
std::vector<VariantSummary> average_over_seeds(
    const std::vector<std::vector<VariantSummary>>& per_seed);

// Index into `candidates` of the Min-Token delimiter (see above).
size_t min_token_index(reader::Reader& r, Task t, const std::string& tmpl,
                       const std::vector<Item>& items, size_t k,
                       const std::vector<Delimiter>& candidates, double p, uint64_t seed);

// The largest k' <= k for which every item's prompt under every format has at most max_tokens
// tokens. A count_tokens that throws ragform::Error (a reader refusing a prompt longer than its
// context) counts as not fitting; a server that cannot answer at all (reader::is_outage: no
// answer, 401/403/404, 429/5xx) is not a length and its error propagates. Throws Error when not
// even one document fits.
size_t fit_k(reader::Reader& r, Task t, const std::string& tmpl, const std::vector<Item>& items,
             size_t k, const std::vector<Format>& formats, size_t max_tokens);

}  // namespace ragform::cnorm

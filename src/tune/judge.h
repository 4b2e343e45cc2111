// The judge of `ragform tune`: how one candidate presentation is scored.
//   accuracy    the task's check on the dev split: greedy generation stopped at the first
//               newline after text (a leading newline does not stop it), its first line graded by
//               lost-in-the-middle's best_subspan_em (text::substring_match: a normalised gold
//               answer is contained), as C-NORM's evaluation grades qa, kv and the story needle.
//   robustness  SURE's robustness rate (sure::compute_rates: the share of pairs whose grade does
//               not change) under a fixed set of rule-based perturbations of the gold document
//               (sure::apply_rule: logic/reverse and logic/random, seeded per record), the same
//               pairs for every candidate: y_org is the candidate's answer on the record, y_pert
//               its answer on the record with the gold document perturbed. A pair whose
//               perturbation leaves the document unchanged (one sentence) is not a pair. kv has no
//               sentences to perturb: no robustness.
//   tokens      the cost: mean prompt tokens of the candidate's dev prompts.
//   abs         C-NORM's attention balance score (cnorm::prompt_abs, the paper's defaults) of the
//               candidate's prompts: the cheap first filter, and the objective `abs`.
// Objectives: accuracy (highest accuracy), robust (highest robustness), balanced (highest accuracy
// among the candidates whose robustness is at least the floor; none: the most robust), abs
// (highest mean ABS). Ties, under every objective: higher accuracy, then fewer tokens, then the
// earlier candidate (the abs search measures neither accuracy nor tokens: the earlier candidate).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/qa_record.h"
#include "reader/reader.h"
#include "tune/presentation.h"

namespace ragform::tune {

enum class Objective { Accuracy, Robust, Balanced, Abs };
Objective parse_objective(std::string_view s);  // OptionError("objective", ...) otherwise
const char* objective_name(Objective o);

// Greedy, at most max_tokens, stopped at the first newline after text (stop_after_line).
reader::GenerateParams answer_params(int max_tokens);
// The graded line of a generation and its grade against the gold answers.
bool grade(const std::string& generated, const std::vector<std::string>& answers);

// The perturbations of the robustness check, by SURE's kind names ("logic/reverse",
// "logic/random").
const std::vector<std::string>& robustness_kinds();
// `record` with its gold document (gold_index) perturbed by `kind`, seeded by (seed, record id);
// nullopt when the perturbation is degenerate (unchanged document, a single sentence) or the task
// has no sentences (kv).
std::optional<eval::QaRecord> perturbed(const eval::QaRecord& record, Task t,
                                        const std::string& kind, uint64_t seed);

// What the judge knows of one candidate.
struct Score {
  size_t n = 0, correct = 0;  // dev answers graded
  double tokens = 0;          // mean prompt tokens
  std::optional<double> robustness;
  size_t pairs = 0;  // robustness pairs
  std::optional<double> abs;
  double accuracy() const { return n ? double(correct) / double(n) : 0.0; }
};

// Index of the winner among `scores` under the objective (see above); floor: balanced's minimum
// robustness. Throws Error for an empty list.
size_t pick(const std::vector<Score>& scores, Objective o, double floor);

}  // namespace ragform::tune

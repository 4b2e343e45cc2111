// The budget plan of `ragform tune`'s search: an ABS filter, successive halving on accuracy over
// growing prefixes of the dev split, and the robustness check on the finalists — laid out before
// anything runs, so that the search never spends more than --budget prompts.
//
//   abs       with an attention reader (and the filter on): every candidate is scored by ABS on
//             the first abs_prompts dev records (one attention pass each); the best
//             ceil(n * abs_keep) go on (ties: the earlier candidate). Objective abs: every
//             candidate on abs_prompts records, and the search ends there.
//   rung r    survivors c_r are answered on the first i_r = min(n_dev, i_0 * eta^r) dev records;
//             only records not answered in an earlier rung cost a prompt (c_r * (i_r - i_{r-1}));
//             the best ceil(c_r / eta) by accuracy go on (ties: fewer tokens, then the earlier
//             candidate), until at most `finalists` remain; that last rung ranks nothing.
//   robust    the finalists answer the perturbed records (judge.h) of the first robust_items
//             records of the last rung: finalists * robust_items * kinds prompts at most (a
//             degenerate perturbation costs nothing).
// The control arm (control): one candidate, the original presentation, is never cut. It is scored
// with the others and takes no place of theirs: a cut keeps the best of the other candidates
// (ceil(others * abs_keep) after ABS, ceil(others / eta) after a rung) and the control beside
// them, and halving stops when at most `finalists` others remain, so the final comparison has
// `finalists` candidates and the control. The plan is therefore the same whether the control
// ranks first or last.
// Narrowing (narrow_abs_keep, narrow_finalists: the user left that setting to the plan): when the
// winner would be chosen on fewer than kMinFinalRecords dev records per finalist, or the first
// rung would judge on fewer than kMinFirstRecords, plan_search narrows the field before the
// halving starts: it halves abs_keep (an ABS filter keeping fewer candidates) and tries two
// finalists in place of more, taking the least narrowing that reaches both sizes within the
// budget, else the one whose final rung has the most records.
// i_0 is the largest first-rung size whose whole plan fits the budget. A budget below the whole
// plan with i_0 = 1 truncates it: the rungs that fit run (the last of them ranks nothing: its
// candidates are the finalists), then the robustness check on as many records as the rest of the
// budget pays for (none: no robustness, and the plan says so). A budget below the ABS pass and
// the first rung with one record per candidate is a UsageError naming that minimum. A larger
// budget gives a larger i_0 (or fewer cuts): every answer already stored is reused, so the search
// continues where the smaller one stopped.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform::tune {

struct SearchParams {
  bool abs_filter = false;  // ABS runs (an attention reader and the filter on)
  bool abs_only = false;    // objective abs: the ABS pass is the whole search
  size_t abs_prompts = 2;   // dev records each candidate's ABS is measured on
  double abs_keep = 0.5;    // share of candidates the filter keeps
  size_t eta = 2;           // halving factor
  size_t finalists = 3;     // halving stops at this many candidates
  size_t robust_items = 8;  // records of the robustness check
  size_t robust_kinds = 2;  // perturbations per record
  bool robustness = true;   // the task has a robustness check
  bool control = false;     // one of the n candidates is the control arm (above)
  bool narrow_abs_keep = false, narrow_finalists = false;  // the plan may narrow these
};

// The records a winner should be chosen on (per finalist) and a first rung should judge on, at
// least, before the plan narrows the field: a difference of one answer in 20 is 5 points.
inline constexpr size_t kMinFinalRecords = 20;
inline constexpr size_t kMinFirstRecords = 4;
// A rung with no signal (every candidate it ranks has the same accuracy: say none answered its
// records right) would cut by the tie-breaker alone. Before such a cut the runner grows the
// rung's sample: the next dev records, doubling its records until some candidate differs, up to
// kMaxRungGrowth times its planned records and never past the last rung's records (the dev
// records the finalists are judged on). Those prompts are beyond the plan: the runner states
// them (TuneSummary::grown).
inline constexpr size_t kMaxRungGrowth = 4;

struct Rung {
  size_t candidates = 0, items = 0, keep = 0;
  size_t cost = 0;  // new answers this rung needs
};

struct Plan {
  size_t candidates = 0;  // before the ABS filter
  size_t abs_prompts = 0, abs_cost = 0, abs_keep = 0;
  std::vector<Rung> rungs;
  size_t robust_items = 0, robust_cost = 0;
  size_t first_items = 0;  // i_0
  size_t total = 0;        // every prompt of the plan
  bool truncated = false;  // the budget cut the halving or the robustness check short
  bool control = false;    // one candidate is the control arm (never cut)
  // The settings the plan was made with (after narrowing) and whether narrowing changed them.
  double abs_keep_share = 0;
  size_t finalists = 0;
  bool narrowed = false;
  // The dev records each finalist's score rests on: the last rung's (abs only: the ABS pass's).
  size_t final_items() const;
  nlohmann::ordered_json to_json() const;
};

// The plan for n candidates, n_dev dev records and i_0 = first_items.
Plan plan_with(size_t n, size_t n_dev, size_t first_items, const SearchParams& p);
// The smallest budget plan_search accepts: the ABS pass and one record per first-rung candidate.
size_t minimum_budget(size_t n, size_t n_dev, const SearchParams& p);
// The plan with the largest i_0 whose total is within the budget, or the truncated plan (above).
Plan plan_search(size_t n, size_t n_dev, size_t budget, const SearchParams& p);

}  // namespace ragform::tune

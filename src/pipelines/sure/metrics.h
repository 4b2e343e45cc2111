// SURE's instance-level robustness metrics (section 3.5). For a pair, Y(.) is 1 when any
// normalised gold answer is contained in the response, and C = Y(y) - Y(y^) (y: original,
// y^: perturbed):
//   RR = (1/N) sum 1(C == 0)    (eq. 3)     Robustness Rate
//   WR = (1/N) sum 1(C == -1)               Win Rate  (incorrect -> correct)
//   LR = (1/N) sum 1(C == 1)                Lose Rate (correct -> incorrect)
//   Org = mean Y(y), Acc = mean Y(y^)       dataset-level accuracies (Table 1)
// reported overall and per Known/Unknown x Golden/Noise subset (K-G, K-N, U-G, U-N), per
// perturbation and per category, as fractions in [0, 1]. Beyond the paper, each group has a
// percentile bootstrap 95% CI of RR (eval/stats.h) and McNemar's test of the paired outcomes
// (b = lose count, c = win count; exact binomial p).
//
// Category robustness has two readings, both reported under their own scope:
//   "category"         the paper's (4.2 "estimated by averaging the RR values of their
//                      corresponding perturbations", 4.3 / Figure 4 "average the RR of each
//                      perturbation within a category", on Golden documents): over the Golden
//                      pairs (K-G and U-G) only, the unweighted mean of each perturbation's rate,
//                      subset "golden"; a perturbation with 5 pairs weighs as much as one with 500.
//                      LR, WR, Org and Acc are averaged the same way; the counts are summed.
//   "category_pooled"  every pair of the category's perturbations pooled, per subset as the
//                      other scopes: a perturbation with more pairs weighs more.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform::sure {

enum class Subset { KG, KN, UG, UN };
const char* to_string(Subset s);  // "K-G", "K-N", "U-G", "U-N"
Subset make_subset(bool known, bool golden);

struct Outcome {
  std::string pair_id;       // "<record>#<doc>"
  std::string perturbation;  // kind name
  std::string category;
  Subset subset = Subset::KG;
  bool y_org = false;
  bool y_pert = false;
  int label() const { return int(y_org) - int(y_pert); }  // C
};

struct Rates {
  int64_t n = 0, lose = 0, robust = 0, win = 0, org_correct = 0, pert_correct = 0;
  double lr = 0, rr = 0, wr = 0, org = 0, acc = 0;
  std::optional<double> rr_ci_lo, rr_ci_hi;  // bootstrap, when n >= 2
  double mcnemar_p = 1;                      // exact two-sided
  // The distinct originals (pair ids) of the group and how many were answered right: a group that
  // pools several perturbations holds each original once per perturbation, and an interval of
  // the originals' accuracy is over the originals (pass 23: reproduce's category Org counted n = 8
  // for 2 originals).
  int64_t originals = 0, originals_correct = 0;
};

// Rates of a group (n == 0 gives all zeros).
Rates compute_rates(const std::vector<Outcome>& group, uint64_t seed = 0, size_t resamples = 2000);

struct ReportRow {
  std::string scope;   // "overall" | "category" | "category_pooled" | "perturbation"
  std::string key;     // "" | category | perturbation name
  std::string subset;  // "all" | "K-G" | ... | "golden" (scope "category")
  Rates rates;
  int perturbations = 0;  // scope "category": how many perturbations the mean is over
  nlohmann::ordered_json to_json() const;
};

// The paper's category robustness (see above) of one category's outcomes: rates averaged over the
// perturbations that have Golden pairs; nullopt when none has. No bootstrap CI (the mean is over
// perturbations, not pairs); McNemar's p is that of the summed lose / win counts.
std::optional<ReportRow> category_robustness(const std::vector<Outcome>& outcomes,
                                             const std::string& category);

// Every (scope, key, subset) group with at least one outcome, in Table 1 order: overall, the
// paper's category rows, the pooled category rows, per perturbation.
std::vector<ReportRow> robustness_report(const std::vector<Outcome>& outcomes, uint64_t seed = 0,
                                         size_t resamples = 2000);

}  // namespace ragform::sure

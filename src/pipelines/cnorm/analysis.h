// Analyses of C-NORM runs that the paper reports only in part (docs/cnorm.md "Analyses"):
//  - rank correlation between a candidate's mean ABS and its accuracy (the paper claims ABS
//    predicts accuracy, section 4.2, but never reports how well): Spearman's rho with a
//    percentile bootstrap interval over questions;
//  - token count against accuracy (Appendix A): Pearson's r of mean prompt tokens per delimiter
//    against OAA;
//  - stability of f* in the number of calibration prompts S (section 5.3): f* recomputed from the
//    first S' per-prompt scores of a profile, S' = 1..S.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/sweep.h"

namespace ragform::cnorm {

// Ranks 1..n, ties get the mean of their ranks.
std::vector<double> average_ranks(const std::vector<double>& v);
// Spearman's rho = Pearson's r of the average ranks. nullopt when n < 2 or a side is constant.
std::optional<double> spearman(const std::vector<double>& x, const std::vector<double>& y);

struct RankCorrelation {
  std::optional<double> rho;     // on the full data
  std::optional<double> lo, hi;  // percentile interval of the resamples where rho is defined
  size_t resamples = 0;          // resamples with a defined rho
  size_t n = 0;                  // candidates
};
// x[c] = candidate c's score (mean ABS); acc[i][c] = question i's accuracy under candidate c (mean
// over its gold positions). Resamples questions with replacement (std::mt19937_64(seed), indices
// by rejection sampling as eval/stats.h), recomputes each candidate's accuracy as the mean over
// the resampled questions and its rho against x; lo/hi = the (1-level)/2 and (1+level)/2
// type-7 quantiles.
RankCorrelation bootstrap_spearman(const std::vector<double>& x,
                                   const std::vector<std::vector<double>>& acc, double level = 0.95,
                                   size_t resamples = 2000, uint64_t seed = 0);

// f* when only the first s prompts of each candidate's per-prompt ABS count, s = 1..S (first
// candidate on ties). Needs every candidate scored on S prompts (an exhaustive profile); throws
// Error otherwise.
std::vector<size_t> best_by_sample_size(const std::vector<CandidateScore>& candidates);

// The "analysis" object of `cnorm eval`'s summary (docs/cnorm.md "Analyses") from the profile,
// the seed-averaged summaries (avg; variants "f:<candidate>" and "p=<p>" when evaluated),
// per_question[question][variant] = (correct, answers) and tokens[variant] = (prompt tokens,
// prompts). Keys: "stability" always (or its error), "abs_vs_accuracy" and "token_count_vs_oaa"
// with all_candidates, "density" with density. One human-readable line per result is appended
// to *lines when given.
nlohmann::json eval_analysis(
    const Profile& prof, const std::vector<VariantSummary>& avg,
    const std::map<std::string, std::map<std::string, std::pair<double, double>>>& per_question,
    const std::map<std::string, std::pair<double, double>>& tokens, bool all_candidates,
    bool density, std::vector<std::string>* lines = nullptr);

}  // namespace ragform::cnorm

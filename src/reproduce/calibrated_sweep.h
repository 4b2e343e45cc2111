// The gold-position sweep with and without a calibration-guided attention intervention (Found in
// the Middle, Hsieh et al. 2024, arXiv 2406.16008, section 4, in the form the engine's steering
// offers): for each item and each gold position 1..K of C-NORM's sweep (pipelines/cnorm/tasks.h
// arrange/render, unformatted documents), the reader answers twice:
//   baseline    the prompt as it is;
//   calibrated  the final token's attention (every layer, mean over heads) gives each document's
//               attention under the curve's measure (relevance.h: the per-token mean for curves
//               measured as the paper does), minus the bias curve at its slot (eq. 4), and the
//               answer is generated with the documents' attention steered (the default layers:
//               the last half; the paper's last 16 of 32) by one of three allocations:
//     softmax       the paper's (section 4, eq. 5-6, the default): alpha_k = softmax(rel_k / t)
//                   (t = `temperature`, the paper's 5e-5), and every steered row keeps its own
//                   total attention on the documents, C, split as alpha_k C; nothing outside
//                   the documents changes (redistribute:alpha_1,..,alpha_K on the spans);
//     proportional  ragform's variant: each document's own share of every steered row, `share`
//                   split in proportion to its calibrated relevance (negative relevance counts
//                   as 0; all of them <= 0 splits it evenly), reallocate:S1,..,SK on the spans
//                   (which forces the documents' total to `share` and rescales BOS, the
//                   question and the template);
//     top           ragform's variant: the document of highest calibrated relevance gets
//                   `share` (reallocate:SHARE on its span alone);
//     gold          a diagnostic, not a method: softmax's redistribution with the gold
//                   document's weight 1 and the others' 0 (an oracle's relevance), the ceiling
//                   of the intervention when relevance is right; its rows still record the
//                   calibrated top document.
//
// Answers are greedy, stop at the first newline after text and are graded as C-NORM's sweep grades
// them (best_subspan_em of the first line, text::substring_match). OAA = the mean over positions of
// the accuracy at each position (C-NORM 5.1).
//
// Run store: pipeline "position-bias sweep", one row per (item, "<variant>@<position>") with
// correct, the output and extra {"position", "top", "span"} (the steered document and its bytes;
// proportional also "spans" and "shares", every document's bytes and share; softmax "spans" and
// "weights", the alphas). The run's identity holds the curve, the share and the allocation
// (absent for top, as before it had a choice), and softmax's temperature.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::reproduce {

enum class SweepAllocation { Softmax, Proportional, Top, Gold };
SweepAllocation parse_sweep_allocation(const std::string& s);  // UsageError("--allocation")
const char* sweep_allocation_name(SweepAllocation a);

// Each document's share: `share` split in proportion to max(relevance, 0), evenly when none is
// positive (the proportional allocation).
std::vector<float> proportional_shares(const std::vector<double>& calibrated, double share);

struct CalibratedSweepOptions {
  cnorm::Task task = cnorm::Task::Needle;  // qa or needle
  std::string tmpl;
  cnorm::BiasCurve bias;  // K = its number of slots
  double share = 0.5;     // proportional: the documents' share of each row; top: the top document's
  SweepAllocation allocation = SweepAllocation::Softmax;
  double temperature = cnorm::kPaperTemperature;  // softmax's t
  std::vector<int> layers;  // layers whose attention gives the relevance (every layer)
  int max_tokens = 16;
  // The gold positions swept (0-based, ascending: cnorm::parse_positions); empty = every one. Not
  // the run's identity: a position's rows are the full sweep's, so a subset and a later full sweep
  // of the same items share one run and its rows.
  std::vector<size_t> positions;
  common::RunOrigin origin;
  std::string input_sha256;
  common::RunHooks hooks;
};

struct CalibratedSweepSummary {
  int64_t run = 0;
  size_t items = 0, k = 0;
  std::vector<std::string> variants;          // baseline, calibrated
  std::vector<size_t> positions;              // swept, 0-based (every one of 0..k-1 by default)
  std::vector<std::vector<double>> accuracy;  // [variant][index into positions]
  std::vector<double> oaa;                    // [variant]: the mean over the swept positions
};

CalibratedSweepSummary run_calibrated_sweep(reader::Reader& r, store::RunStore& st,
                                            const std::vector<cnorm::Item>& items,
                                            const CalibratedSweepOptions& opt);

// Accuracy by position and OAA of a "position-bias sweep" run's rows, at `positions` (0-based;
// empty = every position 0..k-1).
CalibratedSweepSummary calibrated_sweep_from_rows(const std::vector<store::Result>& rows, size_t k,
                                                  const std::vector<size_t>& positions = {});

// {"items","k","run","positions":[1-based],"variants":[{"name","oaa","accuracy":[one per
// position]}]}
nlohmann::json calibrated_sweep_json(const CalibratedSweepSummary& s);

}  // namespace ragform::reproduce

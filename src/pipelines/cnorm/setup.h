// A C-NORM calibration as a front end is asked for it (flags of `ragform cnorm calibrate`,
// keywords of Python's ragform.cnorm.calibrate): validated once, here, and turned into the
// runner's options (run.h CalibrateOptions) with the items' seed and k, and the items of a task
// built the one way both front ends (and `cnorm eval`) use.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "eval/qa_record.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/run.h"
#include "pipelines/cnorm/tasks.h"

namespace ragform::cnorm {

// The names a front end gives its arguments, for its error messages ("<name>: <why>"): the CLI's
// flags unless set; Python passes its keywords.
struct CalibrationArgNames {
  std::string samples = "-S";
  std::string k = "-k";
  std::string seed = "--seed";
  std::string p = "-p";
  std::string heads = "--heads";
  std::string p_grid = "--p-grid";
  std::string formats = "--formats";
  std::string search = "--search";
};

// A calibration before validation, as given.
struct CalibrationRequest {
  std::string task;     // qa, kv, needle or longbench
  int64_t samples = 6;  // S >= 1
  std::string delims = default_delimiter_list();
  double p = 0.5;      // in [0, 1]
  std::string p_grid;  // comma-separated ratios (joint (f, p) search); "" = p
  int64_t seed = 0;    // >= 0
  int64_t k = 10;      // documents per prompt >= 1 (longbench: always 1)
  int layer = -1;
  std::string heads = "mean";  // mean, per-head or one head index
  bool context_span = false;
  std::string template_path;          // "" = the task's built-in template
  std::string formats;                // comma-separated SURE document formats; "" = none
  std::string search = "exhaustive";  // or halving
  CalibrationArgNames names;
};

// The validated calibration: the runner's options with setup, samples and k filled (the front end
// adds ctx, origin, hashes, cache, overflow and hooks) and the seed of the task's items.
struct CalibrationPlan {
  CalibrateOptions options;
  // Needle items for calibration come from their own stream (splitmix64(seed)), so they are not
  // the items `cnorm eval` generates from the same seed; the other tasks use the seed itself.
  uint64_t item_seed = 0;
};

// Validates every field (UsageError "<name>: <why>", names from req.names) and builds the plan;
// the candidates are checked (candidate_list) before any input is read.
CalibrationPlan calibration_plan(const CalibrationRequest& req);

// A comma-separated list of ratios in [0, 1] (--p-grid, eval's --density); UsageError
// "<name>: '<item>' is not a number in [0, 1]" for the first item that is not one.
std::vector<double> parse_ratio_list(const std::string& list, const std::string& name);

// --heads: "mean", "per-head" or one head index (a non-negative integer).
AbsOptions parse_abs_options(int layer, const std::string& heads, bool context_span,
                             const std::string& name);

// The items of a task: qa, kv and longbench from `records`, needle generated (n_needle items of k
// slots from `seed`; records are not read). qa: k documents per item with seeded distractors; a
// record without enough of them is left out and its id appended to *skipped, or with no
// `skipped` an Error (build_qa_items).
std::vector<Item> task_items(Task task, const std::vector<eval::QaRecord>& records, size_t k,
                             uint64_t seed, size_t n_needle,
                             std::vector<std::string>* skipped = nullptr);

}  // namespace ragform::cnorm

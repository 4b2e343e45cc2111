// `ragform tune`'s runner: the budgeted search (search.h) with the judge (judge.h) over the
// candidates of a space (space.h), every measurement a row of the run store, then the held-out
// evaluation of the winner against the original presentation. It follows the runner contract of
// pipelines/common (RunHooks, begin_or_resume, RunOrigin):
//
// Run store (docs/tune.md):
//   run "tune"          identity: task, dev records (sha256 of their canonical JSON), template,
//                       max_tokens, the space, the perturbation seed and kinds, ABS options. Not
//                       the budget (a larger budget continues the same run) nor the shard.
//                       Rows (instance = dev record id):
//                         variant "abs <label>"          scores.abs; no correctness
//                         variant "acc <label>"          the answer, correct, prompt_tokens
//                         variant "rob <kind> <label>"   the answer on the perturbed record
//                       run meta "tune_summary": summary_json of the last complete search.
//   run "tune holdout"  identity: task, holdout records, template, max_tokens, seed, kinds.
//                       Rows "acc <label>" and "rob <kind> <label>" of the original and the
//                       winner (instance = holdout record id).
// Labels are presentation.h label(); a candidate whose prompts are byte-identical to an earlier
// candidate's on every dev record (and every perturbed one) is an alias: it has no rows of its own
// and shares the earlier candidate's. A prompt already answered for a record (two perturbations
// that agree on a two-sentence document) is not run again: its row is a copy of the measured one
// (extra.shared_with names that variant) and costs no prompt. Answers are generated in batches of 8
// (a reader may decode them together). A reader's failure is an unmeasured row; the phase then
// stops with an Error and a rerun retries it. Resume: a killed search reruns only the cells without
// a row. Sharding (shard_count > 1): each phase's cells (ABS, each rung, robustness, and the
// held-out answers with their robustness pairs as one phase) are split by what they measure,
// fnv1a64("<instance>|<prompt>") mod n, so every cell sending the same prompt for a record lands
// on one shard and is sent once, as unsharded; a shard runs its share of the first phase that is
// not complete and stops (TuneSummary::complete = false); after `ragform merge` a rerun continues
// with the next phase. The merged store then holds the unsharded search's rows (timings aside)
// and its rerun prints the same summary.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/qa_record.h"
#include "pipelines/common/common.h"
#include "reader/reader.h"
#include "store/run_store.h"
#include "tune/args.h"
#include "tune/deploy.h"
#include "tune/judge.h"
#include "tune/profile.h"
#include "tune/search.h"
#include "tune/space.h"

namespace ragform::tune {

struct TuneOptions {
  Task task = Task::Qa;
  std::string tmpl;  // template_for(task, --template)
  std::vector<eval::QaRecord> dev, holdout;
  size_t holdout_overlap = 0;          // held-out records dropped by tune_options as also in dev
  size_t holdout_repeats = 0;          // ... and as repeating an earlier held-out record
  std::string dev_path, holdout_path;  // their files, for FILE:LINE in errors ("" = generated)
  Space space;
  Objective objective = Objective::Accuracy;
  double robust_floor = 0.8;  // balanced
  DeployRule deploy = DeployRule::Confirmed;
  size_t budget = 0;
  SearchParams search;  // abs_filter: wanted (it runs only when the reader gives attention)
  int max_tokens = 16;
  size_t ctx = 0;  // prompt + answer limit in tokens; 0 = none
  // Where ctx came from ("--ctx", the model file's context length, ...): the output states the
  // cap and its source, since a GGUF's context_length is not always the length it was trained on.
  std::string ctx_source;
  uint64_t seed = 0;  // perturbations and the bootstrap
  int shard_index = 0, shard_count = 1;
  std::string model;       // the profile's model name
  std::string store_path;  // the profile's run.store
  common::RunOrigin origin;
  common::RunHooks hooks;
};

// One candidate's trajectory through the search.
struct CandidateResult {
  Presentation presentation;
  Score score;                                // over the records it was answered on
  std::optional<double> first_rung_accuracy;  // over the first rung's records (main effects)
  std::string dropped_at;  // "context", "abs", "rung <r>", "final" (a finalist not picked), ""
  bool control = false;    // the control arm: the original presentation, never cut
};

struct Side {
  std::string label;
  double accuracy = 0, tokens = 0;
  std::optional<double> robustness;
};

// The held-out comparison, paired over the records both sides answered (items); a record whose
// answer under either side is unmeasured (the reader failed) is counted apart, never as wrong.
struct Holdout {
  size_t items = 0, prompts = 0;
  size_t unmeasured = 0;
  Side original, tuned;
  double diff_lo = 0, diff_hi = 0, mcnemar_p = 1;
};

struct TuneSummary {
  bool complete = false;
  std::string pending;  // why a shard stopped
  Profile profile;
  Plan plan;
  size_t budget = 0, spent = 0, grid = 0;
  size_t new_prompts = 0;  // run by this invocation (search and holdout): not in summary_json
  size_t dropped_for_context = 0;
  bool abs_skipped = false;  // the ABS filter was wanted but the reader gives no attention
  std::vector<CandidateResult> candidates;  // after the context cap and the aliases, in order
  // Candidates that render byte-identical prompts to candidates[second] on every dev record and
  // its perturbations: measured once, as that candidate (its rows, its score, one charge against
  // the budget), and reported as aliases.
  std::vector<std::pair<Presentation, size_t>> aliases;
  std::vector<size_t> finalists;
  size_t winner = 0;
  // The control arm's index in candidates: the original presentation (the largest k of the space
  // that fits the context), added when the space lacks it; none when no k fits.
  std::optional<size_t> control;
  bool control_added = false;  // the space did not hold it
  std::optional<Holdout> holdout;
  Deployment deployment;  // what the profile holds: the winner or the original (deploy.h)
  int64_t run = 0, holdout_run = 0;
  // Rungs whose records gave no signal (search.h kMaxRungGrowth): grown from `from` to `to` dev
  // records before the cut, `prompts` beyond the plan (counted in spent); `signal`: whether a
  // candidate then differed (else the cut fell to the tie-breaker).
  struct Growth {
    size_t rung = 0, from = 0, to = 0, prompts = 0;
    bool signal = false;
  };
  std::vector<Growth> grown;
};

TuneSummary run_tune(reader::Reader& r, store::RunStore& st, const TuneOptions& opt);

// Everything of TuneOptions but what comes from the reader (ctx, ctx_source, model, origin) and
// the hooks. A value outside its declared range is an OptionError naming the option's key
// (args.h); a bad name (task, objective, deploy rule) a UsageError.
TuneOptions tune_options(const TuneArgs& a);

// OptionError("output") when the profile file `output` is the reader's model file (`model`,
// TuneOptions::model: "" for a reader without one), which the front ends know only once the
// reader is open; tune_options checks the files it reads itself (pass 14: Python's
// tune(Model(p), output=p) replaced the model).
void check_output_is_not_the_model(const std::string& output, const std::string& model);

// Removes from `holdout` every record that is also in `dev`, by an id the file gave (the
// "<format>:<line>" default is left out: two files share it by position) or by content (question,
// answers, the first `compared` documents as a multiset (0 = all; tune_options passes the space's
// smallest k), key-value payload); returns how many.
size_t drop_dev_overlap(const std::vector<eval::QaRecord>& dev,
                        std::vector<eval::QaRecord>& holdout, size_t compared = 0);
// Removes from `holdout` every record whose content (as drop_dev_overlap compares it) repeats an
// earlier held-out record's; returns how many. Copies of one question under new ids would count
// as independent pairs and narrow the held-out interval and McNemar p they share.
size_t drop_holdout_repeats(std::vector<eval::QaRecord>& holdout, size_t compared = 0);

// The context cap of a reader and where it came from (TuneOptions::ctx_source): `given` (--ctx or
// ctx=) wins; a native reader of `model_path` (ctx: its context) reports the model file's
// context_length; a remote reader has no cap.
std::pair<size_t, std::string> context_cap(std::optional<size_t> given, bool native,
                                           const std::string& model_path, size_t ctx);

// The object `ragform tune --json` prints: task, objective (and robust_floor for balanced),
// profile (profile.h), winner, budget, spent, grid (integers: prompts; spent = the ABS passes,
// dev answers and robustness pairs the search used, stored now or before; grid = every distinct
// candidate after the context cap on the last rung's dev records and every robustness pair),
// candidates (distinct), aliases [{label, of}] (measured once as `of`), dropped_for_context,
// abs_filter ("on", "off", or "skipped: no attention" when the reader cannot give it),
// context {tokens (null: no cap), from}, plan,
// finalists, trajectory [{label, dropped_at, accuracy, n, tokens, robustness, abs}], main_effects
// {dimension: {value: mean first-rung accuracy}}, holdout {items, prompts, original: {label,
// accuracy, robustness, tokens}, tuned: {...}, diff_ci95: [lo, hi], mcnemar_p}, store, run,
// holdout_run. Accuracies are fractions; a robustness that was not measured is null. Deterministic
// in the store's rows.
nlohmann::ordered_json summary_json(const TuneSummary& s, const TuneOptions& opt);
// The same as text, for the terminal.
std::string summary_text(const TuneSummary& s, const TuneOptions& opt);
// Its line on the budget: what was spent of it, what a full grid would cost and, when the budget
// covers the grid, why the search did not run one; when the plan is the largest there is (its
// first rung on all `dev_records`), that the rest of the budget is not needed.
std::string spending_text(const TuneSummary& s, size_t dev_records);

// n story-needle records (C-NORM's make_needle_items, the gold at its drawn position) with k
// slots, as canonical QA records (ids "needle-<seed>-<i>").
std::vector<eval::QaRecord> needle_records(size_t n, size_t k, uint64_t seed);

}  // namespace ragform::tune

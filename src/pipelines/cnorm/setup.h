// The C-NORM verbs as a front end is asked for them — `cnorm calibrate`, `cnorm eval` and
// `position-bias`'s curve: each verb's options declared once (base/options.h; the CLI's flags and
// Python's keywords come from the declaration), validated once, here, and turned into the
// runner's options with the items of the task, built the one way every front end uses.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/options.h"
#include "eval/qa_record.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/position_bias.h"
#include "pipelines/cnorm/run.h"
#include "pipelines/cnorm/tasks.h"

namespace ragform::cnorm {

// The largest count a declared option takes (an int on every front end).
inline constexpr double kMaxCount = 2147483647;

// `cnorm calibrate`'s options, declared once (base/options.h): the CLI's flags
// (cli/cmd_cnorm.cpp), Python's keywords and signature (ragform.cnorm.calibrate) and the demo come
// from visit(); the initial values are the defaults. calibration_plan() validates them, its errors
// (OptionError) naming the option by its key, which each front end spells its way.
struct CalibrationRequest {
  std::string task = "qa";  // qa, kv, needle or longbench
  int64_t samples = 6;      // S
  std::string delims = default_delimiter_list();
  double p = 0.5;
  std::string p_grid;  // comma-separated ratios (joint (f, p) search); "" = p
  int64_t seed = 0;
  int64_t k = 10;  // documents per prompt (longbench: always 1)
  int64_t layer = -1;
  std::string heads = "mean";  // mean, per-head or one head index
  bool context_span = false;
  std::string template_path;          // "" = the task's built-in template
  std::string formats;                // comma-separated SURE document formats; "" = none
  std::string search = "exhaustive";  // or halving

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"task", "--task", "TASK", "qa, kv, needle or longbench"}.first(), task);
    v(OptionDecl{"S", "-S,--samples", "N", "number of sampled prompts"}.count(1, kMaxCount),
      samples);
    v(OptionDecl{"delims", "--delims", "LIST",
                 "candidates, comma-separated ('original' = unformatted text, 'none' = empty "
                 "delimiter, 'comma' = ',')"},
      delims);
    v(OptionDecl{"p", "-p,--ratio", "P", "fraction of sentences reformatted"}.real(0, 1), p);
    v(OptionDecl{"p_grid", "--p-grid", "LIST",
                 "joint search over (f, p): every delimiter at each p (e.g. 0.25,0.5,1)"},
      p_grid);
    v(OptionDecl{"seed", "--seed", "N", "seed of sampling, distractors and sentence choice"}.count(
          0),
      seed);
    v(OptionDecl{"k", "-k,--docs", "K", "documents per prompt (qa, needle; kv uses every record)"}
          .count(1, kMaxCount),
      k);
    v(OptionDecl{"layer", "--layer", "L", "attention layer (negative counts from the end)"}.count(
          -kMaxCount - 1, kMaxCount),
      layer);
    v(OptionDecl{"heads", "--heads", "MODE",
                 "mean (ABS of the head mean), per-head (mean of head ABS) or a head index"},
      heads);
    v(OptionDecl{"context_span", "--context-span", "",
                 "restrict the attention to the documents' tokens (raw prompts only)"}
          .flag_only(),
      context_span);
    v(OptionDecl{"template", "--template", "FILE",
                 "prompt template (default: the paper's, Appendix D for qa, Appendix B for kv)"},
      template_path);
    v(OptionDecl{"formats", "--formats", "LIST",
                 "SURE document formats as extra candidates: json,markdown,yaml"},
      formats);
    v(OptionDecl{"search", "--search", "MODE",
                 "exhaustive (every candidate on every prompt) or halving"},
      search);
  }
};

// The validated calibration: the runner's options with setup, samples and k filled (the front end
// adds ctx, origin, hashes, cache, overflow and hooks) and the seed of the task's items.
struct CalibrationPlan {
  CalibrateOptions options;
  // Needle items for calibration come from their own stream (splitmix64(seed)), so they are not
  // the items `cnorm eval` generates from the same seed; the other tasks use the seed itself.
  uint64_t item_seed = 0;
};

// Validates every field (OptionError "<key>: <why>") and builds the plan; the candidates are
// checked (candidate_list) before any input is read.
CalibrationPlan calibration_plan(CalibrationRequest req);

// `cnorm eval`'s options for the gold-position sweep (qa, kv, needle; longbench shares k, limit,
// max_tokens and force), declared once as CalibrationRequest is: the CLI's flags
// (cli/cmd_cnorm_eval.cpp) and Python's keywords (ragform.cnorm.evaluate).
struct EvalRequest {
  std::string task = "qa";
  int64_t k = 10;
  int64_t limit = 0;                  // questions (0 = all; needle: 20)
  std::vector<std::string> seeds;     // empty = the profile's seed
  std::optional<int64_t> max_tokens;  // unset: answer_tokens(task)
  std::string template_path;
  std::string positions = "all";  // or natural
  bool all_candidates = false;
  std::string density;  // comma-separated ratios; "" = no density sweep
  bool force = false;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"task", "--task", "TASK", "qa, kv, needle or longbench"}, task);
    v(OptionDecl{"positions", "--positions", "MODE",
                 "all (move the gold to every position) or natural (each item's own gold "
                 "position, for data that already has every position, e.g. `ragform kv "
                 "generate`)"},
      positions);
    v(OptionDecl{"k", "-k,--docs", "K", "documents per prompt"}.count(1, kMaxCount), k);
    v(OptionDecl{"limit", "--limit", "N", "questions to evaluate (0 = all; needle: default 20)"}
          .count(0, kMaxCount),
      limit);
    v(OptionDecl{"seeds", "--seeds", "LIST",
                 "seeds of the distractors (needle: of the items), comma-separated (default: the "
                 "profile's seed)"}
          .list(nullptr),
      seeds);
    v(OptionDecl{"max_tokens", "-n,--max-tokens", "N", "maximum answer tokens"}
          .count(1, kMaxCount)
          .when_unset("16, or 48 for --task kv"),
      max_tokens);
    v(OptionDecl{"template", "--template", "FILE",
                 "prompt template (default: the paper's, Appendix D for qa, Appendix B for kv)"},
      template_path);
    v(OptionDecl{"all_candidates", "--all-candidates", "",
                 "also evaluate every profile candidate (variants f:<name>): rank correlation of "
                 "ABS with accuracy and the token-count analysis"}
          .flag_only(),
      all_candidates);
    v(OptionDecl{"density", "--density", "LIST",
                 "density sweep (Figure 6): f* at each p of LIST (variants p=<p>), e.g. "
                 "0,0.25,0.5,0.75,1"},
      density);
    v(OptionDecl{"force", "--force", "",
                 "evaluate a profile calibrated on another model or task (refused otherwise)"}
          .flag_only(),
      force);
  }
};

// The answer tokens a sweep of `task` generates unless told: 16, or 48 for key-value retrieval,
// whose answer is a UUID (34 tokens in Gemma 3's vocabulary, which splits digits: at 16 every
// answer was cut and graded wrong, OAA 0 by construction). reproduce's kv-retrieval asks 48 too.
int answer_tokens(Task task);

// The validated sweep: the runner's options (task, template, profile, seeds, k, max_tokens,
// positions, candidates, density; the front end adds ctx, keep, origin, input hash and hooks) and
// one item set per seed, built as task_items() builds them and cut to `limit`. A record left out
// for want of distractors is appended to *skipped. Errors: OptionError naming the key, or Error
// for items that cannot be evaluated (none, or a duplicate id). The profile's model/task check is
// the front end's (it knows the model file and how to say --force).
struct EvalPlan {
  EvalOptions options;
  std::vector<std::vector<Item>> items;
};
EvalPlan eval_plan(EvalRequest req, const Profile& profile,
                   const std::vector<eval::QaRecord>& records,
                   std::vector<std::string>* skipped = nullptr);

// `position-bias`'s curve (position_bias.h run_position_bias), declared as the others are: the
// CLI's flags (cli/cmd_position_bias.cpp) and Python's keywords (ragform.bias.position_bias).
struct BiasCurveRequest {
  std::string task = "qa";  // qa or needle
  int64_t k = 10;
  int64_t limit = 10;
  int64_t seed = 0;
  std::string template_path;
  std::string measure = "mean";
  // --sweep's gold positions, 1-based and comma-separated; "" = every position 1..K.
  std::string positions;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"task", "--task", "TASK", "qa or needle"}.first(), task);
    v(OptionDecl{"k", "-k,--docs", "K", "documents (slots) per prompt"}.count(1, kMaxCount), k);
    v(OptionDecl{"limit", "--limit", "N", "items to average over (--rank: records to rank)"}.count(
          1, kMaxCount),
      limit);
    v(OptionDecl{"seed", "--seed", "S", "seed of the items (distractors, needle stories)"}.count(
          0, kMaxCount),
      seed);
    v(OptionDecl{"template", "--template", "FILE",
                 "prompt template (default: the task's built-in one)"},
      template_path);
    v(OptionDecl{"measure", "--measure", "mean|sum",
                 "how a filler's attention is read over its tokens: the mean per token (the "
                 "paper's, section 2.1) or the sum (ragform's earlier form); the curve records it "
                 "and calibration reads documents the same way"},
      measure);
    v(OptionDecl{"positions", "--positions", "LIST",
                 "with --sweep: the gold positions to sweep, 1-based and comma-separated (1,5,10: "
                 "the first, a middle and the last of 10 documents; default (or all): every "
                 "position 1..K); their rows are the full sweep's, in the same run"},
      positions);
  }
};

// The validated curve measurement: the runner's options (task, template, k, seed, measure; the
// front end adds the layers, origin, input hash and hooks) and the items (qa: from `records`,
// those without k - 2 distractors appended to *skipped; needle: generated, no records), at most
// `limit` of them. OptionError naming the key; Error when no item is left.
struct BiasCurvePlan {
  PositionBiasOptions options;
  std::vector<Item> items;
};
BiasCurvePlan bias_curve_plan(BiasCurveRequest req, const std::vector<eval::QaRecord>& records,
                              std::vector<std::string>* skipped = nullptr);

// --positions of a sweep over k documents: 1-based positions, comma-separated, each in 1..k and
// none twice, returned 0-based in ascending order; "" or "all" = every position.
// OptionError("positions",
// ...) naming the first bad item.
std::vector<size_t> parse_positions(const std::string& list, size_t k);

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

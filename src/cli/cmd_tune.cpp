// ragform tune: one budgeted search over every presentation choice of the three pipelines
// (C-NORM's delimiter and p, SURE's document formats, document order and count, SpotlightRAG's
// selection), judged by accuracy and robustness on a dev split, evaluated against the original
// presentation on a held-out split and deployed as one profile. The logic lives in src/tune; this
// file reads flags and files and prints.
#include <cstdio>
#include <optional>
#include <tuple>

#include "base/error.h"
#include "base/progress.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "cli/run_hooks.h"
#include "cli/shard.h"
#include "eval/datasets.h"
#include "pipelines/common/common.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "tune/tune.h"

namespace ragform::cli {
namespace {

using namespace ragform::tune;

struct TuneFlags {
  explicit TuneFlags(Args& args) : a(args) {}
  Args& a;
  ReaderFlags rf{a};
  RemoteFlags remote{a};
  Opt<std::string>& task = a.opt<std::string>("--task", "TASK", "qa, kv or needle").required();
  Opt<std::string>& input = a.opt<std::string>(
      "--input", "FILE", "dev split: QA or KV records (JSONL, gzip ok; needle: generated)", "");
  Opt<std::string>& holdout = a.opt<std::string>(
      "--holdout", "FILE", "held-out split, never searched on (needle: generated)", "");
  Opt<int>& dev_items =
      a.opt<int>("--dev-items", "N", "needle: generated dev records", 24).range(1, 100000);
  Opt<int>& holdout_items =
      a.opt<int>("--holdout-items", "N", "needle: generated held-out records", 32).range(0, 100000);
  Opt<int>& slots =
      a.opt<int>("--needle-slots", "N", "needle: documents per record (1..12)", 6).range(1, 12);
  Opt<long long>& budget = a.opt<long long>("--budget", "N",
                                            "prompts the search may run (ABS passes, dev answers, "
                                            "robustness checks)")
                               .required();
  Opt<std::string>& store_path =
      a.opt<std::string>("--store", "FILE", "SQLite run store (resumes; merge shards)").required();
  Opt<std::string>& out =
      a.opt<std::string>("-o,--output", "FILE", "profile JSON to write (complete searches)", "");
  Opt<std::string>& objective = a.opt<std::string>(
      "--objective", "OBJ",
      "accuracy, robust, balanced (accuracy with a robustness floor) or abs (C-NORM's ABS)",
      "accuracy");
  Opt<double>& floor =
      a.opt<double>("--robust-floor", "R", "balanced: minimum robustness rate", 0.8)
          .range(0.0, 1.0);
  Opt<std::string>& space =
      a.opt<std::string>("--space", "FILE", "space file (JSON or YAML; see below)", "");
  Opt<std::string>& delims =
      a.opt<std::string>("--delims", "LIST", "C-NORM delimiters (original, none, -, ...)", "");
  Opt<std::string>& ps = a.opt<std::string>("--p", "LIST", "C-NORM ratios p", "");
  Opt<std::string>& formats =
      a.opt<std::string>("--formats", "LIST", "plain, json, markdown, yaml, html", "");
  Opt<std::string>& orders =
      a.opt<std::string>("--orders", "LIST", "retrieved, reversed, edges, score", "");
  Opt<std::string>& ks = a.opt<std::string>("--k", "LIST", "documents shown (all or a count)", "");
  Opt<std::string>& spotlight =
      a.opt<std::string>("--spotlight", "LIST", "off, K sentences, K+tokens (<Rel>, category)", "");
  Opt<std::string>& tmpl =
      a.opt<std::string>("--template", "FILE", "prompt template (default: the task's)", "");
  Opt<int>& max_tokens =
      a.opt<int>("--max-tokens", "N", "answer tokens (greedy, stop at a newline)", 12)
          .range(1, 4096);
  Opt<long long>& seed = a.opt<long long>("--seed", "N", "perturbations, needle records", 0);
  Opt<std::string>& abs_filter = a.opt<std::string>(
      "--abs-filter", "on|off", "ABS first filter (readers that give attention)", "on");
  Opt<int>& abs_prompts =
      a.opt<int>("--abs-prompts", "N",
                 "dev records of the ABS pass (--objective abs: 6 unless given, as cnorm "
                 "calibrate's -S)",
                 2)
          .range(1, 100000);
  Opt<double>& abs_keep =
      a.opt<double>("--abs-keep", "F",
                    "share of candidates the ABS filter keeps (unset: 0.5, halved while the "
                    "winner would rest on fewer than 20 dev records per finalist)",
                    0.5)
          .range(0.01, 1.0);
  Opt<int>& eta = a.opt<int>("--eta", "N", "halving factor", 2).range(2, 16);
  Opt<int>& finalists = a.opt<int>("--finalists", "N",
                                   "halving stops at N candidates, the control arm among them "
                                   "(unset: 3, or 2 while the winner would rest on fewer than 20 "
                                   "dev records)",
                                   3)
                            .range(1, 1000);
  Opt<std::string>& deploy = a.opt<std::string>(
      "--deploy", "RULE",
      "confirmed: write the winner only when the held-out CI of its accuracy gain is above 0, "
      "else the original presentation; best: the winner whatever the held-out split says",
      "confirmed");
  Opt<int>& robust_items =
      a.opt<int>("--robust-items", "N", "records of the robustness check", 8).range(1, 100000);
  Opt<std::string>& shard =
      a.opt<std::string>("--shard", "i/n", "run shard i of n of each phase's cells", "");
  Flag& json = a.flag("--json", "print one JSON object");
};

std::string help_text() {
  std::string t =
      "Searches how retrieved context is shown to a reader: C-NORM's delimiter and ratio p, "
      "SURE's\n"
      "document formats, document order (retrieved, reversed, edges = the most relevant at both\n"
      "ends, score = ctxs[].score), the number of documents k and SpotlightRAG's selection (off,\n"
      "K sentences, K+tokens with <Rel> and category tokens). Each candidate renders its prompts\n"
      "with the pipelines' own renderers. The judge: accuracy on the dev split (substring match\n"
      "of the first answer line), robustness (SURE's rate under logic/reverse and logic/random of\n"
      "the gold document, the same pairs for every candidate) and prompt tokens. The search: an\n"
      "ABS filter (attention readers), successive halving on accuracy over growing prefixes of\n"
      "the dev split, the robustness check on the finalists; it never runs more than --budget\n"
      "prompts (too small a budget is a usage error naming the minimum). Every measurement is a\n"
      "row of --store: a killed search resumes, a larger budget continues, --shard i/n splits\n"
      "each phase (merge, then rerun). The winner and the original presentation are then\n"
      "evaluated on the held-out split (its own count of prompts): accuracy, the 95% bootstrap\n"
      "CI of the paired difference, McNemar's p, robustness, tokens.\n"
      "The original presentation is the control arm: measured on every rung and always among\n"
      "the finalists (added when the space lacks it). The profile (-o) holds the winner only when\n"
      "the held-out split confirms it (--deploy confirmed: the CI's lower end above 0), else the\n"
      "original presentation; the output, --json (\"deployed\", \"why\") and the profile say\n"
      "which and why. When the winner would rest on fewer than 20 dev records per finalist the\n"
      "plan narrows the field first (a stricter ABS filter, 2 finalists) unless --abs-keep or\n"
      "--finalists is given; --json's \"final_n\" is that count.\n"
      "Candidates that render the same prompts on every dev record (order edges and retrieved\n"
      "with k <= 2) are measured once and charged once; the output lists them as aliases.\n"
      "Prompts longer than --ctx with the answer are dropped before the search: the space's k\n"
      "and formats are capped for the model, and the output says how many candidates that\n"
      "removed, the cap and where it came from. The default cap is the model file's\n"
      "context_length, which is not always the training length (stories260K's file states 2048;\n"
      "it was trained on 512: give --ctx 512); --reader openai has no cap without --ctx.\n"
      "Default spaces (flags and --space replace a dimension's values):\n";
  for (Task task : {Task::Qa, Task::Needle, Task::Kv})
    t += "  " + std::string(task_name(task)) + ":\n" + describe_space(default_space(task), task) +
         "\n";
  t +=
      "Space file: {\"delimiter\": [\"original\", \"-\"], \"p\": [0.5], \"format\": [\"plain\"], "
      "\"order\": [\"edges\"], \"k\": [\"all\", 3], \"spotlight\": [\"off\", \"3+tokens\"]} or the "
      "same in YAML.";
  return t;
}

int cmd_tune(const std::vector<std::string>& argv) {
  Args a("tune", "Search the presentation of retrieved context within a budget of prompts.",
         help_text());
  TuneFlags f(a);
  if (!a.parse(argv)) return 0;
  f.remote.check();

  TuneArgs ta;
  ta.task = f.task.value;
  ta.input = f.input.value;
  ta.holdout = f.holdout.value;
  ta.dev_items = size_t(f.dev_items.value);
  ta.holdout_items = size_t(f.holdout_items.value);
  ta.needle_slots = size_t(f.slots.value);
  ta.budget = size_t(f.budget.value);
  ta.objective = f.objective.value;
  ta.robust_floor = f.floor.value;
  ta.space_file = f.space.value;
  const std::pair<Opt<std::string>*, const char*> dims[] = {
      {&f.delims, "delimiter"}, {&f.ps, "p"}, {&f.formats, "format"},
      {&f.orders, "order"},     {&f.ks, "k"}, {&f.spotlight, "spotlight"}};
  for (const auto& [flag, dim] : dims)
    if (flag->seen) ta.dimensions.emplace_back(dim, tune::dimension_values(dim, flag->value));
  ta.template_file = f.tmpl.value;
  ta.max_tokens = f.max_tokens.value;
  ta.seed = uint64_t(f.seed.value);
  if (f.abs_filter.value != "on" && f.abs_filter.value != "off")
    throw UsageError("--abs-filter", "on or off, got '" + f.abs_filter.value + "'");
  ta.abs_filter = f.abs_filter.value == "on";
  if (f.abs_prompts.seen) ta.abs_prompts = size_t(f.abs_prompts.value);
  if (f.abs_keep.seen) ta.abs_keep = f.abs_keep.value;
  ta.eta = size_t(f.eta.value);
  if (f.finalists.seen) ta.finalists = size_t(f.finalists.value);
  ta.deploy = f.deploy.value;
  ta.robust_items = size_t(f.robust_items.value);
  if (!f.shard.value.empty()) {
    Shard sh = parse_shard(f.shard.value);
    ta.shard_index = sh.index;
    ta.shard_count = sh.count;
  }
  ta.store_path = f.store_path.value;
  TuneOptions o = tune_options(ta);

  std::unique_ptr<reader::Reader> reader;
  const bool native = f.remote.reader.value == "native";
  if (native) {
    f.rf.resolve_ctx();
    reader = f.rf.open_native();
  } else {
    reader = f.remote.open(f.rf);
  }
  std::tie(o.ctx, o.ctx_source) =
      context_cap(f.rf.ctx.seen ? std::optional<size_t>(f.rf.ctx.value) : std::nullopt, native,
                  f.rf.model.value, size_t(f.rf.ctx.value));
  o.origin = common::origin_of(*reader, common::tool_version(), native ? f.rf.model.value : "",
                               native ? store::sha256_file(f.rf.model.value) : "");
  o.model = f.rf.model.value;
  std::optional<Progress> progress;
  o.hooks = cli_run_hooks(&progress);
  store::RunStore st(f.store_path.value);
  TuneSummary s = run_tune(*reader, st, o);
  if (s.complete && !f.out.value.empty()) save_profile(f.out.value, s.profile);
  std::fprintf(stderr, "tune: %zu new prompts run by this invocation (search and held out)\n",
               s.new_prompts);
  if (native) note_prefill(*reader);
  if (f.json.value)
    print_json_line(summary_json(s, o));
  else
    std::fputs(summary_text(s, o).c_str(), stdout);
  return 0;
}

}  // namespace

RAGFORM_COMMAND("tune", "search the presentation of retrieved context within a budget", cmd_tune,
                75);

}  // namespace ragform::cli

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
#include "cli/option_flags.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "cli/run_hooks.h"
#include "eval/datasets.h"
#include "pipelines/common/common.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "tune/tune.h"

namespace ragform::cli {
namespace {

using namespace ragform::tune;

// The reader's flags, then tune's own, declared once in tune/args.h.
struct TuneFlags {
  TuneFlags(Args& args, TuneArgs& ta) : a(args), tune(a, ta) {}
  Args& a;
  ReaderFlags rf{a};
  RemoteFlags remote{a};
  OptionFlags<TuneArgs> tune;
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
  TuneArgs ta;
  TuneFlags f(a, ta);
  if (!a.parse(argv)) return 0;
  f.remote.check();
  f.tune.apply();
  TuneOptions o;
  try {
    o = tune_options(ta);
    check_output_is_not_the_model(ta.output, f.rf.model.value);  // before the model is read
  } catch (const OptionError& e) {
    throw f.tune.spell(e);
  }

  std::unique_ptr<reader::Reader> reader;
  const bool native = f.remote.reader.value == "native";
  if (native) {
    f.rf.resolve_ctx();
    reader = f.rf.open_native();
  } else {
    reader = f.remote.open(f.rf, /*ctx_caps_prompts=*/true);
  }
  std::tie(o.ctx, o.ctx_source) =
      context_cap(f.rf.ctx.seen ? std::optional<size_t>(f.rf.ctx.value) : std::nullopt, native,
                  f.rf.model.value, size_t(f.rf.ctx.value));
  o.origin = common::origin_for(*reader);
  o.model = f.rf.model.value;
  std::optional<Progress> progress;
  o.hooks = cli_run_hooks(&progress);
  store::RunStore st(ta.store_path);
  TuneSummary s;
  try {
    s = run_tune(*reader, st, o);
  } catch (const OptionError& e) {
    throw f.tune.spell(e);
  }
  if (s.complete && !ta.output.empty()) save_profile(ta.output, s.profile);
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

// ragform cnorm calibrate|apply|eval: C-NORM (cnorm-surface-formatting.txt) as a tool — calibrate
// a delimiter per model and task from the attention balance of a few prompts (sections 4.1-4.2),
// apply it to documents (4.3), and evaluate Baseline / C-NORM / Min-Token by gold-position sweep
// (5.1; cmd_cnorm_eval.cpp). The logic lives in src/pipelines/cnorm; these files read flags and
// files and print.
#include <cstdio>
#include <fstream>
#include <optional>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/progress.h"
#include "cli/cnorm_verbs.h"
#include "cli/command.h"
#include "cli/engine_env.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/output_file.h"
#include "cli/reader_flags.h"
#include "cli/run_hooks.h"
#include "eval/datasets.h"
#include "eval/jsonl.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::cli {
namespace cnorm_verbs {

void note(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

std::vector<eval::QaRecord> load_records(const std::string& path) {
  if (path.empty()) throw UsageError("--input", "required for this task");
  return eval::load_qa_file(path).records;
}

void note_skipped(const std::vector<std::string>& skipped, size_t k) {
  if (!skipped.empty())
    note("cnorm: note: " + std::to_string(skipped.size()) +
         " questions left out: fewer than k - 1 = " + std::to_string(k - 1) +
         " other passages without their answers (first: " + skipped[0] + ")");
}

std::vector<cnorm::Item> input_items(cnorm::Task task, const std::string& input, size_t k,
                                     uint64_t seed, size_t n_needle) {
  std::vector<eval::QaRecord> records;
  if (task != cnorm::Task::Needle)
    records = load_records(input);
  else if (!input.empty())
    throw UsageError("--input", "the needle task generates its items; do not give --input");
  std::vector<std::string> skipped;
  auto items = cnorm::task_items(task, records, k, seed, n_needle, &skipped);
  note_skipped(skipped, k);
  return items;
}

void apply_system_preset(ReaderFlags& rf, const std::string& preset) {
  if (preset.empty()) return;
  if (!rf.chat.value)
    throw UsageError("--system-preset", "a system prompt needs a chat reader: add --chat");
  if (rf.system.seen)
    throw UsageError("--system-preset", "give either --system or --system-preset");
  rf.system.value = cnorm::system_prompt_preset(preset);
}

cnorm::Overflow overflow_for(cnorm::Task task, const Opt<std::string>& flag) {
  if (flag.seen && task != cnorm::Task::Longbench)
    throw UsageError("--overflow", "applies to --task longbench only");
  return cnorm::parse_overflow(flag.value);
}

}  // namespace cnorm_verbs

namespace {

using namespace ragform::cnorm;
using namespace cnorm_verbs;

// ---------------------------------------------------------------- calibrate

// The flags of `ragform cnorm calibrate`, in --help order: the reader's, the input, the declared
// options (setup.h CalibrationRequest), then what only the CLI has (files, cache, overflow).
struct CalibrateFlags {
  explicit CalibrateFlags(Args& args) : a(args) {}
  Args& a;
  ReaderFlags rf{a};
  Opt<std::string>& input =
      a.opt<std::string>("--input", "FILE", "QA or KV records (JSONL, gzip ok)", "");
  CalibrationRequest req;
  OptionFlags<CalibrationRequest> declared{a, req};
  Opt<std::string>& overflow = a.opt<std::string>(
      "--overflow", "MODE",
      "longbench prompt over --ctx: truncate-middle (cut the middle of its context, as "
      "LongBench) or drop (pass the question over)",
      "truncate-middle");
  Opt<std::string>& cache_dir = a.opt<std::string>(
      "--cache-dir", "DIR", "profile cache (default: ~/.cache/ragform/cnorm)", "");
  Flag& no_cache = a.flag("--no-cache", "always recompute");
  Opt<std::string>& dump = a.opt<std::string>("--dump-prompts", "DIR",
                                              "write every scored prompt to DIR/f<i>-s<j>.txt", "");
  Opt<std::string>& store_path = a.opt<std::string>(
      "--store", "FILE",
      "SQLite run store: one row per (prompt, candidate) with ABS, mu, attention; resumes", "");
  Opt<std::string>& out =
      a.opt<std::string>("-o,--output", "FILE", "profile JSON to write").required();
  Opt<std::string>& sys_preset = a.opt<std::string>(
      "--system-preset", "NAME", "named system prompt for --chat: llama2-chat (Appendix D)", "");
};

int cmd_calibrate(const std::vector<std::string>& argv) {
  Args a(
      "cnorm calibrate",
      "Choose the delimiter whose formatted prompts give the most balanced attention (C-NORM 4.2).",
      "Samples S prompts of the task, formats their documents with every candidate delimiter "
      "(ratio p of\n"
      "sentences, seeded rule of docs/cnorm.md), runs one attention-only pass per (prompt, "
      "candidate) and\n"
      "scores the final token's last-layer attention by ABS = 1 - 2|mu - 0.5|. best = argmax mean "
      "ABS.\n"
      "Writes the profile to -o and prints it as one JSON line. Profiles are cached by (model "
      "hash,\n"
      "task, config): a second run with the same configuration reuses the cached profile.\n"
      "Tasks: qa (Appendix D's controlled-setting prompt over QA records), kv (Appendix B's "
      "prompt\n"
      "over lost-in-the-middle KV records), needle (generated story-needle probe; no --input),\n"
      "longbench (LongBench-v2 records, Appendix D's prompt, one context per prompt; a context "
      "over\n"
      "--ctx loses its middle, or with --overflow drop its question is skipped). Candidates:\n"
      "'original' is the unformatted text (p does not apply), the others are delimiters.");
  CalibrateFlags f(a);
  if (!a.parse(argv)) return 0;

  f.declared.apply();
  check_not_input(f.out.value, "-o",
                  {{"-m", f.rf.model.value},
                   {"--input", f.input.value},
                   {"--store", f.store_path.value},
                   {"--template", f.req.template_path}});
  apply_system_preset(f.rf, f.sys_preset.value);
  if (f.declared.seen("p_grid") && f.declared.seen("p"))
    throw UsageError("--p-grid", "give either -p or --p-grid");
  CalibrationPlan plan;
  try {
    plan = calibration_plan(f.req);
  } catch (const OptionError& e) {
    throw f.declared.spell(e);
  }
  const Task task = plan.options.setup.task;
  const Overflow overflow = overflow_for(task, f.overflow);
  std::vector<Item> items =
      input_items(task, f.input.value, plan.options.k, plan.item_seed, plan.options.samples);
  if (items.empty()) throw Error("cnorm calibrate", "no items in " + f.input.value);
  auto reader = f.rf.open_native();
  CalibrateOptions& co = plan.options;
  co.ctx = size_t(f.rf.ctx.value);
  co.origin = common::origin_for(*reader);
  co.input_sha256 = f.input.value.empty() ? "" : store::sha256_file(f.input.value);
  co.system_sha256 = f.rf.system.value.empty() ? "" : store::sha256_hex(f.rf.system.value);
  if (!f.no_cache.value)
    co.cache_dir = f.cache_dir.value.empty() ? cnorm_cache_dir() : f.cache_dir.value;
  co.dump_dir = f.dump.value;
  co.overflow = overflow;
  std::optional<Progress> progress;
  co.hooks = cli_run_hooks(&progress);
  std::optional<store::RunStore> st;
  if (!f.store_path.value.empty()) st.emplace(f.store_path.value);
  const Profile prof = st ? cnorm::run_calibrate(*reader, *st, items, co).profile
                          : cnorm::run_calibrate(*reader, items, co).profile;
  save_profile(prof, f.out.value);
  for (const auto& l : calibration_lines(prof)) note(l);
  note_prefill(*reader);
  print_json_line(profile_to_json(prof));
  return 0;
}

// ---------------------------------------------------------------- apply

int cmd_apply(const std::vector<std::string>& argv) {
  Args a("cnorm apply",
         "Reformat documents with a calibrated profile's delimiter and ratio (C-NORM 4.3).",
         "Input JSONL lines are QA records with \"ctxs\" (every ctxs[i].text is reformatted) or "
         "objects with a\n"
         "\"text\" string; every other field is copied unchanged. Output: the same lines, to -o or "
         "stdout.");
  auto& profile =
      a.opt<std::string>("--profile", "FILE", "profile from cnorm calibrate").required();
  auto& input = a.opt<std::string>("--input", "FILE", "documents (JSONL, gzip ok)").required();
  auto& out = a.opt<std::string>("-o,--output", "FILE", "output JSONL (default: stdout)", "");
  if (!a.parse(argv)) return 0;
  Profile prof = load_profile(profile.value);
  (void)applied_format(prof);  // a profile apply cannot deploy fails before -o is written
  // Written whole (AtomicFile): a bad line leaves the old output, not half of a new one (pass 13),
  // and never onto a file read here.
  check_not_input(out.value, "-o", {{"--input", input.value}, {"--profile", profile.value}});
  std::optional<AtomicFile> file;
  if (!out.value.empty() && out.value != "-") file.emplace(out.value, "-o");
  size_t n_lines = 0, n_docs = 0;
  eval::for_each_json_record(input.value, {}, [&](const eval::JsonRow& row) {
    const Applied applied = apply_profile(prof, row.value);
    n_docs += applied.documents;
    std::string s = applied.record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (file)
      file->stream() << s << '\n';
    else
      std::printf("%s\n", s.c_str());
    ++n_lines;
  });
  if (file) file->commit();
  if (prof.best.original)
    note("cnorm apply: " + std::to_string(n_docs) + " documents in " + std::to_string(n_lines) +
         " lines left unchanged: the profile's best candidate is 'original' (the text as it came)");
  else
    note("cnorm apply: " + std::to_string(n_docs) + " documents in " + std::to_string(n_lines) +
         " lines formatted with '" + prof.best.name + "', p = " + std::to_string(prof.p));
  return 0;
}

int run_cnorm(const std::vector<std::string>& args) {
  return run_verbs(
      "cnorm", "C-NORM: calibrate, apply and evaluate attention-balanced context formatting.",
      {{"calibrate", "choose a delimiter by mean Attention Balance Score over sampled prompts",
        cmd_calibrate},
       {"apply", "reformat documents with a calibrated profile", cmd_apply},
       {"eval", "gold-position sweep: Baseline vs C-NORM vs Min-Token (OAA, OPA)", run_cnorm_eval}},
      args);
}

RAGFORM_COMMAND("cnorm", "C-NORM: calibrate|apply|eval attention-balanced context formatting",
                run_cnorm, 60);

}  // namespace
}  // namespace ragform::cli
// ragform cnorm eval: C-NORM's evaluation (cnorm-surface-formatting.txt) — Baseline / C-NORM /
// Min-Token by gold-position sweep over qa, kv and needle items (section 5.1, OAA and OPA), with
// the candidate and density analyses, or LongBench-v2-style multiple choice (5.2). The runners live
// in src/pipelines/cnorm/run.h; this file reads flags and files and prints. The other verbs:
// cmd_cnorm.cpp.
#include <cstdio>
#include <optional>
#include <set>

#include "base/error.h"
#include "cli/cnorm_verbs.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/reader_flags.h"
#include "cli/run_hooks.h"
#include "cli/shard.h"
#include "engine/gguf/gguf.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::cli::cnorm_verbs {

using namespace ragform::cnorm;

namespace {

// The profile's check (calibrate.h profile_mismatch): a UsageError unless forced, then a note.
// The model is read as a GGUF first: a file that is not one is that error, not "calibrated on
// another model" with the hash of whatever it is (pass 17).
void check_profile(const Profile& prof, const std::string& model_path, const std::string& task,
                   bool force) {
  gguf::File::open(model_path);
  std::string why = profile_mismatch(prof, store::sha256_file(model_path), task);
  if (why.empty()) return;
  if (!force) throw UsageError("--profile", why + " (calibrate for this pair, or --force)");
  note("cnorm eval: note: --force: " + why);
}

// `cnorm eval --task longbench`: LongBench-v2-style multiple choice (section 5.2; run.h
// run_longbench).
int eval_longbench(ReaderFlags& rf, const std::string& input, const Profile& prof, int limit,
                   int max_tokens, Overflow overflow, Extract extract,
                   const std::string& store_path, const Shard& shard, bool force) {
  std::vector<McItem> items = build_mc_items(load_records(input));
  if (limit > 0 && items.size() > size_t(limit)) items.resize(size_t(limit));
  if (items.empty()) throw Error("cnorm eval", "no questions in " + input);
  if (!profile_format(prof).wrapper.empty())
    throw UsageError("--profile", "document formats are not supported for longbench");
  check_profile(prof, rf.model.value, "longbench", force);
  auto reader = rf.open_native();
  LongbenchOptions lo;
  lo.profile = prof;
  lo.ctx = size_t(rf.ctx.value);
  lo.max_tokens = max_tokens;
  lo.overflow = overflow;
  lo.extract = extract;
  lo.keep = [&shard](const std::string& id) { return shard.keeps(id); };
  lo.origin = common::origin_for(*reader);
  lo.input_sha256 = store::sha256_file(input);
  std::optional<Progress> progress;
  lo.hooks = cli_run_hooks(&progress);
  store::RunStore st(store_path);
  LongbenchSummary sum = run_longbench(*reader, st, items, lo);
  for (const auto& s : sum.summaries)
    std::fprintf(stderr, "  %-10s accuracy %.4f (n = %zu)\n", s.variant.c_str(), s.accuracy, s.n);
  note_prefill(*reader);
  nlohmann::json j = longbench_summary_json(sum);
  j["store"] = store_path;
  j["shard"] = shard.describe();
  print_json_line(j);
  return 0;
}

}  // namespace

// The flags of `ragform cnorm eval`, in --help order: the reader's, the input, the declared options
// (setup.h EvalRequest), then what only the CLI has (files, longbench's, the shard).
struct EvalFlags {
  explicit EvalFlags(Args& args) : a(args) {}
  Args& a;
  ReaderFlags rf{a};
  Opt<std::string>& input =
      a.opt<std::string>("--input", "FILE", "QA records (qa) or key-value records (kv)", "");
  Opt<std::string>& profile =
      a.opt<std::string>("--profile", "FILE", "profile from cnorm calibrate").required();
  EvalRequest req;
  OptionFlags<EvalRequest> declared{a, req};
  Opt<std::string>& overflow = a.opt<std::string>(
      "--overflow", "MODE",
      "longbench prompt and answer over --ctx: truncate-middle (cut the middle of its context, "
      "as LongBench) or drop (leave the question out)",
      "truncate-middle");
  Opt<std::string>& extract = a.opt<std::string>(
      "--extract", "MODE",
      "longbench answer letter: strict (LongBench-v2's pred.py: case-sensitive \"The correct "
      "answer is (X)\", then \"... is X\", else none; what `ragform reproduce` uses) or lenient "
      "(also any case, a first \"(X)\" or a leading letter)",
      extract_name(LongbenchOptions{}.extract));
  Opt<std::string>& store_path =
      a.opt<std::string>("--store", "FILE", "SQLite run store").required();
  Opt<std::string>& sys_preset = a.opt<std::string>(
      "--system-preset", "NAME", "named system prompt for --chat: llama2-chat (Appendix D)", "");
  ShardFlag sf{a};
};

int run_cnorm_eval(const std::vector<std::string>& argv) {
  Args a("cnorm eval",
         "Gold-position sweep: Baseline vs C-NORM vs Min-Token, OAA and OPA (C-NORM 5.1).",
         "Per question: the gold passage plus k-1 distractors (other questions' gold passages "
         "without its\n"
         "answers, seeded), the gold at each of the k positions; greedy answer, graded by "
         "best_subspan_em on\n"
         "its first line. Every prompt and answer is stored in --store (one run per seed, one row "
         "per\n"
         "question, position and variant; a rerun resumes). Prints one JSON summary line: the "
         "variants\n"
         "averaged over the seeds, and each seed's own.");
  EvalFlags f(a);
  if (!a.parse(argv)) return 0;

  f.declared.apply();
  const Shard shard = f.sf.shard();
  apply_system_preset(f.rf, f.sys_preset.value);
  const EvalRequest& req = f.req;
  Task task;
  try {
    task = parse_task(req.task);
  } catch (const OptionError& e) {
    throw f.declared.spell(e);
  }
  const Overflow overflow = overflow_for(task, f.overflow);
  if (f.extract.seen && task != Task::Longbench)
    throw UsageError("--extract", "applies to --task longbench only");
  const Extract extract = parse_extract(f.extract.value);
  if (task == Task::Longbench)
    return eval_longbench(f.rf, f.input.value, load_profile(f.profile.value), int(req.limit),
                          req.max_tokens ? int(*req.max_tokens) : answer_tokens(task), overflow,
                          extract, f.store_path.value, shard, req.force);
  const Profile prof = load_profile(f.profile.value);
  check_profile(prof, f.rf.model.value, task_name(task), req.force);
  std::vector<eval::QaRecord> records;
  if (task != Task::Needle)
    records = load_records(f.input.value);
  else if (!f.input.value.empty())
    throw UsageError("--input", "the needle task generates its items; do not give --input");
  std::vector<std::string> skipped;
  EvalPlan plan;
  try {
    plan = eval_plan(req, prof, records, &skipped);
  } catch (const OptionError& e) {
    throw f.declared.spell(e);
  }
  note_skipped(skipped, plan.options.k);
  EvalOptions& eo = plan.options;
  eo.ctx = size_t(f.rf.ctx.value);
  eo.keep = [&shard](const std::string& id) { return shard.keeps(id); };
  eo.input_sha256 = f.input.value.empty() ? "" : store::sha256_file(f.input.value);
  std::optional<Progress> progress;
  eo.hooks = cli_run_hooks(&progress);

  auto reader = f.rf.open_native();
  eo.origin = common::origin_for(*reader);
  store::RunStore st(f.store_path.value);
  EvalSummary sum = run_eval(*reader, st, plan.items, eo);
  for (const auto& l : eval_lines(sum)) note(l);
  for (const auto& l : sum.analysis_lines) note("  " + l);
  note_prefill(*reader);
  nlohmann::json j = eval_summary_json(sum, eo);
  j["store"] = f.store_path.value;
  j["shard"] = shard.describe();
  print_json_line(j);
  return 0;
}

}  // namespace ragform::cli::cnorm_verbs

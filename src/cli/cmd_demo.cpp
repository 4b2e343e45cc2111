// ragform demo: the README's main command. A script of the real commands, each printed as the
// command line that does the same (so a user can rerun any of them by hand, in order) and run
// in-process through the same library calls that command makes, on the real trained stories260K
// model by default:
//   1. cnorm calibrate --task needle --store   C-NORM delimiter calibration (ABS, Figure 3 data)
//   2. cnorm eval --task needle --store        gold-position sweep: Baseline / Min-Token / C-NORM
//   3. data needle | sure perturb | sure filter | sure eval
//                                              rule-based perturbations (logic, format, metadata)
//                                              of story-needle items and NQ passages, RR/WR/LR
//   4. Spotlight selection + recall@K on HotpotQA dev with GloVe vectors, through the runner
//      `spotlight eval --store` uses (pipelines/spotlight/run.h)
//   5. report                                  one self-contained HTML page
// Each step writes the file its printed command writes (its stdout after '>'), and the next step
// reads it by the printed path: the steps hand each other exactly what the commands would.
// Outputs: ./ragform-demo.sqlite and ./ragform-demo.html (or --out-dir); intermediate files go to
// a temporary folder that is removed at the end (or to --work-dir, kept). A rerun reuses every
// stored row (resumable).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "cli/args.h"
#include "cli/cnorm_verbs.h"
#include "cli/command.h"
#include "cli/engine_env.h"
#include "cli/reader_flags.h"
#include "cli/run_hooks.h"
#include "cli/sure_verbs.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "pipelines/spotlight/spotlight.h"
#include "pipelines/sure/sure.h"
#include "report/write_report.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::cli {
namespace {

namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" '\"$\\|&;<>*?()") == std::string::npos) return s;
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// Prints the command line a step stands for, with the file its stdout goes to. The whole path:
// a later step reads the file by it, and the printed lines run as printed.
void echo(const std::vector<std::string>& args, const fs::path& out_file) {
  std::string line = "$ ragform";
  for (const auto& a : args) line += " " + quote(a);
  if (!out_file.empty()) line += " > " + quote(out_file.string());
  std::fprintf(stderr, "\n%s\n", line.c_str());
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Writes what a step's command prints on stdout to the file its printed line redirects it to.
void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw Error("demo", "cannot write " + p.string());
}

// A JSON object as a command prints it on stdout (cli/json_out.h print_json_line), with '\n'.
std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

void note(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

// The files `from`, one after the other, into `to`; printed as the `cat` that does the same.
void concatenate(const std::vector<fs::path>& from, const fs::path& to) {
  std::string line = "$ cat";
  for (const auto& f : from) line += " " + quote(f.string());
  std::fprintf(stderr, "\n%s > %s\n", line.c_str(), quote(to.string()).c_str());
  std::string all;
  for (const auto& f : from) all += read_text(f);
  write_text(to, all);
}

// The reader flags of a printed step that names `-m MODEL` and no other reader flag, parsed as
// that command parses them: the engine settings, the --ctx default and its note are the printed
// command's, not a second copy of its defaults.
struct StepReader {
  explicit StepReader(const std::string& model) { a.parse({"-m", model}); }
  Args a{"demo", ""};
  ReaderFlags rf{a};
};

// The same for a `sure` step (its reader set-up and prompt directory); no model: no reader.
struct StepSure {
  explicit StepSure(const std::string& model) {
    a.parse(model.empty() ? std::vector<std::string>{} : std::vector<std::string>{"-m", model});
  }
  Args a{"demo", ""};
  SureSetup su{a};
};

// The demo's inputs, found before any step runs so that a missing file is reported at once.
struct DemoInputs {
  std::string shared, model, nq, hotpot, glove;
};

DemoInputs find_inputs(const std::string& shared_flag, const std::string& model_flag) {
  if (!shared_flag.empty() && !fs::is_directory(shared_flag))
    throw UsageError("--shared", shared_flag + " is not a directory");
  DemoInputs in;
  try {
    in.shared = shared_dir(shared_flag);
  } catch (const Error& e) {
    throw Error("demo",
                std::string("no shared data folder (fixtures/ and data/) found: pass --shared DIR, "
                            "or set RAGFORM_SHARED=DIR (") +
                    e.what() + ")");
  }
  const std::string& sh = in.shared;
  in.model = model_flag.empty() ? sh + "/fixtures/models/stories260K.gguf" : model_flag;
  in.nq = sh + "/data/lost-in-the-middle/nq-open-oracle.jsonl.gz";
  in.hotpot = sh + "/data/hotpotqa-distractor/dev.jsonl";
  in.glove = sh + "/data/embeddings/glove-50d-5k.json";
  std::string missing;
  for (const auto& p : {in.model, in.nq, in.hotpot, in.glove})
    if (!fs::exists(p)) missing += "\n  " + p;
  if (!missing.empty())
    throw Error("demo",
                "missing input files (give -m MODEL.gguf for the model, --shared DIR for "
                "the data):" +
                    missing);
  return in;
}

// Sizes from the command line, and where the outputs and the intermediate files go.
struct DemoPlan {
  int needle = 0, nq = 0, docs = 0, hotpot = 0;
  fs::path db, html, work;
};

// What each step printed, for the summary.
struct DemoResults {
  nlohmann::json profile, cnorm_eval;  // the last JSON line of calibrate and of eval
  size_t sure_pairs = 0;
  nlohmann::json sure_overall;
  std::vector<nlohmann::json> sure_categories;  // the paper's category RR (Figure 4)
  std::vector<nlohmann::json> sure_pooled;      // every pair of a category, with RR's 95% CI
  spotlight::RunSummary spotlight;
};

// Step 1: `cnorm calibrate --task needle -S 6 -k K -o PROFILE --cache-dir DIR --store DB`, as
// cmd_cnorm.cpp runs it (every other flag at its default).
void calibrate_step(const DemoInputs& in, const DemoPlan& plan, DemoResults& res) {
  const std::string K = std::to_string(plan.docs);
  const fs::path profile = plan.work / "profile.json", out = plan.work / "calibrate.json";
  const fs::path cache = plan.work / "cache";
  echo({"cnorm", "calibrate", "-m", in.model, "--task", "needle", "-S", "6", "-k", K, "-o",
        profile.string(), "--cache-dir", cache.string(), "--store", plan.db.string()},
       out);
  StepReader step(in.model);
  cnorm::CalibrationRequest req;
  req.task = "needle";
  req.k = plan.docs;
  cnorm::CalibrationPlan cp = cnorm::calibration_plan(req);
  cnorm::CalibrateOptions& co = cp.options;
  const auto items =
      cnorm_verbs::input_items(cnorm::Task::Needle, "", co.k, cp.item_seed, co.samples);
  auto reader = step.rf.open_native();
  co.ctx = size_t(step.rf.ctx.value);
  co.origin = common::origin_for(*reader);
  co.cache_dir = cache.string();
  std::optional<Progress> progress;
  co.hooks = cli_run_hooks(&progress);
  store::RunStore st(plan.db);
  const cnorm::Profile prof = cnorm::run_calibrate(*reader, st, items, co).profile;
  cnorm::save_profile(prof, profile.string());
  for (const auto& l : cnorm::calibration_lines(prof)) note(l);
  note_prefill(*reader);
  const std::string line = json_text(cnorm::profile_to_json(prof));
  write_text(out, line);
  res.profile = nlohmann::json::parse(line);
}

// Step 2: `cnorm eval --task needle --profile PROFILE --limit N -k K --store DB`, as
// cmd_cnorm_eval.cpp runs it: one seed (the profile's), every gold position, the three variants.
void cnorm_eval_step(const DemoInputs& in, const DemoPlan& plan, DemoResults& res) {
  const fs::path profile = plan.work / "profile.json", out = plan.work / "cnorm-eval.json";
  echo({"cnorm", "eval", "-m", in.model, "--task", "needle", "--profile", profile.string(),
        "--limit", std::to_string(plan.needle), "-k", std::to_string(plan.docs), "--store",
        plan.db.string()},
       out);
  StepReader step(in.model);
  const cnorm::Task task = cnorm::Task::Needle;
  const cnorm::Profile prof = cnorm::load_profile(profile.string());
  const std::string model_sha = store::sha256_file(in.model);
  if (std::string why = cnorm::profile_mismatch(prof, model_sha, cnorm::task_name(task));
      !why.empty())
    throw Error("demo", why);
  cnorm::EvalOptions eo;
  eo.task = task;
  eo.tmpl = cnorm::load_template(task, "");
  eo.profile = prof;
  eo.seeds = {prof.seed};
  eo.k = size_t(plan.docs);
  // Read before the reader opens, as the command does (its --ctx before resolve_ctx).
  eo.ctx = size_t(step.rf.ctx.value);
  const std::vector<cnorm::Item> items =
      cnorm_verbs::input_items(task, "", size_t(plan.docs), prof.seed, size_t(plan.needle));
  if (items.empty()) throw Error("cnorm eval", "no items");
  std::optional<Progress> progress;
  eo.hooks = cli_run_hooks(&progress);
  auto reader = step.rf.open_native();
  eo.origin = common::origin_for(*reader);
  store::RunStore st(plan.db);
  const cnorm::EvalSummary sum = cnorm::run_eval(*reader, st, {items}, eo);
  for (const auto& l : cnorm::eval_lines(sum)) note(l);
  for (const auto& l : sum.analysis_lines) note("  " + l);
  note_prefill(*reader);
  nlohmann::json j = cnorm::eval_summary_json(sum, eo);
  j["store"] = plan.db.string();
  j["shard"] = Shard{}.describe();
  const std::string line = json_text(j);
  write_text(out, line);
  res.cnorm_eval = nlohmann::json::parse(line);
}

// `sure perturb --input FILE --kinds logic,format,metadata [--limit N --docs 1]` with no reader,
// as cmd_sure.cpp runs it: the rule-based kinds; the reader-written one is skipped with its note.
void perturb_step(const std::string& input, int limit, int docs, const fs::path& out) {
  std::vector<std::string> args = {"sure", "perturb", "--input",
                                   input,  "--kinds", "logic,format,metadata"};
  if (limit > 0) args.insert(args.end(), {"--limit", std::to_string(limit)});
  if (docs > 0) args.insert(args.end(), {"--docs", std::to_string(docs)});
  echo(args, out);
  StepSure step("");
  const std::vector<sure::Kind> kinds = sure::select_kinds("logic,format,metadata");
  sure::PerturbOptions po;
  po.max_docs = docs;
  po.rules.seed = 0;
  po.rules.knowledge_cutoff = "2023-10-01";
  po.llm.max_tokens = 512;
  po.llm.batch = 8;
  std::optional<Progress> progress;
  po.hooks = cli_run_hooks(&progress);
  std::vector<sure::Kind> skipped;
  const std::vector<sure::Kind> active = sure::runnable_kinds(kinds, {}, &skipped);
  eval::LoadOptions lo;
  lo.limit = size_t(limit);
  const auto recs = eval::load_qa_file(input, lo).records;
  for (sure::Kind k : skipped) note(perturb_skip_note(k));
  const sure::PerturbResult res = sure::run_perturb(recs, active, {}, sure::PromptSet{}, po);
  const std::vector<std::string> notes = sure::perturb_notes(res, recs.size());
  for (size_t i = 0; i + 1 < notes.size(); ++i) note(notes[i]);
  write_text(out, sure::pairs_jsonl(res.pairs));
  note(notes.back());
}

// `sure filter --input PAIRS --nli none`: the answer checks alone, no reader.
void filter_step(const fs::path& pairs_file, const fs::path& out, DemoResults& res) {
  echo({"sure", "filter", "--input", pairs_file.string(), "--nli", "none"}, out);
  StepSure step("");
  sure::FilterOptions fo;
  fo.nli = sure::parse_nli_scope("none");
  fo.batch = 8;
  const std::vector<sure::Pair> pairs = read_shard(pairs_file.string(), Shard{});
  sure::FilterCounts counts;
  const auto verdicts = sure::filter_pairs(pairs, nullptr, step.su.prompts(), fo, counts);
  const sure::FilterLines lines = sure::filter_lines(pairs, verdicts);
  write_text(out, lines.kept);
  note("sure filter: " + counts.to_json().dump());
  res.sure_pairs = lines.n_kept;
}

// `sure eval -m MODEL --input KEPT --store DB --resamples 500`, as cmd_sure.cpp runs it.
void sure_eval_step(const DemoInputs& in, const DemoPlan& plan, const fs::path& kept,
                    DemoResults& res) {
  const fs::path out = plan.work / "sure-eval.json";
  echo({"sure", "eval", "-m", in.model, "--input", kept.string(), "--store", plan.db.string(),
        "--resamples", "500"},
       out);
  StepSure step(in.model);
  const SureSetup& su = step.su;
  su.require("sure eval");
  std::string input_sha256;
  const std::vector<sure::Pair> pairs = read_shard(kept.string(), Shard{}, &input_sha256);
  const sure::PromptSet prompts = su.prompts();
  auto reader = su.open("sure eval");
  sure::EvalOptions eo;
  eo.temperature = 0.1;
  eo.max_tokens = 32;
  eo.seed = 0;
  eo.batch = 8;
  eo.chain_of_note = false;
  store::RunStore st(plan.db, store::RunStore::Mode::create, store::RunStore::Durability::normal);
  sure::EvalRunOptions ro;
  ro.eval = eo;
  ro.pairs_sha256 = input_sha256;
  ro.origin = su.origin(*reader);
  std::optional<Progress> progress;
  ro.hooks = cli_run_hooks(&progress);
  const sure::EvalSummary sum = sure::run_eval(*reader, st, prompts, pairs, ro);
  const std::string lines = sure::report_jsonl(sure::robustness_report(sum.outcomes, eo.seed, 500));
  write_text(out, lines);
  note(sure::eval_note(sum));
  note_prefill(*reader);
  std::istringstream in_lines(lines);
  for (std::string l; std::getline(in_lines, l);) {
    auto j = nlohmann::json::parse(l);
    if (j.value("scope", "") == "overall" && j.value("subset", "") == "all") res.sure_overall = j;
    if (j.value("scope", "") == "category") res.sure_categories.push_back(j);
    if (j.value("scope", "") == "category_pooled" && j.value("subset", "") == "all")
      res.sure_pooled.push_back(j);
  }
}

// The demo's one finding about the reader, with its interval: the perturbation category whose
// pairs change the answer's grade most often (1 - RR over every pair of the category, the
// bootstrap 95% CI of RR turned around), said to be an effect only when its interval excludes 0.
// Every category is printed, so the one named is not picked from a hidden list.
std::vector<std::string> sure_finding(const std::vector<nlohmann::json>& pooled) {
  std::vector<std::string> out;
  const nlohmann::json* most = nullptr;
  auto flips = [](const nlohmann::json& j) { return 1.0 - j.value("RR", 1.0); };
  char b[256];
  for (const auto& j : pooled) {
    if (!j.contains("RR_ci95") || !j["RR_ci95"].is_array()) continue;
    const double lo = 1.0 - j["RR_ci95"][1].get<double>(), hi = 1.0 - j["RR_ci95"][0].get<double>();
    std::snprintf(b, sizeof b, "%-9s %5.1f%% of %lld pairs change grade [%.1f, %.1f]",
                  j.value("key", std::string()).c_str(), 100 * flips(j),
                  (long long)j.value("n", int64_t(0)), 100 * lo, 100 * hi);
    out.push_back(b);
    if (lo > 0 && (!most || flips(j) > flips(*most))) most = &j;
  }
  if (out.empty()) return out;
  if (most) {
    const double lo = 1.0 - (*most)["RR_ci95"][1].get<double>();
    const double hi = 1.0 - (*most)["RR_ci95"][0].get<double>();
    std::snprintf(b, sizeof b,
                  "finding: %s perturbations of a document change the grade of %.1f%% of this "
                  "reader's answers (95%% CI [%.1f, %.1f]; %lld right->wrong, %lld wrong->right)",
                  most->value("key", std::string()).c_str(), 100 * flips(*most), 100 * lo, 100 * hi,
                  (long long)most->value("lose", int64_t(0)),
                  (long long)most->value("win", int64_t(0)));
  } else {
    std::snprintf(b, sizeof b,
                  "finding: no category changes answers measurably at this size (every 95%% CI "
                  "includes 0): more pairs (--nq, --needle) narrow it");
  }
  out.insert(out.begin(), b);
  return out;
}

// Steps 1-2: C-NORM on the story-needle probe.
void cnorm_steps(const DemoInputs& in, const DemoPlan& plan, DemoResults& res) {
  calibrate_step(in, plan, res);
  cnorm_eval_step(in, plan, res);
}

// Step 3: SURE, rule-based perturbations of story-needle items and NQ passages, then eval.
void sure_steps(const DemoInputs& in, const DemoPlan& plan, DemoResults& res) {
  const fs::path& work = plan.work;
  const fs::path needle = work / "needle.jsonl";
  echo({"data", "needle", "-n", std::to_string(plan.needle), "-k", "2", "--seed", "0"}, needle);
  write_text(needle, cnorm::needle_jsonl(size_t(plan.needle), 2, 0));
  std::vector<fs::path> parts = {work / "pairs-needle.jsonl"};
  perturb_step(needle.string(), 0, 0, parts.back());
  if (plan.nq > 0) {
    parts.push_back(work / "pairs-nq.jsonl");
    perturb_step(in.nq, plan.nq, 1, parts.back());
  }
  const fs::path pairs = work / "pairs.jsonl";
  concatenate(parts, pairs);
  filter_step(pairs, work / "kept.jsonl", res);
  sure_eval_step(in, plan, work / "kept.jsonl", res);
}

// Step 5: `report DB -o HTML`, as cmd_report.cpp runs it.
void report_step(const DemoPlan& plan) {
  const fs::path out = plan.work / "report.json";
  echo({"report", plan.db.string(), "-o", plan.html.string()}, out);
  store::RunStore st(plan.db, store::RunStore::Mode::read_only);
  const report::WrittenReport w =
      report::write_report(st, plan.db.string(), report::ReportOptions{}, plan.html.string());
  note(w.summary_line());
  write_text(out, json_text(w.to_json()));
}

// Step 4: Spotlight on HotpotQA dev, its rows written with the pipeline's runner into the store.
void spotlight_step(const DemoInputs& in, const DemoPlan& plan, store::RunStore& st,
                    DemoResults& res) {
  std::fprintf(stderr,
               "\n# spotlight selection + recall (the rows of `ragform spotlight eval --input %s "
               "--vectors %s --limit %d`, stored)\n",
               in.hotpot.c_str(), in.glove.c_str(), plan.hotpot);
  eval::LoadOptions lo;
  lo.limit = size_t(plan.hotpot);
  auto recs = eval::load_qa_file(in.hotpot, lo).records;
  auto wv = spotlight::WordVectors::load(in.glove);
  spotlight::StaticEncoder enc(wv);
  spotlight::RunOptions so;
  so.input_path = in.hotpot;
  so.vectors_path = in.glove;
  so.params = spotlight::default_score_params();  // what `spotlight select` uses with no flags
  so.origin.tool_version = common::tool_version();
  res.spotlight = spotlight::run_eval(enc, st, recs, so);
  const spotlight::RunSummary& ss = res.spotlight;
  std::fprintf(stderr, "spotlight: %zu questions (%zu rows written, %zu reused, %zu skipped)\n",
               ss.questions, ss.written, ss.reused, ss.skipped);
}

// The summary on stdout: one line or two per pipeline, then where the outputs are.
void print_summary(const DemoInputs& in, const DemoPlan& plan, const DemoResults& res,
                   double secs) {
  std::printf("ragform demo on %s (%.0f s)\n", fs::path(in.model).filename().c_str(), secs);
  const nlohmann::json& prof = res.profile;
  if (prof.is_object() && prof.contains("best") && prof["best"].is_string())
    std::printf("  C-NORM    calibrated delimiter f* = '%s' over %zu candidates\n",
                prof["best"].get<std::string>().c_str(),
                prof.contains("candidates") ? prof["candidates"].size() : size_t(0));
  if (res.cnorm_eval.is_object() && res.cnorm_eval.contains("variants"))
    for (const auto& v : res.cnorm_eval["variants"])
      std::printf("            %-10s OAA %.3f  OPA %.3f\n", v.value("name", std::string()).c_str(),
                  v.value("oaa", 0.0), v.value("opa", 0.0));
  if (res.sure_overall.is_object())
    std::printf("  SURE      %zu pairs: RR %.3f  WR %.3f  LR %.3f\n", res.sure_pairs,
                res.sure_overall.value("RR", 0.0), res.sure_overall.value("WR", 0.0),
                res.sure_overall.value("LR", 0.0));
  if (!res.sure_categories.empty()) {
    std::printf("            category RR (mean of its perturbations' RR, Golden pairs):");
    for (const auto& c : res.sure_categories)
      std::printf(" %s %.3f", c.value("key", std::string()).c_str(), c.value("RR", 0.0));
    std::printf("\n");
  }
  const std::vector<std::string> finding = sure_finding(res.sure_pooled);
  const std::string head = "by category (all pairs, 95% CI): ";
  for (size_t i = 0; i < finding.size(); ++i)
    std::printf("            %s%s\n",
                i == 1 ? head.c_str() : std::string(i > 1 ? head.size() : 0, ' ').c_str(),
                finding[i].c_str());
  std::printf("  Spotlight %zu HotpotQA questions, recall@6:", res.spotlight.questions);
  for (const char* mth : {"spotlight", "bm25", "lead", "random"}) {
    auto it = res.spotlight.mean_recall.find(std::string(mth) + "@6");
    if (it != res.spotlight.mean_recall.end()) std::printf(" %s %.3f", mth, it->second);
  }
  std::printf("\n  store  %s\n  report %s\n", plan.db.c_str(), plan.html.c_str());
}

int run_demo(const std::vector<std::string>& argv) {
  Args a(
      "demo",
      "Run C-NORM, SURE and SpotlightRAG end to end and write one run store and one HTML "
      "report.",
      "On the real trained stories260K model (or -m MODEL.gguf). Shared data is found through\n"
      "--shared DIR, then $RAGFORM_SHARED, then the ../shared beside the source tree recorded\n"
      "at build time. Writes ragform-demo.sqlite and ragform-demo.html in --out-dir (default: the\n"
      "current directory); a rerun reuses every row already in the store. Prints each step as\n"
      "the ragform command that does the same, then a summary.");
  auto& model = a.opt<std::string>(
      "-m,--model", "FILE", "GGUF model (default: <shared>/fixtures/models/stories260K.gguf)", "");
  auto& shared =
      a.opt<std::string>("--shared", "DIR", "the shared folder holding fixtures/ and data/", "");
  auto& out_dir = a.opt<std::string>("--out-dir", "DIR", "where the store and report go", ".");
  auto& n_needle = a.opt<int>("--needle", "N", "story-needle items (C-NORM eval and SURE)", 20)
                       .range(1, kMaxInt);
  auto& n_nq = a.opt<int>("--nq", "N", "NQ-Open questions for SURE", 20);
  auto& k_docs =
      a.opt<int>("-k,--docs", "K", "documents per C-NORM prompt (2..12)", 10).range(2, 12);
  auto& n_hotpot =
      a.opt<int>("--hotpot", "N", "HotpotQA dev questions for Spotlight", 300).range(1, kMaxInt);
  auto& work_dir = a.opt<std::string>(
      "--work-dir", "DIR",
      "keep the intermediate files (profile, pairs, command outputs) in DIR (default: a "
      "temporary folder removed at the end)",
      "");
  if (!a.parse(argv)) return 0;
  if (k_docs.value < 2 || k_docs.value > 12) throw UsageError("-k", "must be in 2..12");
  if (n_needle.value < 1 || n_nq.value < 0 || n_hotpot.value < 1)
    throw UsageError("demo", "--needle and --hotpot must be >= 1, --nq >= 0");
  auto t0 = std::chrono::steady_clock::now();
  const DemoInputs in = find_inputs(shared.value, model.value);

  DemoPlan plan;
  plan.needle = n_needle.value;
  plan.nq = n_nq.value;
  plan.docs = k_docs.value;
  plan.hotpot = n_hotpot.value;
  fs::create_directories(out_dir.value);
  plan.db = fs::path(out_dir.value) / "ragform-demo.sqlite";
  plan.html = fs::path(out_dir.value) / "ragform-demo.html";
  const bool keep_work = !work_dir.value.empty();
  plan.work = keep_work
                  ? fs::path(work_dir.value)
                  : fs::temp_directory_path() / ("ragform-demo-" + std::to_string(long(getpid())));
  fs::create_directories(plan.work);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      if (!p.empty()) fs::remove_all(p, ec);
    }
  } cleanup{keep_work ? fs::path() : plan.work};
  std::fprintf(stderr,
               "ragform demo: model %s\n  shared data %s\n  store %s (resumable)\n  "
               "intermediate files (profile, pairs, command outputs) in %s, %s\n",
               in.model.c_str(), in.shared.c_str(), plan.db.c_str(), plan.work.c_str(),
               keep_work ? "kept" : "removed at the end");
  // The folder is gone when the demo ends: a user who reruns the printed steps makes it first.
  std::fprintf(stderr, "\n$ mkdir -p %s\n", quote(plan.work.string()).c_str());

  DemoResults res;
  cnorm_steps(in, plan, res);
  sure_steps(in, plan, res);
  {
    // The store stays open through the report, as when the steps were one function.
    store::RunStore st(plan.db);
    spotlight_step(in, plan, st, res);
    report_step(plan);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_summary(in, plan, res, secs);
  }
  return 0;
}

RAGFORM_COMMAND("demo", "run C-NORM, SURE and SpotlightRAG end to end and write an HTML report",
                run_demo, 1);

}  // namespace
}  // namespace ragform::cli

// ragform demo: the README's main command. A script of the real commands, invoked in-process
// through the command registry (each step is printed as the command line it runs, so a user can
// rerun any of them by hand), on the real trained stories260K model by default:
//   1. cnorm calibrate --task needle --store   C-NORM delimiter calibration (ABS, Figure 3 data)
//   2. cnorm eval --task needle --store        gold-position sweep: Baseline / Min-Token / C-NORM
//   3. data needle | sure perturb | sure filter | sure eval
//                                              rule-based perturbations (logic, format, metadata)
//                                              of story-needle items and NQ passages, RR/WR/LR
//   4. Spotlight selection + recall@K on HotpotQA dev with GloVe vectors, through the runner
//      `spotlight eval --store` uses (pipelines/spotlight/run.h)
//   5. report                                  one self-contained HTML page
// Outputs: ./ragform-demo.sqlite and ./ragform-demo.html (or --out-dir); intermediate files go to
// a temporary folder that is removed at the end. A rerun reuses every stored row (resumable).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/engine_env.h"
#include "cli/json_out.h"
#include "eval/datasets.h"
#include "pipelines/common/common.h"
#include "pipelines/spotlight/spotlight.h"
#include "store/run_store.h"

namespace ragform::cli {
namespace {

namespace fs = std::filesystem;

std::string quote(const std::string& s) {
  if (!s.empty() && s.find_first_of(" '\"$\\|&;<>*?()") == std::string::npos) return s;
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// Runs a registered command with stdout redirected to `out_file` (its JSON lines), stderr left
// to the terminal. Returns the command's exit code; exceptions propagate after stdout is restored.
int invoke(const std::vector<std::string>& args, const fs::path& out_file) {
  std::string line = "$ ragform";
  for (const auto& a : args) line += " " + quote(a);
  // The whole path: a later step reads the file by it, and the printed lines run as printed.
  if (!out_file.empty()) line += " > " + quote(out_file.string());
  std::fprintf(stderr, "\n%s\n", line.c_str());
  auto it = registry().find(args.at(0));
  if (it == registry().end()) throw Error("demo", "no command '" + args[0] + "' in this build");
  std::vector<std::string> rest(args.begin() + 1, args.end());
  std::fflush(stdout);
  int saved = dup(1);
  int fd = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (saved < 0 || fd < 0) {
    if (saved >= 0) close(saved);
    if (fd >= 0) close(fd);
    throw Error("demo", "cannot write " + out_file.string());
  }
  dup2(fd, 1);
  close(fd);
  auto restore = [&] {
    std::fflush(stdout);
    dup2(saved, 1);
    close(saved);
  };
  int rc = 0;
  try {
    rc = it->second.run(rest);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  if (rc != 0) throw Error("demo", "'ragform " + args[0] + "' exited with " + std::to_string(rc));
  return rc;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The last line of a command's stdout that parses as a JSON object.
nlohmann::json last_json(const fs::path& p) {
  std::istringstream in(read_text(p));
  nlohmann::json last;
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l, nullptr, false);
    if (j.is_object()) last = j;
  }
  return last;
}

// The files `from`, one after the other, into `to`; printed as the `cat` that does the same.
void concatenate(const std::vector<fs::path>& from, const fs::path& to) {
  std::string line = "$ cat";
  for (const auto& f : from) line += " " + quote(f.string());
  std::fprintf(stderr, "\n%s > %s\n", line.c_str(), quote(to.string()).c_str());
  std::ofstream out(to, std::ios::binary);
  for (const auto& f : from) out << read_text(f);
  if (!out.flush()) throw Error("demo", "cannot write " + to.string());
}

size_t count_lines(const fs::path& p) {
  std::string s = read_text(p);
  return size_t(std::count(s.begin(), s.end(), '\n'));
}

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
  spotlight::RunSummary spotlight;
};

// Steps 1-2: C-NORM on the story-needle probe.
void cnorm_steps(const DemoInputs& in, const DemoPlan& plan, DemoResults& res) {
  const std::string& m = in.model;
  const std::string N = std::to_string(plan.needle), K = std::to_string(plan.docs);
  const fs::path profile = plan.work / "profile.json";
  std::vector<std::string> cal = {"cnorm",       "calibrate",
                                  "-m",          m,
                                  "--task",      "needle",
                                  "-S",          "6",
                                  "-k",          K,
                                  "-o",          profile.string(),
                                  "--cache-dir", (plan.work / "cache").string(),
                                  "--store",     plan.db.string()};
  invoke(cal, plan.work / "calibrate.json");
  res.profile = last_json(plan.work / "calibrate.json");
  invoke({"cnorm", "eval", "-m", m, "--task", "needle", "--profile", profile.string(), "--limit", N,
          "-k", K, "--store", plan.db.string()},
         plan.work / "cnorm-eval.json");
  res.cnorm_eval = last_json(plan.work / "cnorm-eval.json");
}

// Step 3: SURE, rule-based perturbations of story-needle items and NQ passages, then eval.
void sure_steps(const DemoInputs& in, const DemoPlan& plan, DemoResults& res) {
  const fs::path& work = plan.work;
  const fs::path needle = work / "needle.jsonl";
  invoke({"data", "needle", "-n", std::to_string(plan.needle), "-k", "2", "--seed", "0"}, needle);
  std::vector<fs::path> parts = {work / "pairs-needle.jsonl"};
  invoke({"sure", "perturb", "--input", needle.string(), "--kinds", "logic,format,metadata"},
         parts.back());
  if (plan.nq > 0) {
    parts.push_back(work / "pairs-nq.jsonl");
    invoke({"sure", "perturb", "--input", in.nq, "--kinds", "logic,format,metadata", "--limit",
            std::to_string(plan.nq), "--docs", "1"},
           parts.back());
  }
  const fs::path pairs = work / "pairs.jsonl";
  concatenate(parts, pairs);
  invoke({"sure", "filter", "--input", pairs.string(), "--nli", "none"}, work / "kept.jsonl");
  res.sure_pairs = count_lines(work / "kept.jsonl");
  invoke({"sure", "eval", "-m", in.model, "--input", (work / "kept.jsonl").string(), "--store",
          plan.db.string(), "--resamples", "500"},
         work / "sure-eval.json");
  std::istringstream lines(read_text(work / "sure-eval.json"));
  for (std::string l; std::getline(lines, l);) {
    auto j = nlohmann::json::parse(l, nullptr, false);
    if (j.is_object() && j.value("scope", "") == "overall" && j.value("subset", "") == "all")
      res.sure_overall = j;
    if (j.is_object() && j.value("scope", "") == "category") res.sure_categories.push_back(j);
  }
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
      "the ragform command it runs, then a summary.");
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
  plan.work = fs::temp_directory_path() / ("ragform-demo-" + std::to_string(long(getpid())));
  fs::create_directories(plan.work);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{plan.work};
  std::fprintf(stderr,
               "ragform demo: model %s\n  shared data %s\n  store %s (resumable)\n  "
               "intermediate files (profile, pairs, command outputs) in %s, removed at the end\n",
               in.model.c_str(), in.shared.c_str(), plan.db.c_str(), plan.work.c_str());
  // The folder is gone when the demo ends: a user who reruns the printed steps makes it first.
  std::fprintf(stderr, "\n$ mkdir -p %s\n", quote(plan.work.string()).c_str());

  DemoResults res;
  cnorm_steps(in, plan, res);
  sure_steps(in, plan, res);
  {
    // The store stays open through the report, as when the steps were one function.
    store::RunStore st(plan.db);
    spotlight_step(in, plan, st, res);
    // 5. The report.
    invoke({"report", plan.db.string(), "-o", plan.html.string()}, plan.work / "report.json");
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_summary(in, plan, res, secs);
  }
  return 0;
}

RAGFORM_COMMAND("demo", "run C-NORM, SURE and SpotlightRAG end to end and write an HTML report",
                run_demo, 1);

}  // namespace
}  // namespace ragform::cli

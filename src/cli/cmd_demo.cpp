// ragform demo: the README's main command. A script of the real commands, invoked in-process
// through the command registry (each step is printed as the command line it runs, so a user can
// rerun any of them by hand), on the real trained stories260K model by default:
//   1. cnorm calibrate --task needle --store   C-NORM delimiter calibration (ABS, Figure 3 data)
//   2. cnorm eval --task needle --store        gold-position sweep: Baseline / Min-Token / C-NORM
//   3. sure perturb | sure filter | sure eval  rule-based perturbations (logic, format, metadata)
//   of
//                                              story-needle items and NQ passages, RR/WR/LR
//   4. Spotlight selection + recall@K on HotpotQA dev with GloVe vectors
//   (pipelines/spotlight/run.h:
//      `spotlight eval` keeps no store, so the demo writes its rows with the same library calls)
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
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/spotlight/spotlight.h"
#include "ragform_version.h"
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
  if (!out_file.empty()) line += " > " + quote(out_file.filename().string());
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

// Story-needle items (cnorm/tasks.h) as lost-in-the-middle QA records with the gold document
// and one distractor, the input of `sure perturb`.
void write_needle_records(const fs::path& path, size_t n, uint64_t seed) {
  std::ofstream f(path, std::ios::binary);
  for (const auto& it : cnorm::make_needle_items(n, 2, seed)) {
    nlohmann::json ctxs = nlohmann::json::array();
    ctxs.push_back({{"title", it.gold.title}, {"text", it.gold.text}, {"isgold", true}});
    for (const auto& d : it.distractors)
      ctxs.push_back({{"title", d.title}, {"text", d.text}, {"isgold", false}});
    f << nlohmann::json{{"id", it.id},
                        {"question", it.question},
                        {"answers", it.answers},
                        {"ctxs", ctxs}}
             .dump()
      << '\n';
  }
  if (!f.flush()) throw Error("demo", "cannot write " + path.string());
}

// Lines of `from` appended to `to`.
void append_lines(const fs::path& from, std::ofstream& to) { to << read_text(from); }

size_t count_lines(const fs::path& p) {
  std::string s = read_text(p);
  return size_t(std::count(s.begin(), s.end(), '\n'));
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

  if (!shared.value.empty() && !fs::is_directory(shared.value))
    throw UsageError("--shared", shared.value + " is not a directory");
  std::string sh;
  try {
    sh = shared_dir(shared.value);
  } catch (const Error& e) {
    throw Error("demo",
                std::string("no shared data folder (fixtures/ and data/) found: pass --shared DIR, "
                            "or set RAGFORM_SHARED=DIR (") +
                    e.what() + ")");
  }
  std::string m = model.value.empty() ? sh + "/fixtures/models/stories260K.gguf" : model.value;
  const std::string nq = sh + "/data/lost-in-the-middle/nq-open-oracle.jsonl.gz";
  const std::string hotpot = sh + "/data/hotpotqa-distractor/dev.jsonl";
  const std::string glove = sh + "/data/embeddings/glove-50d-5k.json";
  std::string missing;
  for (const auto& p : {m, nq, hotpot, glove})
    if (!fs::exists(p)) missing += "\n  " + p;
  if (!missing.empty())
    throw Error("demo",
                "missing input files (give -m MODEL.gguf for the model, --shared DIR for "
                "the data):" +
                    missing);

  fs::create_directories(out_dir.value);
  const fs::path db = fs::path(out_dir.value) / "ragform-demo.sqlite";
  const fs::path html = fs::path(out_dir.value) / "ragform-demo.html";
  const fs::path work =
      fs::temp_directory_path() / ("ragform-demo-" + std::to_string(long(getpid())));
  fs::create_directories(work);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{work};
  std::fprintf(stderr,
               "ragform demo: model %s\n  shared data %s\n  store %s (resumable)\n  "
               "intermediate files (profile, pairs, command outputs) in %s, removed at the end\n",
               m.c_str(), sh.c_str(), db.c_str(), work.c_str());
  const std::string N = std::to_string(n_needle.value), K = std::to_string(k_docs.value);

  // 1-2. C-NORM on the story-needle probe.
  const fs::path profile = work / "profile.json";
  std::vector<std::string> cal = {"cnorm",       "calibrate",
                                  "-m",          m,
                                  "--task",      "needle",
                                  "-S",          "6",
                                  "-k",          K,
                                  "-o",          profile.string(),
                                  "--cache-dir", (work / "cache").string(),
                                  "--store",     db.string()};
  invoke(cal, work / "calibrate.json");
  nlohmann::json prof = last_json(work / "calibrate.json");
  invoke({"cnorm", "eval", "-m", m, "--task", "needle", "--profile", profile.string(), "--limit", N,
          "-k", K, "--store", db.string()},
         work / "cnorm-eval.json");
  nlohmann::json ceval = last_json(work / "cnorm-eval.json");

  // 3. SURE: rule-based perturbations of story-needle items and NQ passages, then eval.
  const fs::path needle = work / "needle.jsonl";
  write_needle_records(needle, size_t(n_needle.value), 0);
  const fs::path pairs = work / "pairs.jsonl";
  {
    std::ofstream all(pairs, std::ios::binary);
    invoke({"sure", "perturb", "--input", needle.string(), "--kinds", "logic,format,metadata"},
           work / "pairs-needle.jsonl");
    append_lines(work / "pairs-needle.jsonl", all);
    if (n_nq.value > 0) {
      invoke({"sure", "perturb", "--input", nq, "--kinds", "logic,format,metadata", "--limit",
              std::to_string(n_nq.value), "--docs", "1"},
             work / "pairs-nq.jsonl");
      append_lines(work / "pairs-nq.jsonl", all);
    }
  }
  invoke({"sure", "filter", "--input", pairs.string(), "--nli", "none"}, work / "kept.jsonl");
  size_t n_pairs = count_lines(work / "kept.jsonl");
  invoke({"sure", "eval", "-m", m, "--input", (work / "kept.jsonl").string(), "--store",
          db.string(), "--resamples", "500"},
         work / "sure-eval.json");
  nlohmann::json sure_overall;
  std::vector<nlohmann::json> sure_categories;  // the paper's category RR (Figure 4)
  {
    std::istringstream in(read_text(work / "sure-eval.json"));
    for (std::string l; std::getline(in, l);) {
      auto j = nlohmann::json::parse(l, nullptr, false);
      if (j.is_object() && j.value("scope", "") == "overall" && j.value("subset", "") == "all")
        sure_overall = j;
      if (j.is_object() && j.value("scope", "") == "category") sure_categories.push_back(j);
    }
  }

  // 4. Spotlight on HotpotQA dev.
  std::fprintf(stderr,
               "\n# spotlight selection + recall (the rows of `ragform spotlight eval --input %s "
               "--vectors %s --limit %d`, stored)\n",
               hotpot.c_str(), glove.c_str(), n_hotpot.value);
  eval::LoadOptions lo;
  lo.limit = size_t(n_hotpot.value);
  auto recs = eval::load_qa_file(hotpot, lo).records;
  auto wv = spotlight::WordVectors::load(glove);
  spotlight::StaticEncoder enc(wv);
  spotlight::RunOptions so;
  so.input_path = hotpot;
  so.vectors_path = glove;
  so.params = spotlight::default_score_params();  // what `spotlight select` uses with no flags
  so.tool_version = std::string(RAGFORM_VERSION) + " (git " + RAGFORM_GIT + ")";
  {
    store::RunStore st(db);
    auto ss = spotlight::run_eval(st, recs, enc, so);
    std::fprintf(stderr, "spotlight: %zu questions (%zu rows written, %zu reused, %zu skipped)\n",
                 ss.questions, ss.written, ss.reused, ss.skipped);
    // 5. The report.
    invoke({"report", db.string(), "-o", html.string()}, work / "report.json");
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // Summary on stdout.
    std::printf("ragform demo on %s (%.0f s)\n", fs::path(m).filename().c_str(), secs);
    if (prof.is_object() && prof.contains("best") && prof["best"].is_string())
      std::printf("  C-NORM    calibrated delimiter f* = '%s' over %zu candidates\n",
                  prof["best"].get<std::string>().c_str(),
                  prof.contains("candidates") ? prof["candidates"].size() : size_t(0));
    if (ceval.is_object() && ceval.contains("variants"))
      for (const auto& v : ceval["variants"])
        std::printf("            %-10s OAA %.3f  OPA %.3f\n",
                    v.value("name", std::string()).c_str(), v.value("oaa", 0.0),
                    v.value("opa", 0.0));
    if (sure_overall.is_object())
      std::printf("  SURE      %zu pairs: RR %.3f  WR %.3f  LR %.3f\n", n_pairs,
                  sure_overall.value("RR", 0.0), sure_overall.value("WR", 0.0),
                  sure_overall.value("LR", 0.0));
    if (!sure_categories.empty()) {
      std::printf("            category RR (mean of its perturbations' RR, Golden pairs):");
      for (const auto& c : sure_categories)
        std::printf(" %s %.3f", c.value("key", std::string()).c_str(), c.value("RR", 0.0));
      std::printf("\n");
    }
    std::printf("  Spotlight %zu HotpotQA questions, recall@6:", ss.questions);
    for (const char* mth : {"spotlight", "bm25", "lead", "random"}) {
      auto it = ss.mean_recall.find(std::string(mth) + "@6");
      if (it != ss.mean_recall.end()) std::printf(" %s %.3f", mth, it->second);
    }
    std::printf("\n  store  %s\n  report %s\n", db.c_str(), html.c_str());
  }
  return 0;
}

RAGFORM_COMMAND("demo", "run C-NORM, SURE and SpotlightRAG end to end and write an HTML report",
                run_demo, 1);

}  // namespace
}  // namespace ragform::cli

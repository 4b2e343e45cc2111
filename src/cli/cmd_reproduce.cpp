// ragform reproduce: each paper's experiments at the paper's settings with the paper's numbers
// beside this run's (docs/reproduce.md). The experiments, their data and the runs live in
// src/reproduce/ (reproduce.h); the papers' numbers in report/paper_numbers.h. This file parses
// flags, prints the work and the ETA, and writes the report through `ragform report`.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "base/error.h"
#include "base/progress.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/engine_env.h"
#include "cli/json_out.h"
#include "cli/output_file.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model_card.h"
#include "pipelines/common/common.h"
#include "reader/measured.h"
#include "report/paper_numbers.h"
#include "reproduce/reproduce.h"
#include "store/sha256.h"

namespace ragform::cli {
namespace {

namespace fs = std::filesystem;

void say(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

int list_numbers(bool json) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& e : report::paper_numbers()) {
    if (json) {
      arr.push_back({{"paper", e.paper},
                     {"experiment", e.experiment},
                     {"model", e.model},
                     {"method", e.method},
                     {"metric", e.metric},
                     {"value", e.value},  // null for a text entry (NaN)
                     {"stars", e.stars},
                     {"text", e.text},
                     {"source", e.source}});
      continue;
    }
    // printed_value: the number as %g with its significance stars, or a text entry's text.
    std::printf("%-9s %-18s %-26s %-30s %-34s %8s  %s\n", e.paper, e.experiment, e.model, e.method,
                e.metric, report::printed_value(e).c_str(), e.source);
  }
  if (json) print_json_line(arr);
  if (!json) {
    std::printf("\nexperiments `ragform reproduce PAPER` runs:\n");
    for (const auto& x : reproduce::experiments())
      std::printf("  %-9s %-13s %s\n", x.paper.c_str(), x.name.c_str(), x.what.c_str());
  }
  return 0;
}

std::string model_name(const std::string& path) {
  try {
    auto f = gguf::File::open(path);
    auto card = model::summarize(*f);
    if (!card.name.empty()) return card.name;
  } catch (const Error&) {
  }
  return fs::path(path).filename().string();
}

std::string duration(double s) {
  char b[64];
  if (s < 120)
    std::snprintf(b, sizeof b, "%.0f s", s);
  else if (s < 7200)
    std::snprintf(b, sizeof b, "%.1f min", s / 60);
  else
    std::snprintf(b, sizeof b, "%.1f h", s / 3600);
  return b;
}

// The work of a job and its ETA from one timed generation of its sample prompt on this machine. A
// sample longer than the context is cut (halved until it fits, as the runners reduce k to fit).
void print_work(reader::Reader& r, const reproduce::Job& job, size_t ctx) {
  const std::string name = job.planned.info.paper + " " + job.planned.info.name;
  std::string sample = job.sample_prompt;
  int tokens = 0;
  bool cut = false;
  for (int i = 0; i < 8 && !sample.empty(); ++i) {
    try {
      tokens = r.count_tokens(sample);
      if (size_t(tokens) + size_t(job.max_tokens) <= ctx) break;
    } catch (const Error& e) {
      // A server that cannot answer at all (a wrong key, nothing listening) fails the run here,
      // with its reason, before any experiment starts.
      if (reader::is_outage(e)) throw;
      tokens = 0;
    }
    // Halved at a space, so no UTF-8 sequence is split.
    size_t half = sample.rfind(' ', sample.size() / 2);
    sample.resize(half == std::string::npos ? sample.size() / 2 : half);
    cut = true;
  }
  std::string eta = "ETA unknown";
  if (tokens > 0 && size_t(tokens) + size_t(job.max_tokens) <= ctx) {
    reader::GenerateParams gp;
    gp.max_tokens = job.max_tokens;
    auto t0 = std::chrono::steady_clock::now();
    try {
      r.generate(sample, gp);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      char b[64];
      std::snprintf(b, sizeof b, "%.3f", s);
      eta = "ETA " + duration(s * double(job.prompts)) + " (one prompt of " +
            std::to_string(tokens) + " tokens took " + b + " s here" +
            (cut ? ", the sample cut to fit --ctx" : "") + "; stored rows are skipped)";
    } catch (const Error& e) {
      eta = std::string("ETA unknown (the measurement failed: ") + e.what() + ")";
    }
  }
  say("reproduce " + name + ": " + std::to_string(job.prompts) + " prompts of ~" +
      std::to_string(tokens) + " tokens (~" + std::to_string(size_t(tokens) * job.prompts) +
      " prompt tokens); " + eta);
}

// `ragform report STORE -o OUT` in-process.
void write_report(const std::string& store, const std::string& out) {
  auto it = registry().find("report");
  if (it == registry().end()) throw Error("reproduce", "no report command in this build");
  std::fflush(stdout);
  int rc = it->second.run({store, "-o", out});
  if (rc != 0) throw Error("reproduce", "the report exited with " + std::to_string(rc));
}

// The experiments of opt.paper (or opt.experiment) whose data is there; the others are named on
// stderr, or an error when the one asked for by name cannot run.
std::vector<reproduce::Planned> runnable_experiments(const reproduce::Options& opt) {
  std::vector<reproduce::Planned> runnable;
  for (const auto& p : reproduce::plan(opt)) {
    if (p.missing.empty()) {
      runnable.push_back(p);
      continue;
    }
    if (!opt.experiment.empty())
      throw Error("reproduce " + opt.paper + " " + p.info.name, p.missing);
    say("reproduce: skipped " + opt.paper + " " + p.info.name + ": " + p.missing);
  }
  if (runnable.empty()) throw Error("reproduce " + opt.paper, "no experiment has its data");
  return runnable;
}

// The paper model this run is compared with: --paper-model (checked against the papers' models),
// else matched by the model's name or file name ("" when none matches).
std::string paper_model_of(const std::string& flag, const std::string& model_name,
                           const std::string& model_path) {
  if (flag.empty())
    return report::match_paper_model(model_name, fs::path(model_path).filename().string());
  auto models = report::paper_models();
  if (std::find(models.begin(), models.end(), flag) == models.end()) {
    std::string names;
    for (const auto& m : models) names += (names.empty() ? "" : ", ") + m;
    throw UsageError("--paper-model", "'" + flag + "' is none of " + names);
  }
  return flag;
}

// Runs one experiment and prints its values as one JSON line on stdout.
void run_and_print(reader::Reader& reader, store::RunStore& st, const reproduce::Job& j,
                   const reproduce::Options& opt, const std::string& scale) {
  auto t0 = std::chrono::steady_clock::now();
  auto res = reproduce::run_job(reader, st, j, opt);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t not_measured = 0;
  nlohmann::ordered_json vals = nlohmann::ordered_json::array();
  for (const auto& v : res.values) {
    // A value over no item is null with a note, never a 0.0 beside the paper's number.
    nlohmann::ordered_json o = {{"method", v.method},
                                {"metric", v.metric},
                                {"value", v.measured() ? nlohmann::ordered_json(f9(v.value))
                                                       : nlohmann::ordered_json(nullptr)},
                                {"n", v.n}};
    if (!v.measured()) {
      o["note"] = "not measured";
      ++not_measured;
    } else if (v.lo && v.hi) {
      o["ci95"] = {f9(*v.lo), f9(*v.hi)};
    }
    vals.push_back(o);
  }
  say("reproduce " + opt.paper + " " + j.planned.info.name + ": done in " + duration(secs) +
      " (run " + std::to_string(res.run) + ", " + std::to_string(res.values.size()) + " values" +
      (not_measured ? ", " + std::to_string(not_measured) + " not measured" : "") + ")");
  print_json_line(nlohmann::ordered_json{{"paper", opt.paper},
                                         {"experiment", j.planned.info.name},
                                         {"scale", scale},
                                         {"paper_model", opt.paper_model},
                                         {"run", res.run},
                                         {"seconds", f9(secs)},
                                         {"values", vals}});
}

int run_reproduce(const std::vector<std::string>& argv) {
  Args a("reproduce",
         "Run a paper's experiments at its settings and put the paper's numbers beside this "
         "run's.",
         "PAPER is cnorm, sure or spotlight. Without --experiment, every experiment of the paper\n"
         "whose data is available runs (shared data, or --data DIR for what a user brings, e.g.\n"
         "LongBench-v2); the others are named on one line each. --scale smoke runs a few items\n"
         "in minutes; study enough items for a confidence interval worth reading (docs/\n"
         "reproduce.md has each experiment's size); paper runs the paper's sizes. Before each\n"
         "experiment it prints the work and\n"
         "an ETA measured on this machine. Every row goes to --store (a rerun resumes); the\n"
         "report (-o) has a \"Paper vs this run\" section. --list prints the papers' numbers\n"
         "(--json: one array of {paper, experiment, model, method, metric, value, source}).\n"
         "See docs/reproduce.md.");
  auto& paper = a.positional("PAPER", "cnorm, sure or spotlight", false);
  auto& list = a.flag("--list", "print the papers' numbers and the experiments");
  auto& json = a.flag("--json", "with --list: one JSON array");
  auto& experiment =
      a.opt<std::string>("--experiment", "NAME", "run only this experiment of the paper", "");
  ReaderFlags rf(a, false);
  RemoteFlags xf(a);
  auto& scale = a.opt<std::string>(
      "--scale", "SCALE",
      "smoke (a few items: minutes), study (CI-sized: about an hour or less per experiment on 2 "
      "cores with a 270M reader) or paper (the papers' sizes)",
      "smoke");
  auto& data = a.opt<std::string>("--data", "DIR", "data sets not in the shared folder", "");
  auto& shared = a.opt<std::string>(
      "--shared", "DIR", "the shared folder holding data/ (default: found automatically)", "");
  auto& paper_model = a.opt<std::string>(
      "--paper-model", "NAME",
      "the paper's model this one is (default: matched by general.name or file name)", "");
  auto& store_path = a.opt<std::string>("--store", "FILE", "SQLite run store (resumable)", "");
  auto& out = a.opt<std::string>("-o,--output", "FILE", "HTML report to write", "");
  auto& dry = a.flag("--dry-run", "print the work and the ETA of each experiment, run nothing");
  if (!a.parse(argv)) return 0;
  if (list.value) return list_numbers(json.value);
  if (json.value) throw UsageError("--json", "only with --list");
  if (!paper.value)
    throw UsageError("reproduce", "missing argument PAPER (cnorm, sure or spotlight)");
  xf.check();
  const bool remote = xf.reader.value == "openai";
  if (rf.model.value.empty())
    throw UsageError(
        "-m", remote ? "required: the served model's name" : "required: the GGUF model to run");
  if (store_path.value.empty() && !dry.value) throw UsageError("--store", "required");
  if (out.value.empty() && !dry.value) throw UsageError("-o", "required: the HTML report to write");
  // Before the experiments, not when the report is written after them (pass 13).
  check_not_input(out.value, "-o", {{"--store", store_path.value}, {"-m", rf.model.value}});
  if (!data.value.empty() && !fs::is_directory(data.value))
    throw UsageError("--data", data.value + " is not a directory");

  reproduce::Options opt;
  opt.paper = *paper.value;
  opt.experiment = experiment.value;
  opt.scale = reproduce::parse_scale(scale.value);  // OptionError("scale"): main spells --scale
  try {
    opt.shared_dir = shared_dir(shared.value);
  } catch (const Error&) {
    opt.shared_dir = "";  // experiments on shared data are then named as missing
  }
  opt.data_dir = data.value;
  const std::vector<reproduce::Planned> runnable = runnable_experiments(opt);

  opt.model_path = rf.model.value;
  // A remote reader names a served model, not a file (no hash; its name is matched).
  opt.model_sha256 = remote ? "" : store::sha256_file(rf.model.value);
  opt.model_name = remote ? rf.model.value : model_name(rf.model.value);
  opt.paper_model = paper_model_of(paper_model.value, opt.model_name, rf.model.value);
  say("reproduce " + opt.paper + ": model " + opt.model_name + " (" +
      (opt.paper_model.empty() ? std::string("none of the papers' models: their numbers are "
                                             "shown as reference only")
                               : "compared with the paper's " + opt.paper_model) +
      "), scale " + scale.value + ", store " + store_path.value);
  opt.tool_version = common::tool_version();
  std::optional<Progress> progress;
  opt.hooks.note = say;
  opt.hooks.begin = [&](const std::string& label, uint64_t total) {
    progress.emplace(label, total);
  };
  opt.hooks.advance = [&](uint64_t n) {
    if (progress) progress->add(n);
  };
  opt.hooks.end = [&] { progress.reset(); };

  std::unique_ptr<reader::Reader> reader;
  if (remote) {
    reader = xf.open(rf, /*ctx_caps_prompts=*/true);
  } else {
    reader = rf.open_native();  // resolves --ctx to the model's training context
  }
  opt.ctx = size_t(rf.ctx.value);
  std::vector<reproduce::Job> jobs;
  for (const auto& p : runnable) jobs.push_back(reproduce::make_job(p, opt));
  for (const auto& j : jobs) print_work(*reader, j, opt.ctx);
  if (dry.value) return 0;
  store::RunStore st(store_path.value);
  for (const auto& j : jobs) run_and_print(*reader, st, j, opt, scale.value);
  write_report(store_path.value, out.value);
  return 0;
}

RAGFORM_COMMAND("reproduce",
                "run a paper's experiments at its settings, the paper's numbers beside this run's",
                run_reproduce, 85);

}  // namespace
}  // namespace ragform::cli

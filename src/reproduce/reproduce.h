// `ragform reproduce`: each paper's experiments at the paper's settings, through the pipelines'
// store-backed runners (pipelines/<p>/<p>.h front doors), and the measured values written as one
// "reproduce" run per experiment for the report's "Paper vs this run" section
// (report/paper_section.cpp, the papers' numbers in report/paper_numbers.h).
//
//   plan(opt)              the experiments of opt.paper, each with its inputs or the data set
//                          that is missing (shared data, or what the user brings with --data)
//   make_job(reader, p, o) loads the inputs and counts the work (prompts, a sample prompt)
//   run_job(reader, st, j) runs the pipelines (resumable through the store) and stores the values
//
// Layer: above pipelines/ and report/ (docs/architecture.md); the CLI parses flags and prints.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pipelines/common/common.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::reproduce {

// How much of each experiment runs: smoke (a few items each, minutes in all, to check a set-up),
// study (enough items for a confidence interval worth reading: about an hour or less per
// experiment with a 270M reader on 2 cores; the sizes docs/results.md asks of a sweep), or paper
// (the papers' own sizes: hours to days on such a machine).
enum class Scale { Smoke, Study, Paper };
const char* scale_name(Scale s);
// "smoke", "study" or "paper"; OptionError("scale") for anything else.
Scale parse_scale(const std::string& name);

// The sizes of a scale, every experiment's in one table (0 = all the data has).
struct Sizes {
  size_t nq_items;         // C-NORM NQ sweep: questions (each at every gold position)
  size_t nq_seeds;         // C-NORM NQ sweep: seeds (5.1 averages three)
  size_t kv_items;         // C-NORM KV retrieval: samples (each at every gold position)
  size_t kv_records;       // C-NORM KV retrieval: records per sample (section 2's low density: 40)
  size_t calibration_S;    // C-NORM: calibration prompts per candidate (5.1: S = 8)
  size_t longbench_items;  // C-NORM LongBench-v2 questions
  size_t spotlight_items;  // SpotlightRAG questions
  size_t sure_questions;   // SURE questions answered closed-book
  size_t sure_per_cell;    // SURE instances per Known/Unknown x Golden/Noise cell (0 = every one)
};
const Sizes& sizes_of(Scale s);

// The runners' notes and progress: the pipelines' own hooks (every member may be empty).
using Hooks = common::RunHooks;

struct Options {
  std::string paper;       // "cnorm", "sure", "spotlight"
  std::string experiment;  // "" = every experiment whose data is available
  Scale scale = Scale::Smoke;
  std::string shared_dir;  // holds data/ (lost-in-the-middle, hotpotqa, embeddings)
  std::string data_dir;    // what the user brings (LongBench-v2, SIG_Trivial); "" = none
  std::string model_path, model_sha256;
  std::string model_name;   // general.name, else the file name
  std::string paper_model;  // the paper's model this one is ("" = none: reference only)
  std::string tool_version;
  std::string sure_prompts_dir;  // "" = the installed prompts
  size_t ctx = 4096;
  Hooks hooks;
};

// One experiment of a paper: what it measures, the paper's setting and the data it needs.
struct ExperimentInfo {
  std::string paper, name;
  std::string what;     // one line
  std::string setting;  // the paper's setting, one line
};
const std::vector<ExperimentInfo>& experiments();
// The experiments of one paper; UsageError for an unknown paper.
std::vector<ExperimentInfo> experiments_of(const std::string& paper);

struct Planned {
  ExperimentInfo info;
  std::vector<std::string> inputs;  // files found
  std::string missing;              // "" = runnable; else one line naming the data set
};
// The experiments opt asks for (all of opt.paper, or opt.experiment: UsageError when unknown).
std::vector<Planned> plan(const Options& opt);

// A value in the paper's unit, named as the paper's table names it. A value over no item (n = 0:
// every row behind it unmeasured, or an empty subset) is *not measured*, never a 0: run_job
// stores it as an unmeasured row, the CLI prints it as null and the report as "not measured".
struct Value {
  std::string method, metric;
  double value = 0;
  std::optional<double> lo, hi;  // 95% interval
  size_t n = 0;
  bool measured() const { return n > 0; }
};

struct Job {
  Planned planned;
  size_t prompts = 0;         // reader calls (generations and attention passes)
  std::string sample_prompt;  // a representative prompt, for the token count and the ETA
  int max_tokens = 16;        // per generation
  std::string note;           // how this run differs from the paper's setup
  std::function<std::vector<Value>(reader::Reader&, store::RunStore&)> run;
};
Job make_job(const Planned& p, const Options& opt);

struct JobResult {
  int64_t run = 0;  // the "reproduce" run
  std::vector<Value> values;
};
// Runs the job and stores its values; reader::NothingMeasured (reader/measured.h) from the
// pipelines when the reader measured nothing.
JobResult run_job(reader::Reader& r, store::RunStore& st, const Job& job, const Options& opt);

// 95% Wilson score interval of k successes in n, in [0, 1] (n = 0 gives [0, 1]).
std::pair<double, double> wilson(double k, double n);

}  // namespace ragform::reproduce

// C-NORM's store-backed runners, the shape every pipeline has (run_*(Reader&, RunStore&, options)
// -> summary; pipelines/sure/evaluate.h, pipelines/spotlight/run.h): calibration (sections
// 4.1-4.2), the gold-position sweep (5.1) and LongBench-v2 multiple choice (5.2). They hold the
// loops `ragform cnorm calibrate|eval`, `serve` and `demo` share; the front ends parse flags, load
// the input and print. Run-store layouts: docs/cnorm.md ("Calibration run store", "Eval run
// store"). Every runner resumes: rows already in the store are not recomputed.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/longbench.h"
#include "pipelines/cnorm/sweep.h"
#include "pipelines/cnorm/tasks.h"
#include "pipelines/common/common.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::cnorm {

// The runner contract's hooks and origin (pipelines/common/run.h); C-NORM's runners take the
// reader's description and chat mode from the reader they are given.
using RunHooks = common::RunHooks;
using RunOrigin = common::RunOrigin;

// ---------------------------------------------------------------- calibrate

struct CalibrateOptions {
  CalibrationSetup setup;     // task, template, candidates, p (grid), wrappers, search, seed, ABS
  size_t samples = 6;         // S
  size_t k = 10;              // documents per prompt (longbench: 1; kv: every record of an item)
  size_t ctx = 4096;          // the reader's context: k is reduced until every prompt fits
  RunOrigin origin;           // origin.model_sha256 is also the profile's model
  std::string input_sha256;   // of the input file, "" for generated items (needle)
  std::string system_sha256;  // of the chat system prompt, "" when there is none
  std::string cache_dir;      // profile cache; "" = none (a run store also skips the lookup)
  std::string dump_dir;       // every scored prompt to DIR/f<i>-s<j>.txt; "" = none
  // longbench: a prompt over ctx has the middle of its context cut (longbench.h), or its question
  // is passed over (Drop). A cut calibration records "overflow" in its config (identity, cache
  // key, profile); a Drop one has no such key, as runs made before the option.
  Overflow overflow = Overflow::TruncateMiddle;
  RunHooks hooks;
};

struct CalibrateSummary {
  Profile profile;
  bool from_cache = false;     // the cached profile of the same identity was reused
  int64_t run = 0;             // the store's run (0 without a store)
  size_t reused = 0;           // scores read from the store
  TruncationStats truncation;  // longbench: the scored prompts cut to fit (stored ones included)
};

// Samples S of `items` by the seeded permutation (a longbench question that does not fit the
// context under every candidate is passed over), fits k, scores every candidate (calibrate.h
// run_calibration) and builds the profile. With a store: one row per (prompt, candidate).
CalibrateSummary run_calibrate(reader::Reader& r, store::RunStore& st,
                               const std::vector<Item>& items, const CalibrateOptions& opt);
CalibrateSummary run_calibrate(reader::Reader& r, const std::vector<Item>& items,
                               const CalibrateOptions& opt);

// ---------------------------------------------------------------- eval (gold-position sweep)

struct EvalOptions {
  Task task = Task::Qa;
  std::string tmpl;
  Profile profile;
  std::vector<uint64_t> seeds;  // one run per seed, with items[i] for seeds[i]
  size_t k = 10;                // documents per prompt (kv: every record of an item)
  size_t ctx = 4096;            // prompt + answer must fit
  int max_tokens = 16;
  bool natural_positions = false;  // SweepSetup::natural_positions
  bool all_candidates = false;     // also every profile candidate (variants f:<name>)
  std::vector<double> density;     // f* at each p (variants p=<p>)
  // Which questions this process answers (a shard); empty = all. k, Min-Token and the run
  // identities come from every item, so the shards of one evaluation write the same runs.
  std::function<bool(const std::string& id)> keep;
  RunOrigin origin;
  std::string input_sha256;  // "" for generated items
  RunHooks hooks;
};

struct SeedRun {
  uint64_t seed = 0;
  int64_t run = 0;
  std::vector<VariantSummary> variants;  // from the store: a resumed run counts every answer
};

struct EvalSummary {
  size_t k = 0;                   // after fitting the context
  size_t items = 0;               // of the first seed
  std::vector<Variant> variants;  // evaluated, in order (baseline, cnorm, min-token, ...)
  std::vector<SeedRun> per_seed;
  std::vector<VariantSummary> average;  // over the seeds
  nlohmann::json analysis;              // analysis.h eval_analysis
  std::vector<std::string> analysis_lines;
};

EvalSummary run_eval(reader::Reader& r, store::RunStore& st,
                     const std::vector<std::vector<Item>>& items, const EvalOptions& opt);

// The summary's JSON (docs/cnorm.md): task, analysis, k, items, seeds, variants (averaged) and
// per_seed; the caller adds where it stored them.
nlohmann::json eval_summary_json(const EvalSummary& s, const EvalOptions& opt);

// ---------------------------------------------------------------- eval --task longbench

struct LongbenchOptions {
  Profile profile;
  size_t ctx = 4096;  // prompt + answer must fit
  int max_tokens = 16;
  // A prompt over ctx - max_tokens: the middle of its context cut (LongBench's own rule), or the
  // question left out (Drop). A cut run has "overflow" in its identity; a Drop run has no such
  // key, so it resumes (and merges with) runs made before the option, which all dropped.
  Overflow overflow = Overflow::TruncateMiddle;
  // How the answer letter is read (longbench.h): Lenient, ragform's rules, is the CLI's default
  // (`cnorm eval --extract` takes its default from here); Strict is LongBench-v2's pred.py, what
  // `ragform reproduce` uses. A strict run has "extract" in its identity; a lenient one has no
  // such key, so it resumes (and merges with) the runs made before the option, which were all
  // lenient, and the two modes never merge.
  Extract extract = Extract::Lenient;
  std::function<bool(const std::string& id)> keep;  // as EvalOptions::keep
  RunOrigin origin;
  std::string input_sha256;
  RunHooks hooks;
};

struct LongbenchSummary {
  int64_t run = 0;
  size_t items = 0, left_out = 0;  // questions evaluated / left out (do not fit the context)
  Overflow overflow = Overflow::TruncateMiddle;
  Extract extract = Extract::Lenient;
  TruncationStats truncation;        // the run's prompts cut to fit, from the store
  std::vector<Variant> variants;     // baseline, cnorm, min-token
  std::vector<McSummary> summaries;  // per variant, from the store
};

// Baseline, C-NORM and Min-Token (fewest tokens over the fitted questions among the profile's
// delimiters) on LongBench-v2-style multiple choice (longbench.h).
LongbenchSummary run_longbench(reader::Reader& r, store::RunStore& st,
                               const std::vector<McItem>& items, const LongbenchOptions& opt);

// task "longbench", items, left_out, overflow, extract, truncated (TruncationStats::to_json), run
// and variants (accuracy by difficulty and length).
nlohmann::json longbench_summary_json(const LongbenchSummary& s);

// Min-Token's candidates (5.2): the profile's delimiters; not its document formats and not the
// unformatted 'original', which is the Baseline.
std::vector<Delimiter> min_token_candidates(const Profile& prof);

// How a variant's format is named in summaries and eval rows.
std::string format_label(const Format& f);

}  // namespace ragform::cnorm

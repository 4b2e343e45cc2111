// The arguments of `ragform tune` and Python's ragform.tune, declared once (base/options.h): the
// CLI's flags (cli/cmd_tune.cpp through cli/option_flags.h), Python's keywords and the wrapper's
// signature (python/src/tune_search.cpp, python/ragform/tune.py through ragform._ragform.options)
// and docs/cli.md all come from visit() below; the initial values are the defaults. Both front ends
// build their TuneOptions with tune_options() (run.h), so the same arguments give the same search.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/options.h"

namespace ragform::tune {

// A dimension's values from a flag's text: a comma list, `comma` for "," (space.h
// dimension_values). A list from Python or a space file is never split.
std::vector<std::string> dimension_values_of_flag(const std::string& key, const std::string& text);

struct TuneArgs {
  std::string task;
  size_t budget = 0;
  std::string store_path;
  std::string input, holdout;  // files; needle: generated when empty
  size_t dev_items = 24, holdout_items = 32, needle_slots = 6;
  std::string output;  // the profile file to write ("" = none)
  std::string objective = "accuracy";
  double robust_floor = 0.8;
  std::string deploy = "confirmed";
  std::string space_file;
  // A dimension's values (unset: the space file's or the default space's).
  std::optional<std::vector<std::string>> delims, p, formats, orders, k, spotlight;
  std::string template_file;
  std::optional<int> max_tokens;  // unset: 12, or 48 for kv (TuneOptions::max_tokens)
  uint64_t seed = 0;
  bool abs_filter = true;
  std::optional<size_t> abs_prompts;  // objective abs: 6 (cnorm calibrate's -S), else 2
  // Unset: 0.5 and 3, narrowed by the plan when the winner would rest on too few records
  // (search.h); set: used as given.
  std::optional<double> abs_keep;
  size_t eta = 2;
  std::optional<size_t> finalists;
  size_t robust_items = 8;
  std::string shard;  // "i/n"; "" = the whole search
  // Python only (the CLI has the reader's --ctx and its own progress bar).
  std::optional<size_t> ctx;
  bool progress = false;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"task", "--task", "TASK", "qa, kv or needle"}.need().first(), task);
    v(OptionDecl{"budget", "--budget", "N",
                 "prompts the search may run (ABS passes, dev answers, robustness checks)"}
          .count(0)
          .need()
          .first(),
      budget);
    v(OptionDecl{"store", "--store", "FILE", "SQLite run store (resumes; merge shards)"}
          .need()
          .first(),
      store_path);
    v(OptionDecl{"input", "--input", "FILE",
                 "dev split: QA or KV records (JSONL, gzip ok; needle: generated)"}
          .first(),
      input);
    v(OptionDecl{"holdout", "--holdout", "FILE",
                 "held-out split, never searched on (needle: generated)"}
          .first(),
      holdout);
    v(OptionDecl{"dev_items", "--dev-items", "N", "needle: generated dev records"}.count(1, 100000),
      dev_items);
    v(OptionDecl{"holdout_items", "--holdout-items", "N", "needle: generated held-out records"}
          .count(0, 100000),
      holdout_items);
    v(OptionDecl{"needle_slots", "--needle-slots", "N", "needle: documents per record (1..12)"}
          .count(1, 12),
      needle_slots);
    v(OptionDecl{"output", "-o,--output", "FILE", "profile JSON to write (complete searches)"},
      output);
    v(OptionDecl{"objective", "--objective", "OBJ",
                 "accuracy, robust, balanced (accuracy with a robustness floor) or abs (C-NORM's "
                 "ABS)"},
      objective);
    v(OptionDecl{"robust_floor", "--robust-floor", "R", "balanced: minimum robustness rate"}.real(
          0, 1),
      robust_floor);
    v(OptionDecl{"deploy", "--deploy", "RULE",
                 "confirmed: write the winner only when the held-out CI of its accuracy gain is "
                 "above 0, else the original presentation; best: the winner whatever the "
                 "held-out split says"},
      deploy);
    v(OptionDecl{"space", "--space", "FILE", "space file (JSON or YAML; see below)"}, space_file);
    v(OptionDecl{"delims", "--delims", "LIST", "C-NORM delimiters (original, none, -, ...)"}.list(
          &dimension_values_of_flag),
      delims);
    v(OptionDecl{"p", "--p", "LIST", "C-NORM ratios p"}.list(&dimension_values_of_flag), p);
    v(OptionDecl{"formats", "--formats", "LIST", "plain, json, markdown, yaml, html"}.list(
          &dimension_values_of_flag),
      formats);
    v(OptionDecl{"orders", "--orders", "LIST", "retrieved, reversed, edges, score"}.list(
          &dimension_values_of_flag),
      orders);
    v(OptionDecl{"k", "--k", "LIST", "documents shown (all or a count)"}.list(
          &dimension_values_of_flag),
      k);
    v(OptionDecl{"spotlight", "--spotlight", "LIST", "off, K sentences, K+tokens (<Rel>, category)"}
          .list(&dimension_values_of_flag),
      spotlight);
    v(OptionDecl{"template", "--template", "FILE", "prompt template (default: the task's)"},
      template_file);
    v(OptionDecl{"max_tokens", "--max-tokens", "N", "answer tokens (greedy, stop at a newline)"}
          .count(1, 4096)
          .when_unset("12, or 48 for --task kv"),
      max_tokens);
    v(OptionDecl{"seed", "--seed", "N", "perturbations, needle records"}.count(0), seed);
    v(OptionDecl{"abs_filter", "--abs-filter", "on|off",
                 "ABS first filter (readers that give attention)"}
          .on_off(),
      abs_filter);
    v(OptionDecl{"abs_prompts", "--abs-prompts", "N",
                 "dev records of the ABS pass (--objective abs: 6 unless given, as cnorm "
                 "calibrate's -S)"}
          .count(1, 100000)
          .when_unset("2"),
      abs_prompts);
    v(OptionDecl{"abs_keep", "--abs-keep", "F",
                 "share of candidates the ABS filter keeps (unset: 0.5, halved while the winner "
                 "would rest on fewer than 20 dev records per finalist)"}
          .real(0.01, 1)
          .when_unset("0.5"),
      abs_keep);
    v(OptionDecl{"eta", "--eta", "N", "halving factor"}.count(2, 16), eta);
    v(OptionDecl{"finalists", "--finalists", "N",
                 "halving stops at N candidates, and the control arm beside them (unset: 3, or 2 "
                 "while the winner would rest on fewer than 20 dev records)"}
          .count(1, 1000)
          .when_unset("3"),
      finalists);
    v(OptionDecl{"robust_items", "--robust-items", "N", "records of the robustness check"}.count(
          1, 100000),
      robust_items);
    v(OptionDecl{"shard", "--shard", "i/n", "run shard i of n of each phase's cells"}, shard);
    v(OptionDecl{"ctx", "", "N",
                 "the context cap in tokens (None: a Model's file's context_length, no cap for "
                 "other readers; the CLI's --ctx)"}
          .count(1),
      ctx);
    v(OptionDecl{"progress", "", "", "a bar per pass (tqdm when installed)"}.flag_only(), progress);
  }
};

}  // namespace ragform::tune

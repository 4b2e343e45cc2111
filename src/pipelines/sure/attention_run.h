// `sure attention` (paper 4.3, eq. 4) as a front end asks for it: its options declared once
// (base/options.h; the CLI's flags in cli/cmd_sure_runs.cpp and Python's keywords of
// ragform.sure.attention come from visit()), and the verb itself — the Golden pairs of a stored
// evaluation with their labels, a seeded sample, A_org / A_pert on a reader and the report — so
// every front end prints the same object for the same call.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/options.h"
#include "pipelines/sure/analyses.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/prompts.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::sure {

struct AttentionRequest {
  int64_t run = 0;  // the 'sure eval' run; 0 = the store's only one
  int64_t layer = -1;
  std::vector<std::string> heads;  // empty = every head
  int64_t per_group = 50;
  std::string sample_by = "category";
  std::string query = "question";
  int64_t seed = 0;
  bool chain_of_note = false;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"run", "--run", "ID", "which 'sure eval' run of the store (0 = the only one)"}
          .count(0),
      run);
    v(OptionDecl{"layer", "--layer", "L", "attention layer (negative from the end)"}.count(
          -2147483648.0, 2147483647),
      layer);
    v(OptionDecl{"heads", "--heads", "LIST", "heads to average (default: all)"}.list(nullptr),
      heads);
    v(OptionDecl{"per_group", "--per-group", "N",
                 "pairs per sampled category or outcome group (paper: 50)"}
          .count(1, 2147483647),
      per_group);
    v(OptionDecl{"sample_by", "--sample-by", "WHAT",
                 "draw --per-group pairs per feature category (category, the paper's reading) or "
                 "per Robust/Win/Lose group (outcome)"},
      sample_by);
    v(OptionDecl{"query", "--query", "TOKEN",
                 "query token: question (its final token, the paper's t_q) or prompt"},
      query);
    v(OptionDecl{"seed", "--seed", "N", "sampling seed"}.count(0), seed);
    v(OptionDecl{"chain_of_note", "--chain-of-note", "",
                 "the prompts of a Chain-of-Note evaluation"}
          .flag_only(),
      chain_of_note);
  }
};

// The 'sure eval' run of a store: `run` when > 0, else the only one. OptionError "run" when there
// is none, or more than one and `run` is 0.
int64_t sure_eval_run(const store::RunStore& store, int64_t run);

// The verb: checks the request (OptionError naming the key), samples the labelled Golden pairs of
// the evaluation in `store`, measures them on `reader` (raw prompts; the caller checks its
// capabilities) and returns the report {groups, welch_t, welch_p, sampling: {by, per_group, seed,
// drawn}, pairs_measured, no_span}.
nlohmann::ordered_json run_attention_shift(reader::Reader& reader, const store::RunStore& store,
                                           std::vector<Pair> pairs, const PromptSet& prompts,
                                           AttentionRequest req);

}  // namespace ragform::sure

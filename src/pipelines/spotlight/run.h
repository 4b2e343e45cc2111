// SpotlightRAG's store-backed runner (the shape every pipeline has: run_*(..., RunStore&,
// options) -> summary): evidence-selection results in a run store (pipeline "spotlight eval"), in
// the layout the report's Spotlight section reads. Used by `ragform spotlight eval --store` and
// `ragform demo`; the same library calls (evaluate.h, scoring.h, select.h) per question as the
// store-less `spotlight eval`.
//
// Rows: instance = question id, variant = ranking method (spotlight, lead, lead-doc, random, bm25
// as in evaluate.h), scores {"recall@K": ...} for every K of recall_ks, no correctness (nothing is
// generated). The spotlight row also has prompt = the eq. (10) prompt of the top-K selection and
// extra {"question", "selected": [{"title", "text" (the sentence), "R_norm", "category", "gold",
// "matches": [{"q", "c", "s", "begin", "end"}]}]}, begin/end = bytes of c inside "text".
// Questions without a resolvable supporting fact are skipped and counted. Resumable: rows
// already stored are not recomputed.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eval/qa_record.h"
#include "pipelines/spotlight/encoder.h"
#include "pipelines/spotlight/scoring.h"
#include "store/run_store.h"

namespace ragform::spotlight {

struct RunOptions {
  int K = 6;                                    // sentences selected for the prompt
  std::vector<int> recall_ks{2, 6};             // recall@K columns
  ScoreParams params = default_score_params();  // the CLI's defaults (scoring.h)
  uint64_t seed = 1;                            // random baseline (as `spotlight eval --seed`)
  std::string input_path, vectors_path, tool_version;
};

struct RunSummary {
  int64_t run = 0;
  size_t questions = 0, skipped = 0, written = 0, reused = 0;
  std::map<std::string, double> mean_recall;  // "<method>@<K>" over the run's stored rows
};

RunSummary run_eval(store::RunStore& st, const std::vector<eval::QaRecord>& records,
                    TokenEncoder& enc, const RunOptions& opt);

}  // namespace ragform::spotlight

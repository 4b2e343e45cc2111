// SpotlightRAG's store-backed runners, on the runner contract (pipelines/common/common.h:
// run_<verb>(Encoder&|Reader&, RunStore&, inputs, Options{origin, hooks, ...}) -> Summary; each
// begins or resumes its own run and reports its progress through the hooks).
//
// run_eval: evidence-selection results in a run store (pipeline "spotlight eval"), in the layout
// the report's Spotlight section reads. Used by `ragform spotlight eval --store`, `ragform demo`
// and `reproduce spotlight`; the same library calls (evaluate.h, scoring.h, select.h) per question
// as the store-less `spotlight eval`. Rows: instance = question id, variant = ranking method
// (spotlight, lead, lead-doc, random, bm25 as in evaluate.h), scores {"recall@K": ...} for every
// K of recall_ks, no correctness (nothing is generated). The spotlight row also has prompt = the
// eq. (10) prompt of the top-K selection and extra {"question", "gold_sentences", "selected"}, the
// selection in a store row's layout (selection_json.h: title, text, R, R_raw, category, gold,
// matches with begin/end) and "spans" (each selected sentence's bytes in the prompt). Questions
// without a resolvable supporting fact are skipped and counted. Its origin names no reader (the
// encoder is part of the config).
//
// run_generate: the reader's answer to each stored spotlight prompt of a run_eval run, one row
// per question (pipeline "spotlight generate", variant "spotlight"), graded by answer.h (EM of
// the first line), optionally with the sentences emphasised by attention (emphasis_factor). A
// failed remote request is an unmeasured row, retried by a rerun.
//
// Both resume: rows already stored are not recomputed.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eval/qa_record.h"
#include "pipelines/common/common.h"
#include "pipelines/spotlight/encoder.h"
#include "pipelines/spotlight/scoring.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::spotlight {

struct RunOptions {
  int K = 6;                                    // sentences selected for the prompt
  std::vector<int> recall_ks{2, 6};             // recall@K columns
  ScoreParams params = default_score_params();  // the CLI's defaults (scoring.h)
  uint64_t seed = 1;                            // random baseline (as `spotlight eval --seed`)
  std::string input_path, vectors_path;         // hashed into the run's identity
  common::RunOrigin origin;                     // the tool version; reader "none"
  common::RunHooks hooks;
};

struct RunSummary {
  int64_t run = 0;
  size_t questions = 0, skipped = 0, written = 0, reused = 0;
  std::map<std::string, double> mean_recall;  // "<method>@<K>" over the run's stored rows
  // The per-question recalls behind each mean, in the store's row order (for a bootstrap CI).
  std::map<std::string, std::vector<double>> recalls;
};

RunSummary run_eval(TokenEncoder& enc, store::RunStore& st,
                    const std::vector<eval::QaRecord>& records, const RunOptions& opt);

struct GenerateOptions {
  int64_t spotlight_run = 0;  // the run_eval run whose prompts are answered
  int max_tokens = 16;
  // Attention emphasis of the selected sentences while answering (select.h emphasis_steering:
  // rescale:FACTOR on the spans run_eval stored); 1 = none.
  double emphasis_factor = 1.0;
  common::RunOrigin origin;  // common::origin_of(reader, ...)
  common::RunHooks hooks;
};

struct GenerateSummary {
  int64_t run = 0;
  double correct = 0, graded = 0;  // over the run's measured rows (resumed ones too)
  int64_t unmeasured = 0;          // rows a reader left unmeasured in this call
};

// The answers of the records' questions (their gold answers grade them); reader::NothingMeasured
// when the reader measured nothing (reader/measured.h).
GenerateSummary run_generate(reader::Reader& r, store::RunStore& st,
                             const std::vector<eval::QaRecord>& records,
                             const GenerateOptions& opt);

}  // namespace ragform::spotlight

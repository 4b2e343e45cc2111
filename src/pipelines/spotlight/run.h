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
// run_generate: the reader's answer to each stored spotlight prompt of a run_eval run (pipeline
// "spotlight generate"), one row per question and variant: "spotlight" (the stored prompt, with
// its <Rel> and category tokens) and, with without_tokens, "spotlight-no-tokens" (the same
// sentences in the same order without the tokens: Table 3's "w/o special tokens", built from the
// row's stored question and selection). Generated and graded by answer.h (stopped after the first
// non-empty line; EM, F1 and substring match of that line), optionally with the sentences
// emphasised by attention (emphasis_factor). Each row keeps its prompt, prompt_tokens, the graded
// line as output, scores {em, f1, substring}, timings_ms {total: the generation's wall time} and
// extra {finish_reason}. A failed remote request is an unmeasured row, retried by a rerun.
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

// The variants run_generate answers.
inline constexpr const char* kWithTokens = "spotlight";
inline constexpr const char* kWithoutTokens = "spotlight-no-tokens";

struct GenerateOptions {
  int64_t spotlight_run = 0;  // the run_eval run whose prompts are answered
  int max_tokens = 16;
  bool without_tokens = false;  // also answer each prompt without its special tokens
  // Attention emphasis of the selected sentences while answering (select.h emphasis_steering:
  // rescale:FACTOR on the spans run_eval stored); 1 = none.
  double emphasis_factor = 1.0;
  common::RunOrigin origin;  // common::origin_of(reader, ...)
  common::RunHooks hooks;
};

// One variant's answers over the run's measured rows (resumed ones too), in the store's row order.
struct VariantAnswers {
  std::vector<double> em, f1, substring;  // one per measured question
  int64_t prompt_tokens = 0;              // summed over those rows
  double generate_ms = 0;                 // their generations' wall time, summed
};

struct GenerateSummary {
  int64_t run = 0;
  double correct = 0, graded = 0;  // the "spotlight" variant's measured rows (resumed ones too)
  int64_t unmeasured = 0;          // rows a reader left unmeasured in this call
  std::map<std::string, VariantAnswers> variants;  // by variant name
};

// The answers of the records' questions (their gold answers grade them); reader::NothingMeasured
// when the reader measured nothing (reader/measured.h).
GenerateSummary run_generate(reader::Reader& r, store::RunStore& st,
                             const std::vector<eval::QaRecord>& records,
                             const GenerateOptions& opt);

}  // namespace ragform::spotlight

// `spotlight eval` without a store: evidence recall@K of Spotlight against the baselines
// (evaluate.h) on every question, with --sweeps the paper's Table 3 ablations and Table 4 sweeps,
// Figure 1(a)'s gold positions, and with a generator the end-to-end EM of the selection with and
// without the special tokens. The CLI parses the flags, calls run_sweeps and prints the rows
// (with their bootstrap intervals).
//
// Configurations, in order (rows[0] is the main one; the others only with sweeps):
//   main          spotlight at the given ScoreParams
//   ablation      w/o fine-grained scorer (Scorer::MeanVector), w/o query importance alpha
//                 (eq. 8, Alpha::Uniform), w/o context weights w (eq. 6, Weighting::Uniform)
//   sweep-k       token Top-k in {1, 3, 5, 7}
//   sweep-lambda  lambda in {0.0, 0.5, 1.0}
// Baselines (krows): spotlight, lead, lead-doc, random, bm25 at K (sweeps: K in {2, 4, 6, 8}).
// Context length (sweeps): the gold passages plus the first d in {0, 2, 4, 8} distractors,
// Spotlight and BM25 at K.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "eval/qa_record.h"
#include "pipelines/common/common.h"
#include "pipelines/spotlight/encoder.h"
#include "pipelines/spotlight/evaluate.h"
#include "pipelines/spotlight/scoring.h"
#include "reader/reader.h"

namespace ragform::spotlight {

struct SweepOptions {
  ScoreParams base = default_score_params();
  int K = 6;
  uint64_t seed = 1;  // random baseline
  bool sweeps = false;
  reader::Reader* generator = nullptr;  // end-to-end answers when set
  int max_tokens = 16;                  // per answer
  common::RunHooks hooks;               // one stage, a step per question
};

// One row of recall@K values, a value per question that has resolvable gold sentences.
struct RecallRow {
  std::string group, method;
  int K = 0;
  std::vector<double> recalls;
};

struct SweepSummary {
  std::vector<RecallRow> rows;   // one per configuration (see above)
  std::vector<RecallRow> krows;  // the baselines' K sweep (group "sweep-K")
  std::vector<int> distractors;  // context lengths: {0, 2, 4, 8} with sweeps, else none
  // crows[2i] spotlight, crows[2i + 1] bm25 on the gold + distractors[i] contexts.
  std::vector<RecallRow> crows;
  std::vector<double> ctx_words;  // words of those contexts, summed over the questions
  PositionalAnalysis pa;          // Figure 1(a)
  size_t skipped = 0;             // questions without resolvable gold sentences
  size_t words = 0, oov = 0;      // question words of the main configuration / out of vocabulary
  // With a generator, per question: EM, token F1 and substring accuracy with and without special
  // tokens.
  std::vector<double> em_full, f1_full, sub_full, em_plain, f1_plain, sub_plain;
};

SweepSummary run_sweeps(TokenEncoder& enc, const std::vector<eval::QaRecord>& records,
                        const SweepOptions& opt);

}  // namespace ragform::spotlight

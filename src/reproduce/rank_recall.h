// Document ranking by attention, raw and calibrated for positional bias, against BM25: the
// re-ranking experiment of Found in the Middle (Hsieh et al. 2024, arXiv 2406.16008, section 4.1)
// on HotpotQA distractor questions (two gold paragraphs among ten).
//
// For each record, its paragraphs in file order are the K documents of C-NORM's qa prompt
// (Appendix D's template, pipelines/cnorm/tasks.h). The final token's attention, every layer and
// the mean over heads, is summed over each paragraph's text (pipelines/cnorm/relevance.h) and
// averaged over the layers: the raw relevance. The calibrated relevance subtracts the bias curve
// at the paragraph's slot (`ragform position-bias`, measured with K slots). BM25 scores the
// paragraphs (title and text) against the question within the record's own ten (SpotlightRAG's
// Okapi BM25, pipelines/spotlight/lexical.h). recall@k = gold paragraphs in the top k / gold
// paragraphs, averaged over the records, for k = 1..K.
//
// Run store: pipeline "position-bias rank", one row per record (variant "rank") with scores
// "<method>@<k>" (method raw, calibrated, bm25) and the three rankings and the gold slots in extra.
// The run's identity holds the curve itself, so rankings under two curves never merge.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/qa_record.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::reproduce {

struct RankRecallOptions {
  cnorm::BiasCurve bias;    // K slots: records with another number of paragraphs are an error
  std::vector<int> layers;  // layer indices to average (every layer of the model)
  size_t limit = 0;         // records to rank (0 = all)
  common::RunOrigin origin;
  std::string input_sha256;
  common::RunHooks hooks;
};

// The three methods, in the order they are reported.
const std::vector<std::string>& rank_methods();  // raw, calibrated, bm25

struct RankRecallSummary {
  int64_t run = 0;
  size_t records = 0;
  size_t skipped = 0;  // records left out: not K paragraphs
  size_t k = 0;
  // recall[method][k - 1], methods in rank_methods() order
  std::vector<std::vector<double>> recall;
};

RankRecallSummary run_rank_recall(reader::Reader& r, store::RunStore& st,
                                  const std::vector<eval::QaRecord>& records,
                                  const RankRecallOptions& opt);

// The recall table of the rows of one "position-bias rank" run (for the summary and the report).
RankRecallSummary rank_recall_from_rows(const std::vector<store::Result>& rows, size_t k);

// {"records","skipped","k","run","recall":{"raw":[K],"calibrated":[K],"bm25":[K]}}
nlohmann::json rank_recall_json(const RankRecallSummary& s);

}  // namespace ragform::reproduce

// Calibrated document relevance as the records' retrieval scores, so that whatever orders
// documents by score (`ragform tune --orders score`, tune/presentation.h) orders them by it:
// each record's paragraphs, in file order, are the K documents of C-NORM's qa prompt (as
// `position-bias --rank` renders them, reproduce/rank_recall.h); the final token's attention
// (every given layer, mean over heads) summed over each document and averaged over the layers,
// minus the bias curve at its slot (pipelines/cnorm/relevance.h), is its score.
//
// The records are written in lost-in-the-middle's shape (eval/qa_record.h, format litm-qa):
// {"id", "question", "answers", "ctxs": [{"id", "title", "text", "isgold"[, "hasanswer"],
// "score"}]}, the scores with 9 significant digits.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/qa_record.h"
#include "pipelines/cnorm/cnorm.h"
#include "reader/reader.h"

namespace ragform::reproduce {

// The calibrated relevance of each of the record's paragraphs. Error when the record has another
// number of paragraphs than the curve's slots.
std::vector<double> calibrated_paragraph_scores(reader::Reader& r, const eval::QaRecord& rec,
                                                const cnorm::BiasCurve& bias,
                                                const std::vector<int>& layers);

// The record with `scores` as its contexts' scores (see above).
nlohmann::ordered_json scored_record_json(const eval::QaRecord& rec,
                                          const std::vector<double>& scores);

}  // namespace ragform::reproduce

// Python dicts -> QA records, for every pipeline's bindings (pipelines*.cpp): one reading of a
// record for C-NORM, SURE and SpotlightRAG, as the file loaders read a JSONL line.
#pragma once
#include <vector>

#include "bindings.h"
#include "eval/qa_record.h"

namespace ragform::py {

// The format is detected from the first record as the file loaders do (eval/datasets.h); a
// record that does not fit it is a ValueError naming the record.
std::vector<eval::QaRecord> qa_records(const pyb::iterable& records);

}  // namespace ragform::py

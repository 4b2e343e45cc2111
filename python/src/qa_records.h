// Python dicts -> QA records, for every pipeline's bindings (pipelines*.cpp): one reading of a
// record for C-NORM, SURE and SpotlightRAG, as the file loaders read a JSONL line.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bindings.h"
#include "eval/qa_record.h"

namespace ragform::py {

// The format is detected from the first record as the file loaders do (eval/datasets.h); a
// record that does not fit it is a ValueError naming the record.
// each(json, record) sees every record's JSON beside the QA record read from it, for fields the
// QA record does not keep (sure prepare's "known"); its eval::RowError names the record too.
std::vector<eval::QaRecord> qa_records(
    const pyb::iterable& records,
    const std::function<void(const nlohmann::json&, const eval::QaRecord&)>& each = nullptr);

// A pipeline's `records` argument: a list of dicts, the path of a JSONL file (str or PathLike), or
// None (no records). `sha256` is the input's identity as the CLI records it: the file's hash, or
// for dicts the hash of their canonical JSON lines ("" for none). The file is read without the GIL.
struct RecordsArg {
  std::vector<eval::QaRecord> records;
  std::string sha256;
};
// with_sha = false skips the hash (a caller that records no input identity reads the file once).
RecordsArg records_arg(const pyb::object& records, bool with_sha = true);

}  // namespace ragform::py

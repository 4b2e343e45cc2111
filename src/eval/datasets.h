// Dataset loaders: any supported QA file -> canonical QaRecords (qa_record.h), with the format
// detected from the fields of the first valid record. Files are read by JsonRecordReader (jsonl.h):
// plain or gzip, JSONL or one JSON document, every error "<file>:<line>: <reason>".
//
// Formats and the fields that identify them (checked in this order):
//   litm-kv       `ordered_kv_records` (+ `key`, `value`)          lost-in-the-middle KV retrieval
//   longbench-v2  `choice_A` (+ choice_B..D, `answer`, `context`, `difficulty`, `length`)
//   poisonedrag   `adv_texts` or `incorrect answer` (+ `correct answer`, `question`)
//   hotpotqa      `supporting_facts` (+ `context`, `answer`)      HF distractor or original schema
//   flashrag      `golden_answers` (+ `question`)
//   litm-qa       `ctxs` or `answers` (+ `question`)               lost-in-the-middle QA
//   nq-open       `answer` (+ `question`)                          NQ-open
// A record's required fields must be present with the right JSON type; otherwise the row is bad
// ("missing field 'question'", "field 'ctxs[2].text': expected string, got null") and is either
// reported (DataError) or skipped and counted (LoadOptions::read.skip_bad).
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/jsonl.h"
#include "eval/qa_record.h"

namespace ragform::eval {

enum class Format { Auto, LitmQa, NqOpen, HotpotQa, LitmKv, PoisonedRag, FlashRag, LongBenchV2 };

// "auto", "litm-qa", "nq-open", "hotpotqa", "litm-kv", "poisonedrag", "flashrag", "longbench-v2".
const char* format_name(Format f);
// Inverse of format_name; throws UsageError listing the valid names.
Format parse_format(std::string_view name);
// All concrete formats (without Auto), in detection order.
const std::vector<Format>& known_formats();

// The format a record's fields identify, or nullopt when none matches.
std::optional<Format> detect_format(const nlohmann::json& row);

// Where a record came from, for ids and messages.
struct RowOrigin {
  size_t line = 0;  // 1-based line in the file
  std::string key;  // member name in a keyed JSON-object file, else empty
};

// Converts one record of a known (non-Auto) format. Throws RowError naming the bad field.
QaRecord to_qa_record(const nlohmann::json& row, Format format, const RowOrigin& origin);

struct LoadOptions {
  Format format = Format::Auto;
  ReadOptions read;  // skip_bad, keep_reasons
  size_t limit = 0;  // stop after this many good records (0 = all)
};

struct LoadInfo {
  Format format = Format::Auto;  // the detected (or given) format; Auto if no record was valid
  JsonLayout layout = JsonLayout::Lines;
  bool gzip = false;
  ReadStats stats;  // rows_ok = records delivered
};

// Streams the file's records to fn (with the raw JSON each came from). fn may throw RowError to
// reject a record. Throws DataError on the first bad row unless opts.read.skip_bad; throws
// DataError if the format cannot be detected from any record.
LoadInfo for_each_qa_record(const std::string& path, const LoadOptions& opts,
                            const std::function<void(QaRecord&, const JsonRow&)>& fn);

struct LoadResult {
  LoadInfo info;
  std::vector<QaRecord> records;
};
// All records of a file in memory.
LoadResult load_qa_file(const std::string& path, const LoadOptions& opts = {});

}  // namespace ragform::eval

// Export of a run store to JSONL and CSV, for analysis outside ragform (`ragform export`).
//
// JSONL: one object per line, keys in this order:
//   results: run, instance, variant, status, error (null when ok), correct (true/false/null),
//            scores {..}, output, prompt, prompt_tokens (null when unknown), timings_ms {..},
//            extra {..}
//   runs:    id, created_at, pipeline, config {..}, tool_version, model_path, model_sha256,
//            reader, chat_mode, seed, config_key, and the row tallies rows, ok, unmeasured,
//            correct, wrong
// Invalid UTF-8 in stored text is written as U+FFFD (JSON must be UTF-8).
//
// CSV (RFC 4180): a header line, then one record per row, CRLF line ends; a field is quoted when
// it contains a comma, a double quote, CR or LF, and quotes inside are doubled. Objects are
// flattened into one column per key, over the union of the keys of the exported rows, sorted:
//   results: run, instance, variant, status, error, correct (1/0/empty), score.<name>..., output,
//            prompt, prompt_tokens, timing_ms.<name>..., extra.<name>...
//   runs:    id, created_at, pipeline, tool_version, model_path, model_sha256, reader, chat_mode,
//            seed, config_key, rows, ok, unmeasured, correct, wrong, config (canonical JSON)
// A key missing from a row is an empty field. Numbers are written in their shortest round-trip
// form; an extra value that is an object or array is written as compact JSON.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "store/run_store.h"

namespace ragform::store {

enum class ExportFormat { jsonl, csv };
enum class ExportTable { results, runs };

// Writes the rows of `run` (all runs when nullopt) to `out`; returns the number of records.
// Throws Error when `run` does not exist.
std::int64_t export_store(const RunStore& store, std::optional<std::int64_t> run, ExportTable table,
                          ExportFormat format, std::ostream& out);

// The JSONL object of one result row / run (key order as above).
nlohmann::ordered_json to_json(const Result& r);
nlohmann::ordered_json to_json(const RunInfo& r, const Counts& c);
// A run's row counts {rows, ok, unmeasured, correct, wrong, ungraded}: in to_json(RunInfo) and
// what Python's RunStore.counts() returns.
nlohmann::ordered_json counts_json(const Counts& c);

// One CSV field, quoted per RFC 4180 section 2 when needed.
std::string csv_field(std::string_view s);

}  // namespace ragform::store

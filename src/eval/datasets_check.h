// What `ragform data check` reports about a data file: the detected format and layout, row counts,
// which top-level fields occur how often, per-row distributions (contexts, answers, gold and
// adversarial contexts, format-specific counts), and the bad lines with their reasons.
#pragma once
#include <cstddef>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"

namespace ragform::eval {

// min / mean / max of a per-row (or per-context) count.
struct CountSummary {
  size_t n = 0;
  size_t min = 0, max = 0;
  double sum = 0;
  void add(size_t v);
  double mean() const { return n ? sum / static_cast<double>(n) : 0.0; }
  nlohmann::json to_json() const;  // {"min","mean","max"} (nulls when n == 0)
};

struct DatasetCheck {
  std::string path;
  LoadInfo info;  // format, layout, gzip, stats (rows_ok, rows_bad, first_bad, ...)
  std::map<std::string, size_t> field_rows;  // top-level field name -> good rows that have it
  CountSummary answers, contexts, gold_contexts, adversarial_contexts;
  CountSummary sentences_per_context, supporting_facts, kv_records;  // HotpotQA, litm-kv
  size_t unresolved_supporting_facts = 0;  // HotpotQA facts whose title/sentence is missing
  size_t duplicate_ids = 0;
  std::map<std::string, size_t> labels;  // categorical fields: "type=bridge", "difficulty=hard"

  bool ok() const { return info.stats.rows_bad == 0 && info.stats.rows_ok > 0; }
  nlohmann::json to_json() const;
  std::string to_text() const;  // the human report
};

// Reads the whole file. With skip_bad every bad row is counted and up to `max_listed` are kept with
// their reasons; without it the first bad row throws DataError.
DatasetCheck check_dataset(const std::string& path, Format format, bool skip_bad,
                           size_t max_listed = 50);

}  // namespace ragform::eval

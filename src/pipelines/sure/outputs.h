// What SURE's use cases write, written once for every front end that shows them (`ragform sure
// perturb|filter|eval` and `ragform demo`, which runs the same steps in-process and must write the
// same bytes as the commands it prints). JSON lines are compact, invalid UTF-8 replaced, each
// ending in '\n'.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/metrics.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/perturb_plan.h"
#include "pipelines/sure/preserve.h"

namespace ragform::sure {

// One JSON line as every SURE output file has it.
std::string json_line(const nlohmann::ordered_json& j);

// The pairs as `sure perturb` writes them (pair_to_json, one per line).
std::string pairs_jsonl(const std::vector<Pair>& pairs);
// The notes of a perturbation of `records` records: the records without documents (when there
// are), then "sure perturb: N pairs (F failed) from R records".
std::vector<std::string> perturb_notes(const PerturbResult& res, size_t records);

// What `sure filter` writes for pairs[i] with verdicts[i]: the kept pairs (with nli_forward and
// nli_backward when NLI was asked) and the dropped ones with their "reason".
struct FilterLines {
  std::string kept, rejected;
  size_t n_kept = 0;
};
FilterLines filter_lines(const std::vector<Pair>& pairs,
                         const std::vector<FilterVerdict>& verdicts);

// The robustness rows (robustness_report) as `sure eval` prints them.
std::string report_jsonl(const std::vector<ReportRow>& rows);
// "sure eval: run N: G generated, ... prompt tok/s", the summary of one evaluation.
std::string eval_note(const EvalSummary& sum);

}  // namespace ragform::sure

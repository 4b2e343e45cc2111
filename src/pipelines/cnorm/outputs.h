// What C-NORM's use cases write, written once for every front end that shows them (`ragform cnorm
// calibrate|eval`, `ragform data needle` and `ragform demo`, which runs the same steps in-process
// and must write the same bytes as the commands it prints):
//   needle_jsonl        the story-needle items as lost-in-the-middle QA records, one JSON line each
//   calibration_lines   the candidate table of a calibrated profile (ABS mean +- std, "<- best")
//   eval_lines          the variants of a gold-position sweep (OAA, OPA, best position)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/run.h"
#include "pipelines/cnorm/tasks.h"

namespace ragform::cnorm {

// One story-needle item as a lost-in-the-middle QA record: {"id", "question", "answers", "ctxs":
// [the gold document ("isgold": true), its distractors ("isgold": false)]}.
nlohmann::json needle_record(const Item& it);
// make_needle_items(count, docs, seed) as JSONL (compact lines, each ending in '\n').
std::string needle_jsonl(size_t count, size_t docs, uint64_t seed);

// One line per candidate, in the profile's order: "  <label padded to 10 columns> ABS m +- s
// (n prompts)", the best one marked "  <- best" (no trailing newline).
std::vector<std::string> calibration_lines(const Profile& prof);

// One line per averaged variant: "  <name> OAA a  OPA b (best position i of k)".
std::vector<std::string> eval_lines(const EvalSummary& sum);

}  // namespace ragform::cnorm

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
// The item as a QA record with k documents, the gold ("isgold": true, "hasanswer": true) at
// gold_pos among its first k - 1 distractors (arrange()); needle_record is this with every
// distractor and the gold first.
nlohmann::json item_record(const Item& it, size_t k, size_t gold_pos);
// Where `ragform data distractors` puts each record's gold: first, last, a fixed 0-based slot, or
// a slot drawn per record from (seed, record id).
struct GoldPlacement {
  enum Kind { First, Last, Slot, Random } kind = Random;
  size_t slot = 0;
  size_t position(const Item& it, size_t k, uint64_t seed) const;
};
// "first", "last", "random" or a 1-based position "1".."k"; UsageError("--gold", ...) otherwise.
GoldPlacement parse_gold_placement(const std::string& s, size_t k);

// One line per candidate, in the profile's order: "  <label padded to 10 columns> ABS m +- s
// (n prompts)", the best one marked "  <- best" (no trailing newline).
std::vector<std::string> calibration_lines(const Profile& prof);

// One line per averaged variant: "  <name> OAA a  OPA b (best position i of k)".
std::vector<std::string> eval_lines(const EvalSummary& sum);

}  // namespace ragform::cnorm

// Prefill accounting of one piece of work (what the prefix cache saved): the prompt tokens a reader
// was given and the ones it computed, counted from the meter's construction, and the line batch
// commands print.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "reader/reader.h"

namespace ragform::reader {

class PrefillMeter {
 public:
  explicit PrefillMeter(const Reader& r) : r_(r), start_(r.prefill_counts()) {}
  // Counts since construction; nullopt for a reader that does not count (a remote one).
  std::optional<PrefillCounts> counts() const {
    auto now = r_.prefill_counts();
    if (!now || !start_) return std::nullopt;
    return PrefillCounts{now->submitted - start_->submitted, now->computed - start_->computed};
  }
  const Reader& reader() const { return r_; }

 private:
  const Reader& r_;
  std::optional<PrefillCounts> start_;
};

// "prefill: computed C of S prompt tokens (R% reused)", R with one decimal.
std::string prefill_line(const PrefillCounts& c);
// {"submitted": S, "computed": C}: the run metadata "prefill" the pipelines store with a run (and
// `merge` adds up over shards).
nlohmann::json to_json(const PrefillCounts& c);

}  // namespace ragform::reader

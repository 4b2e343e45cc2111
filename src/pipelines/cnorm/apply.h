// C-NORM deployment (cnorm-surface-formatting.txt, section 4.3): a calibrated profile applied to
// one record. The one rule behind `ragform cnorm apply` (one JSONL line at a time), Python's
// ragform.cnorm.apply and serve's POST /v1/rag/normalize, so that the three give the same bytes.
#pragma once
#include <cstddef>

#include <nlohmann/json.hpp>

#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/tasks.h"

namespace ragform::cnorm {

// The format apply deploys: the profile's own (profile_format: best delimiter, p, seed). Apply
// writes text fields, so a profile whose best candidate is a SURE document format is a
// UsageError ("cnorm apply: the profile's best candidate is the document format '<f>'; ...").
Format applied_format(const Profile& profile);

struct Applied {
  nlohmann::json record;  // the record with its documents formatted, every other field as given
  size_t documents = 0;   // the texts formatted
};

// `record` with every ctxs[i].text, or else its "text" string, formatted with the profile's
// format for the profile's task (format_text). A record of another shape is an eval::RowError
// naming the field, which the CLI reports as FILE:LINE and Python as a ValueError.
Applied apply_profile(const Profile& profile, nlohmann::json record);

}  // namespace ragform::cnorm

// The CLI's side of the runner contract (pipelines/common/common.h): a runner's notes go to
// stderr, one line each, and each of its stages draws base/progress.h's line.
#pragma once
#include <optional>

#include "base/progress.h"
#include "pipelines/common/common.h"

namespace ragform::cli {

// Hooks that keep the current stage's progress line in *progress (which must outlive them).
common::RunHooks cli_run_hooks(std::optional<Progress>* progress);

}  // namespace ragform::cli

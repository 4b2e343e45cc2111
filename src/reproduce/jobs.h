// Internal to reproduce/: one job builder per paper (cnorm_jobs.cpp, sure_jobs.cpp,
// spotlight_jobs.cpp).
#pragma once
#include "reproduce/reproduce.h"

namespace ragform::reproduce::detail {

Job cnorm_job(const Planned& p, const Options& opt);
Job sure_job(const Planned& p, const Options& opt);
Job spotlight_job(const Planned& p, const Options& opt);

// A run of `pipeline` with identity `config`, by `r` on opt's model and tool version.
store::RunConfig run_config(const std::string& pipeline, const nlohmann::json& config,
                            const reader::Reader& r, const Options& opt);

// "<stage>: N of M <what> unmeasured (...)" through opt.hooks.note when N > 0: rows a reader left
// unmeasured in a run that still measured some (reader/measured.h), retried by a rerun.
void note_unmeasured(const Options& opt, const std::string& stage, int64_t n, int64_t of,
                     const std::string& what);

// A proportion k/n in the paper's unit (x `scale`: 100 for a percentage) with its Wilson interval.
Value proportion(const std::string& method, const std::string& metric, double k, double n,
                 double scale);

}  // namespace ragform::reproduce::detail

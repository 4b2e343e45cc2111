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

// A proportion k/n in the paper's unit (x `scale`: 100 for a percentage) with its Wilson interval.
Value proportion(const std::string& method, const std::string& metric, double k, double n,
                 double scale);

}  // namespace ragform::reproduce::detail

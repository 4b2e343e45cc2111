// C-NORM's numeric helpers, shared by its .cpp files, the report and the tests; not part of the
// front door (pipelines/cnorm/cnorm.h).
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "pipelines/cnorm/calibrate.h"

namespace ragform::cnorm::detail {

// (mean, sample std) of values; the caller guarantees values is not empty.
std::pair<double, double> mean_std(const std::vector<double>& v);
// Index of the largest mean (first on ties).
size_t argmax_mean(const std::vector<CandidateScore>& c);
// What "%.9g" prints.
double round9(double v);

}  // namespace ragform::cnorm::detail

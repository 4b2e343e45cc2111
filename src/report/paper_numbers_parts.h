// The parts of paper_numbers(), one file per paper (paper_numbers_cnorm.cpp, _sure.cpp,
// _spotlight.cpp); paper_numbers.cpp joins them in the listing's order. Not for other files:
// include paper_numbers.h.
#pragma once
#include <limits>
#include <vector>

#include "report/paper_numbers.h"

namespace ragform::report {

// The value of a text entry: NaN, so that no arithmetic on it passes for a paper's number.
inline constexpr double kText = std::numeric_limits<double>::quiet_NaN();

std::vector<PaperNumber> cnorm_numbers();
std::vector<PaperNumber> sure_main_numbers();
std::vector<PaperNumber> spotlight_main_numbers();
std::vector<PaperNumber> sure_more_numbers();
std::vector<PaperNumber> spotlight_sensitivity_numbers();

}  // namespace ragform::report

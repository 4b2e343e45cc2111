// `ragform sure prepare` (cmd_sure_prepare.cpp), dispatched from `ragform sure` (cmd_sure.cpp).
#pragma once
#include <string>
#include <vector>

namespace ragform::cli {

int run_sure_prepare(const std::vector<std::string>& argv);

}  // namespace ragform::cli

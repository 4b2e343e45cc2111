// The version string a run store records as its tool version and `ragform --version` prints.
#pragma once
#include <string>

namespace ragform::common {

// RAGFORM_VERSION " (git " RAGFORM_GIT ")", e.g. "0.1.0 (git 1577697-dirty)". Built in one
// place so that only this file recompiles when `git describe` changes.
std::string tool_version();

}  // namespace ragform::common

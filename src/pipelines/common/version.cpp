#include "pipelines/common/version.h"

#include "ragform_version.h"

namespace ragform::common {

std::string tool_version() { return std::string(RAGFORM_VERSION) + " (git " + RAGFORM_GIT + ")"; }

}  // namespace ragform::common

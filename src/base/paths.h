// Where ../shared (fixtures, data, papers) is: an explicit directory (--shared), else the
// caller's environment directory (the CLI passes $RAGFORM_SHARED; the library reads no
// environment), else the ../shared beside the source tree recorded at build time.
#pragma once
#include <string>

namespace ragform {

// Returns the first candidate that exists; throws ragform::Error listing what was tried otherwise.
std::string find_shared_dir(const std::string& explicit_dir = "", const std::string& env_dir = "");

}  // namespace ragform

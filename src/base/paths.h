// Where ../shared (fixtures, data, papers) is: an explicit directory (--shared), else the
// caller's environment directory (the CLI passes $RAGFORM_SHARED; the library reads no
// environment), else the ../shared beside the source tree recorded at build time.
#pragma once
#include <string>

namespace ragform {

// Returns the first candidate that exists; throws ragform::Error listing what was tried otherwise.
std::string find_shared_dir(const std::string& explicit_dir = "", const std::string& env_dir = "");

// The directory of the running executable (/proc/self/exe), "" when it cannot be read.
std::string executable_dir();

// A data directory the binary reads at run time (`rel`, e.g. "prompts/sure"): beside the
// executable first — <exe dir>/../share/ragform/<rel> (the `cmake --install` layout), then
// <exe dir>/<rel> — else `fallback` (the source tree's copy, for a binary run from its build tree).
std::string find_data_dir(const std::string& rel, const std::string& fallback);

// Throws FileError when `path` holds a NUL byte: the system would read the name only up to it, and
// open another file than the one named (Python's "stories260K.gguf\0/other.gguf" opened
// stories260K.gguf and described itself as other.gguf: issue 40, pass 8). Every opener of a file
// by name calls it (MappedFile, RunStore, the JSONL and JSON readers, AtomicFile).
void check_path(const std::string& path);

}  // namespace ragform

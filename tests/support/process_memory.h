// This process's address space, for the tests that limit it (RLIMIT_AS) relative to what it
// already uses.
#pragma once
#include <cstddef>
#include <fstream>
#include <string>

namespace ragform::testing {

// VmSize of /proc/self/status in bytes (0 when it cannot be read).
inline size_t vm_size_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return std::stoull(line.substr(7)) * 1024;
  return 0;
}

}  // namespace ragform::testing

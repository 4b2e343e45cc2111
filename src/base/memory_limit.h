// The memory this process may use: the smallest of physical memory, its address-space and data
// limits (RLIMIT_AS, RLIMIT_DATA: `ulimit -v`, `prlimit --as`) and its cgroup's limit (v2
// memory.max, v1 memory.limit_in_bytes, of its own cgroup and every ancestor), so that a default
// sized from "the machine's memory" (the prefix cache's, engine/runtime/prefix_cache.h) respects a
// container or a ulimit instead of dying of bad_alloc under it (issue 40).
#pragma once
#include <cstddef>
#include <string>

namespace ragform {

struct MemoryLimits {
  // Bytes; 0 = no limit (or it cannot be read).
  size_t physical = 0;       // sysconf(_SC_PHYS_PAGES) x page size
  size_t address_space = 0;  // RLIMIT_AS's soft limit
  size_t data = 0;           // RLIMIT_DATA's soft limit
  size_t cgroup = 0;         // the tightest memory.max / memory.limit_in_bytes on the way up
  // The smallest of the above that is set; 0 when none is.
  size_t smallest() const;
};

MemoryLimits memory_limits();

// What a front end says of a std::bad_alloc (which names nothing): "out of memory: an allocation
// failed; this process may use 1953 MiB (ulimit -v, the tightest of RAM, ulimit -v/-d and the
// cgroup's limit): ask for less at once (a smaller input, --ctx or --batch) or allow more".
std::string out_of_memory_message(const MemoryLimits& m);

// A reserve of memory for failing well. Once installed, an allocation that fails (throwing
// std::bad_alloc as ever) also frees the reserve, so the unwinding that follows (destructors that
// allocate: nlohmann::json's destroy() does, and a throw from it ends the process) and the error
// reply have room. Every command installs one as it starts (cli/main.cpp; a 14.7 MB record read
// under `ulimit -v` ended in std::terminate: issue 40, pass 12); `ragform serve` installs its own
// size and refills it after each failed request; installed again, the block takes the new size.
// Refill returns false when the memory is not there yet (the reserve stays spent and is tried again
// at the next refill).
void install_memory_reserve(size_t bytes);
bool refill_memory_reserve();
bool memory_reserve_spent();
std::string out_of_memory_message();  // of this process's limits (memory_limits())

// The tightest limit of a cgroup file system: `proc_self_cgroup` is /proc/self/cgroup's text,
// `root` the mount point (/sys/fs/cgroup). Exposed for tests; 0 when there is none.
size_t cgroup_memory_limit(const std::string& proc_self_cgroup, const std::string& root);

}  // namespace ragform

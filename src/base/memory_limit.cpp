// The memory limits of this process (memory_limit.h).
#include "base/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>

namespace ragform {

namespace {

// The number in a cgroup limit file; 0 for "max", a missing file or anything else.
size_t read_limit_file(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  if (!in || !(in >> s) || s.empty() || s == "max") return 0;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno || !end || *end || v == 0) return 0;
  // cgroup v1 writes "no limit" as the largest page-aligned long (9223372036854771712).
  if (v >= (1ull << 62)) return 0;
  return size_t(v);
}

size_t tighter(size_t a, size_t b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(a, b);
}

// The tightest of `file` in dir and every ancestor of dir up to root.
size_t walk_up(const std::string& root, std::string rel, const std::string& file) {
  size_t best = 0;
  for (;;) {
    while (rel.size() > 1 && rel.back() == '/') rel.pop_back();
    const std::string dir = rel.empty() || rel == "/" ? root : root + rel;
    best = tighter(best, read_limit_file(dir + "/" + file));
    if (rel.empty() || rel == "/") break;
    const size_t slash = rel.rfind('/');
    rel = slash == std::string::npos || slash == 0 ? std::string("/") : rel.substr(0, slash);
  }
  return best;
}

size_t rlimit_bytes(int resource) {
  rlimit rl{};
  if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0;
  return size_t(rl.rlim_cur);
}

}  // namespace

size_t MemoryLimits::smallest() const {
  return tighter(tighter(physical, address_space), tighter(data, cgroup));
}

std::string out_of_memory_message(const MemoryLimits& m) {
  std::string msg = "out of memory: an allocation failed";
  const size_t most = m.smallest();
  if (most) {
    const char* which = most == m.address_space ? "ulimit -v"
                        : most == m.data        ? "ulimit -d"
                        : most == m.cgroup      ? "the cgroup's memory limit"
                                                : "the machine's RAM";
    msg += "; this process may use " + std::to_string(most >> 20) + " MiB (" + which +
           ", the tightest of RAM, ulimit -v/-d and the cgroup's limit)";
  }
  return msg + ": ask for less at once (a smaller input, --ctx or --batch) or allow more";
}

namespace {
std::atomic<void*> g_reserve{nullptr};
std::atomic<size_t> g_reserve_bytes{0};

// operator new calls this when an allocation fails: the reserve is given back and the allocation
// fails all the same (tried again, it would take the reserve for itself and leave nothing for
// the unwinding that follows).
void release_reserve() {
  if (void* p = g_reserve.exchange(nullptr)) std::free(p);
  throw std::bad_alloc();
}
}  // namespace

void install_memory_reserve(size_t bytes) {
  // Installed again with another size (the CLI's, then `serve`'s own): the block takes the new one.
  if (g_reserve_bytes.exchange(bytes) != bytes)
    if (void* p = g_reserve.exchange(nullptr)) std::free(p);
  refill_memory_reserve();
  std::set_new_handler(release_reserve);
}

bool refill_memory_reserve() {
  if (g_reserve.load() || g_reserve_bytes == 0) return true;
  void* p = std::malloc(g_reserve_bytes);
  if (!p) return false;
  // Touched, so the pages are the process's (under overcommit an untouched block holds only
  // address space, which is what an address-space limit counts anyway).
  std::memset(p, 0, g_reserve_bytes);
  void* none = nullptr;
  if (!g_reserve.compare_exchange_strong(none, p)) std::free(p);  // another thread refilled
  return true;
}

bool memory_reserve_spent() { return g_reserve_bytes != 0 && g_reserve.load() == nullptr; }

std::string out_of_memory_message() {
  try {  // the failed allocation's memory is back by now; reading the limits needs a little
    return out_of_memory_message(memory_limits());
  } catch (...) {
    return "out of memory: an allocation failed";
  }
}

size_t cgroup_memory_limit(const std::string& proc_self_cgroup, const std::string& root) {
  // Lines "ID:CONTROLLERS:PATH": v2's is "0::PATH"; v1's memory controller "N:memory:PATH"
  // (possibly among others, "N:cpu,memory:PATH").
  size_t best = 0;
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty()) {
      best = tighter(best, walk_up(root, path, "memory.max"));
    } else {
      std::istringstream cs(controllers);
      std::string c;
      bool memory = false;
      while (std::getline(cs, c, ','))
        if (c == "memory") memory = true;
      if (memory) best = tighter(best, walk_up(root + "/memory", path, "memory.limit_in_bytes"));
    }
  }
  // In a container the process's path may not exist under the mount (a cgroup namespace shows
  // "/", the mount shows the container's own cgroup): its root files are the container's limit.
  best = tighter(best, read_limit_file(root + "/memory.max"));
  best = tighter(best, read_limit_file(root + "/memory/memory.limit_in_bytes"));
  return best;
}

MemoryLimits memory_limits() {
  MemoryLimits m;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) m.physical = size_t(pages) * size_t(page);
  m.address_space = rlimit_bytes(RLIMIT_AS);
  m.data = rlimit_bytes(RLIMIT_DATA);
  std::ifstream in("/proc/self/cgroup");
  std::stringstream ss;
  ss << in.rdbuf();
  m.cgroup = cgroup_memory_limit(ss.str(), "/sys/fs/cgroup");
  return m;
}

}  // namespace ragform

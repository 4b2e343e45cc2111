#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>

#include "base/error.h"
#include "base/paths.h"

namespace ragform {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kMinHugeFile = size_t(64) << 20;
constexpr size_t kKeepFree = size_t(1) << 30;

// MemAvailable in bytes, or 0 when /proc/meminfo does not say.
size_t mem_available() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

bool huge_pages_disabled() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return modes.empty() || modes.find("[never]") != std::string::npos;
}

bool read_into_memory(MappedFile::Load how, size_t size) {
  if (how == MappedFile::Load::memory) return true;
  if (how != MappedFile::Load::memory_if_room || size < kMinHugeFile) return false;
  return !huge_pages_disabled() && mem_available() > size + kKeepFree;
}

}  // namespace

MappedFile::MappedFile(const std::string& path, Load how) : path_(path) {
  check_path(path);
  // O_NONBLOCK: opening a FIFO for reading waits for a writer, forever (issue 40, pass 10); with
  // it the open returns and the check below refuses the FIFO. A regular file ignores the flag.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw FileError(path, std::strerror(errno), errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw FileError(path, std::strerror(e), e);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw FileError(path, "is a directory", EISDIR);
  }
  // A pipe or a device has no size to map: it was read as an empty file ("magic: needs 4 bytes
  // ... (file size 0)" for /dev/zero or <(cat model.gguf)).
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FileError(path,
                    "not a regular file (a pipe, a device or a socket cannot be mapped: give the "
                    "file itself)",
                    EINVAL);
  }
  size_ = static_cast<size_t>(st.st_size);
  bool memory = false;
  try {
    memory = size_ > 0 && read_into_memory(how, size_);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (memory) {
    // A 2 MB-aligned anonymous region (over-allocated, then trimmed), so every 2 MB of the image
    // can be one huge page.
    const size_t want = (size_ + kHugePage - 1) / kHugePage * kHugePage;
    void* raw = ::mmap(nullptr, want + kHugePage, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw != MAP_FAILED) {
      auto* base = static_cast<uint8_t*>(raw);
      const size_t head = (kHugePage - reinterpret_cast<uintptr_t>(base) % kHugePage) % kHugePage;
      if (head) ::munmap(base, head);
      ::munmap(base + head + want, kHugePage - head);  // the tail: never empty
      auto* dst = base + head;
      data_ = dst;
      mapped_size_ = want;
      ::madvise(dst, want, MADV_HUGEPAGE);
      // Fault the pages in before reading: read() into untouched huge-page memory measured 2.5 s
      // for 1 GB, touching first then reading 0.3 s (the plain mapping: 0.27 s, but it pays its
      // page faults during the first forward pass instead).
      for (size_t off = 0; off < want; off += 4096) dst[off] = 0;
      size_t done = 0;
      while (done < size_) {
        const ssize_t n =
            ::pread(fd, dst + done, std::min<size_t>(size_ - done, size_t(64) << 20), off_t(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          const int e = n < 0 ? errno : EIO;
          ::close(fd);
          release();
          throw Error(path, std::string("read failed: ") +
                                (n < 0 ? std::strerror(e) : "the file shrank while reading"));
        }
        done += size_t(n);
      }
      ::mprotect(dst, want, PROT_READ);
      in_memory_ = true;
    }
    // mmap refused the region (no room after all): map the file instead.
  }
  if (size_ > 0 && !in_memory_) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(path, std::string("mmap failed: ") + std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
    mapped_size_ = size_;
  }
  ::close(fd);
}

void MappedFile::release() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), mapped_size_);
  mapped_size_ = 0;
  data_ = nullptr;
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      mapped_size_(std::exchange(o.mapped_size_, 0)),
      in_memory_(std::exchange(o.in_memory_, false)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_size_ = std::exchange(o.mapped_size_, 0);
    in_memory_ = std::exchange(o.in_memory_, false);
  }
  return *this;
}

namespace {

// At most `max` bytes of `path`, and whether more followed; throws naming the file.
std::string read_at_most(const std::string& path, size_t max, const std::string& what,
                         const char* stop_at, bool* more) {
  // "<path>: <why>", or "<path>: cannot read the <what>: <why>" when the caller names the file.
  const std::string name = what.empty() ? std::string() : "cannot read the " + what + ": ";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw FileError(path, name + "it is a directory", EISDIR);
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    const int err = errno;
    throw FileError(path, name + std::strerror(err), err);
  }
  std::string out;
  char buf[1 << 16];
  *more = false;
  for (;;) {
    const size_t want = std::min(sizeof buf, max + 1 - out.size());
    f.read(buf, std::streamsize(want));
    const size_t got = size_t(f.gcount());
    if (stop_at) {
      const void* nl = std::memchr(buf, *stop_at, got);
      if (nl) {
        out.append(buf, size_t(static_cast<const char*>(nl) - buf));
        return out;
      }
    }
    out.append(buf, got);
    if (out.size() > max) {
      out.resize(max);
      *more = true;
      return out;
    }
    if (got < want) break;
  }
  if (f.bad()) throw FileError(path, name + "read failed");
  return out;
}

}  // namespace

std::string read_file_bytes(const std::string& path, size_t max, const std::string& what) {
  bool more = false;
  std::string s = read_at_most(path, max, what, nullptr, &more);
  if (more)
    throw Error(path, (what.empty() ? std::string("the file") : "the " + what) +
                          " is over the limit of " + std::to_string(max) +
                          " bytes (a text file is read whole; is it the right file?)");
  return s;
}

std::string read_first_line(const std::string& path, size_t max, const std::string& what) {
  bool more = false;
  const char nl = '\n';
  std::string s = read_at_most(path, max, what, &nl, &more);
  if (more)
    throw Error(path,
                "the " + what + "'s first line is longer than " + std::to_string(max) + " bytes");
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

}  // namespace ragform

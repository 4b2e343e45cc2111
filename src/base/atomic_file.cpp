#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <streambuf>
#include <vector>

#include "base/error.h"
#include "base/file_identity.h"
#include "base/paths.h"

namespace ragform {

namespace {

// 12 hex digits from the system's random source: a name no other user can guess before the file
// exists (and O_EXCL refuses one that does).
std::string random_suffix() {
  static thread_local std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 3; ++i) {
    uint32_t v = rd();
    for (int k = 0; k < 4; ++k, v >>= 4) s += kHex[v & 15];
  }
  return s;
}

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

// Whether `path`, or a symlink on the way to what it names, is under /proc, where fd links lead to
// whatever a descriptor holds (stdout's file, a pipe): kNotProc, kOtherProc, or the number of
// this process's own descriptor it names (/dev/stdout, /dev/fd/1, /proc/self/fd/1).
constexpr int kNotProc = -1, kOtherProc = -2;
int proc_descriptor(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd";
  fs::path p = fs::absolute(path, ec);
  for (int hops = 0; hops < 40; ++hops) {
    fs::path parent = fs::canonical(p.parent_path(), ec);
    if (ec) parent = p.parent_path();
    const fs::path full = parent / p.filename();
    if (full.string().rfind("/proc/", 0) == 0) {
      const std::string name = full.filename().string();
      const bool digits = !name.empty() && name.size() < 9 &&
                          name.find_first_not_of("0123456789") == std::string::npos;
      // This process's table: /proc/<pid>/fd, or a thread's view of it, /proc/<pid>/task/<tid>/fd
      // (/proc/thread-self/fd resolves there; pass 15), which the threads share.
      const std::string dir = parent.string();
      const std::string task = "/proc/" + std::to_string(::getpid()) + "/task/";
      const bool mine = dir == own || dir == "/proc/self/fd" ||
                        (dir.rfind(task, 0) == 0 && dir.size() > task.size() + 3 &&
                         dir.compare(dir.size() - 3, 3, "/fd") == 0 &&
                         dir.find('/', task.size()) == dir.size() - 3);
      return digits && mine ? std::stoi(name) : kOtherProc;
    }
    if (!fs::is_symlink(full, ec)) return kNotProc;
    const fs::path to = fs::read_symlink(full, ec);
    if (ec) return kNotProc;
    p = to.is_absolute() ? to : full.parent_path() / to;
  }
  return kNotProc;
}

// The temporary's name without its random end: "<target>.tmp.", its file name cut to 128 bytes
// (a valid 250-byte name plus the suffix was past NAME_MAX: pass 14).
std::string temp_base(const std::string& target) {
  const size_t slash = target.rfind('/');
  const size_t start = slash == std::string::npos ? 0 : slash + 1;
  const std::string name = target.substr(start);
  return target.substr(0, start) + (name.size() > 128 ? name.substr(0, 128) : name) + ".tmp.";
}

}  // namespace

// A stream buffer appending to the descriptor in blocks of 64 KiB.
struct AtomicFile::Stream : std::streambuf {
  explicit Stream(int file) : fd(file), buf(size_t(1) << 16), os(this) {
    setp(buf.data(), buf.data() + buf.size());
  }
  int fd;
  int err = 0;  // errno of the first failed write
  std::vector<char> buf;
  std::ostream os;

  bool drain() {
    const size_t n = size_t(pptr() - pbase());
    setp(buf.data(), buf.data() + buf.size());
    if (n == 0 || err) return !err;
    if (!write_all(fd, buf.data(), n)) {
      err = errno;
      return false;
    }
    return true;
  }
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
};

AtomicFile::AtomicFile(std::string target, std::string what)
    : target_(std::move(target)), what_(std::move(what)) {
  check_path(target_);
  refuse_open_store(target_, what_);
  // Written in place, as any program writes one: one of this process's descriptors named through
  // /proc (`-o /dev/stdout` while stdout is a file: /dev/stdout -> /proc/self/fd/1 -> the file;
  // renamed over, the link in /dev became a file and the output went nowhere: pass 14) is that
  // descriptor itself, so the output lands where stdout's does (appended under `>>`); anything
  // else under /proc, a device, FIFO or socket is opened and written.
  const int own = proc_descriptor(target_);
  if (own >= 0) {
    in_place_ = true;
    temp_ = dest_ = target_;
    fd_ = ::fcntl(own, F_DUPFD_CLOEXEC, 0);
    if (fd_ < 0) {
      const int err = errno;
      throw FileError(what_, "cannot write " + target_ + ": " + std::strerror(err), err);
    }
    return;
  }
  struct stat st {};
  const bool exists = ::stat(target_.c_str(), &st) == 0;  // through symlinks
  if (exists && S_ISDIR(st.st_mode)) throw FileError(what_, target_ + ": is a directory", EISDIR);
  if (exists && (!S_ISREG(st.st_mode) || own == kOtherProc)) {
    in_place_ = true;
    temp_ = dest_ = target_;
    // A regular file reached through another process's /proc is replaced in place: truncated,
    // as `>` would (written from its start, its old tail stayed: pass 15).
    const int trunc = S_ISREG(st.st_mode) ? O_TRUNC : 0;
    fd_ = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | trunc);
    if (fd_ < 0) {
      const int err = errno;
      throw FileError(what_, "cannot write " + target_ + ": " + std::strerror(err), err);
    }
    return;
  }
  // A symlink named as the target is replaced by the file, never written through: a link planted
  // in a shared folder cannot send the bytes elsewhere (a rename beside the resolved path would
  // also pass by the kernel's protected_symlinks). Its own permission bits are not the output's.
  struct stat link {};
  const bool is_link = ::lstat(target_.c_str(), &link) == 0 && S_ISLNK(link.st_mode);
  dest_ = target_;
  const std::string base = temp_base(target_);
  for (int attempt = 0;; ++attempt) {
    temp_ = base + random_suffix();
    // O_EXCL | O_NOFOLLOW: never an existing file, never through a symlink.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    const int err = errno;
    if (err == EEXIST && attempt < 100) continue;
    throw FileError(what_,
                    "cannot create " + temp_ + " (the temporary file that replaces " + target_ +
                        " whole): " + std::strerror(err),
                    err);
  }
  // The file replaced keeps its permission bits (a private 0600 output came back 0644), but not
  // setuid, setgid or sticky: a file of another owner replaced by root came back setuid root
  // (pass 14), where a write would have cleared them.
  if (exists && !is_link && ::fchmod(fd_, st.st_mode & 0777) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    ::unlink(temp_.c_str());
    throw FileError(what_, "cannot set the mode of " + temp_ + ": " + std::strerror(err), err);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !in_place_) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const std::string& why, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!in_place_) ::unlink(temp_.c_str());
  committed_ = true;  // nothing left to remove
  throw FileError(what_, why + ": " + std::strerror(err), err);
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw Error(what_, temp_ + ": write after commit");
  if (stream_ && !stream_->drain()) fail(temp_ + ": write failed", stream_->err);
  if (!write_all(fd_, bytes.data(), bytes.size())) fail(temp_ + ": write failed", errno);
}

std::ostream& AtomicFile::stream() {
  if (fd_ < 0) throw Error(what_, temp_ + ": write after commit");
  if (!stream_) stream_ = std::make_unique<Stream>(fd_);
  return stream_->os;
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(what_, temp_ + ": committed twice");
  if (stream_) {
    stream_->os.flush();
    if (stream_->err || !stream_->os)
      fail(temp_ + ": write failed", stream_->err ? stream_->err : EIO);
  }
  // Data on disk before the rename: a crash leaves the old target (or none), never a torn one.
  if (!in_place_ && ::fdatasync(fd_) != 0) fail(temp_ + ": sync failed", errno);
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) fail(temp_ + ": close failed", errno);
  if (!in_place_ && std::rename(temp_.c_str(), dest_.c_str()) != 0)
    fail("cannot rename " + temp_ + " to " + dest_, errno);
  committed_ = true;
}

void write_file_atomically(const std::string& path, std::string_view bytes,
                           const std::string& what) {
  AtomicFile f(path, what);
  f.write(bytes);
  f.commit();
}

}  // namespace ragform

#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
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
  struct stat st {};
  const bool exists = ::stat(target_.c_str(), &st) == 0;  // through symlinks
  if (exists && S_ISDIR(st.st_mode)) throw FileError(what_, target_ + ": is a directory", EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {
    in_place_ = true;
    temp_ = dest_ = target_;
    fd_ = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
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
  for (int attempt = 0;; ++attempt) {
    temp_ = dest_ + ".tmp." + random_suffix();
    // O_EXCL | O_NOFOLLOW: never an existing file, never through a symlink.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    const int err = errno;
    if (err == EEXIST && attempt < 100) continue;
    throw FileError(what_, "cannot create " + temp_ + ": " + std::strerror(err), err);
  }
  // The file replaced keeps its permission bits (a private 0600 output came back 0644).
  if (exists && !is_link && ::fchmod(fd_, st.st_mode & 07777) != 0) {
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

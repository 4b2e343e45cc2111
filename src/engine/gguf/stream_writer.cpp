#include "engine/gguf/stream_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace ragform::gguf {

namespace {

void pwrite_all(int fd, const uint8_t* p, size_t n, uint64_t off, const std::string& what,
                const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, off_t(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(what, path + ": write failed: " + std::strerror(errno));
    p += w;
    n -= size_t(w);
    off += uint64_t(w);
  }
}

// Adds `tensors` (no data) to `w` and lays the file out; bytes[i] = tensor i's size.
Writer::Layout lay_out(Writer& w, const std::vector<TensorSpec>& tensors,
                       std::vector<uint64_t>& bytes, const std::string& what) {
  for (const auto& t : tensors) {
    int64_t n = 1;
    for (auto d : t.ne) n *= d;
    const TypeInfo& ti = type_info(t.type);
    bytes.push_back(uint64_t(n / ti.block_size) * uint64_t(ti.type_size));
    w.add_tensor(t.name, t.ne, t.type, nullptr, bytes.back());
  }
  Writer::Layout l = w.layout();
  if (l.offsets.size() != tensors.size())
    throw Error(what, "StreamWriter: the metadata writer must hold no tensors");
  return l;
}

}  // namespace

uint64_t StreamWriter::size_of(Writer meta, const std::vector<TensorSpec>& tensors) {
  std::vector<uint64_t> bytes;
  const Writer::Layout l = lay_out(meta, tensors, bytes, "gguf");
  return l.header.size() + l.data_bytes;
}

StreamWriter::StreamWriter(const std::string& path, Writer w,
                           const std::vector<TensorSpec>& tensors, std::string what)
    : path_(path), tmp_(path + ".tmp"), what_(std::move(what)) {
  const Writer::Layout l = lay_out(w, tensors, bytes_, what_);
  for (uint64_t o : l.offsets) offsets_.push_back(l.header.size() + o);
  file_bytes_ = l.header.size() + l.data_bytes;

  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw FileError(what_, "cannot create " + tmp_ + ": " + std::strerror(errno), errno);
  try {
    pwrite_all(fd_, reinterpret_cast<const uint8_t*>(l.header.data()), l.header.size(), 0, what_,
               tmp_);
    if (::ftruncate(fd_, off_t(file_bytes_)) != 0)
      throw Error(what_, tmp_ + ": cannot extend to " + std::to_string(file_bytes_) +
                             " bytes: " + std::strerror(errno));
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    std::remove(tmp_.c_str());
    throw;
  }
}

StreamWriter::~StreamWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) std::remove(tmp_.c_str());
}

void StreamWriter::write(size_t i, uint64_t at, const void* p, size_t n) {
  if (i >= offsets_.size() || at > bytes_[i] || n > bytes_[i] - at)
    throw Error(what_, tmp_ + ": write of " + std::to_string(n) + " bytes at " +
                           std::to_string(at) + " outside tensor " + std::to_string(i));
  if (fd_ < 0) throw Error(what_, tmp_ + ": write after commit");
  pwrite_all(fd_, static_cast<const uint8_t*>(p), n, offsets_[i] + at, what_, tmp_);
}

void StreamWriter::commit() {
  if (fd_ < 0) throw Error(what_, tmp_ + ": committed twice");
  // Data on disk before the rename: a crash leaves the old `path` (or none), never a torn one.
  const bool synced = ::fdatasync(fd_) == 0;
  const int sync_errno = errno;
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!synced) throw Error(what_, tmp_ + ": sync failed: " + std::strerror(sync_errno));
  if (!closed) throw Error(what_, tmp_ + ": close failed: " + std::strerror(errno));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw Error(what_, "cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(errno));
  committed_ = true;
}

}  // namespace ragform::gguf

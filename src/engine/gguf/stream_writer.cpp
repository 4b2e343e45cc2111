#include "engine/gguf/stream_writer.h"

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
    : what_(std::move(what)) {
  const Writer::Layout l = lay_out(w, tensors, bytes_, what_);
  for (uint64_t o : l.offsets) offsets_.push_back(l.header.size() + o);
  file_bytes_ = l.header.size() + l.data_bytes;

  // A failure below destroys file_, which removes the temporary file.
  file_ = std::make_unique<AtomicFile>(path, what_);
  pwrite_all(file_->fd(), reinterpret_cast<const uint8_t*>(l.header.data()), l.header.size(), 0,
             what_, file_->temp_path());
  if (::ftruncate(file_->fd(), off_t(file_bytes_)) != 0)
    throw Error(what_, file_->temp_path() + ": cannot extend to " + std::to_string(file_bytes_) +
                           " bytes: " + std::strerror(errno));
}

// Without commit(), file_'s destructor removes the temporary file.
StreamWriter::~StreamWriter() = default;

void StreamWriter::write(size_t i, uint64_t at, const void* p, size_t n) {
  if (i >= offsets_.size() || at > bytes_[i] || n > bytes_[i] - at)
    throw Error(what_, file_->temp_path() + ": write of " + std::to_string(n) + " bytes at " +
                           std::to_string(at) + " outside tensor " + std::to_string(i));
  if (committed_) throw Error(what_, file_->temp_path() + ": write after commit");
  pwrite_all(file_->fd(), static_cast<const uint8_t*>(p), n, offsets_[i] + at, what_,
             file_->temp_path());
}

void StreamWriter::commit() {
  if (committed_) throw Error(what_, file_->temp_path() + ": committed twice");
  // Synced before the rename: a crash leaves the old `path` (or none), never a torn one.
  file_->commit();
  committed_ = true;
}

}  // namespace ragform::gguf

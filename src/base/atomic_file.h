// Files written whole or not at all: the bytes go to a new temporary file beside the target,
// which is synced and renamed over the target once complete; a failure (or an AtomicFile
// destroyed without commit()) removes the temporary file, so a failed run never leaves a
// half-written target nor a stray temporary. The file replaced keeps its permission bits; a
// symlink named as the target is replaced by the file, never written through (a link planted in a
// shared folder cannot redirect the bytes). A target that is no regular file (a device such as
// /dev/null or /dev/stdout, a FIFO, a socket) is written in place, as any program writes one: a
// temporary renamed over it replaced the device with a file (issue 40, pass 13: root's `kv generate
// -o /dev/null` did).
//
// The temporary file's name is unpredictable ("<target>.tmp.<12 random hex digits>") and it is
// created with O_CREAT | O_EXCL | O_NOFOLLOW (mode 0666 less the umask, as an ordinary file):
// a file or a symlink planted at any name cannot be written through (a fixed "<target>.tmp"
// followed a planted symlink and overwrote the file it pointed to, issue 40). Every
// temp-then-rename writer of the tree goes through here.
#pragma once
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace ragform {

class AtomicFile {
 public:
  // Creates the temporary file beside `target`. FileError(what, "cannot create <temp>: <why>",
  // errno) when it cannot be (no such folder, no permission).
  AtomicFile(std::string target, std::string what);
  // Without commit(): closes and removes the temporary file.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return target_; }
  const std::string& temp_path() const { return temp_; }
  // The temporary file's descriptor, for writers that place bytes themselves (pwrite,
  // ftruncate); -1 after commit().
  int fd() const { return fd_; }

  // Appends `bytes` at the file's current offset. FileError(what, "<temp>: write failed: ...").
  void write(std::string_view bytes);
  // A buffered stream appending to the file (for writers of std::ostream); flushed by commit().
  // A failed write sets its badbit, which commit() reports.
  std::ostream& stream();

  // Flushes the stream, syncs the data to disk, closes the file and renames it over the target:
  // a crash leaves the old target (or none), never a torn one. FileError(what, ..., errno) on a
  // failure, after removing the temporary file.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& why, int err);
  std::string target_, temp_, what_;
  std::string dest_;       // what the rename replaces (the target; temp_ when written in place)
  bool in_place_ = false;  // a device, FIFO or socket, written directly (no temporary, no rename)
  int fd_ = -1;
  bool committed_ = false;
  struct Stream;
  std::unique_ptr<Stream> stream_;
};

// `bytes` written to `path` through an AtomicFile (errors as AtomicFile's, named by `what`).
void write_file_atomically(const std::string& path, std::string_view bytes,
                           const std::string& what);

}  // namespace ragform

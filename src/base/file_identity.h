// Whether two names are one file, and the run stores this process has open, so that an output
// written whole never replaces one: `report S -o S`, `export S -o S` and `tune --store S -o S`
// turned a store into HTML, JSONL or a profile, its measurements gone, exit 0 (issue 40, pass 11).
#pragma once
#include <string>

namespace ragform {

// Whether `a` and `b` name the same file: the same device and inode once both exist (a symlink,
// a hard link, "./x" and "x" alike), else the same path once symlinks are followed (a dangling
// one too) and it is made absolute and normal.
bool same_file(const std::string& a, const std::string& b);

// Marks the file at `path` (which exists) as a run store open in this process, for its lifetime.
class OpenStoreMark {
 public:
  explicit OpenStoreMark(const std::string& path);
  ~OpenStoreMark();
  OpenStoreMark(const OpenStoreMark&) = delete;
  OpenStoreMark& operator=(const OpenStoreMark&) = delete;

 private:
  unsigned long long dev_ = 0, ino_ = 0;
  bool marked_ = false;
};

// UsageError(what, "<path>: is the run store this command uses; ...") when `path` is a run store
// open in this process. Every writer of a whole file calls it (AtomicFile).
void refuse_open_store(const std::string& path, const std::string& what);

}  // namespace ragform

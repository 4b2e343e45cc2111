// Shared by the fuzz targets whose parser reads a file by path (the data loaders): each input is
// written to one scratch file of this process, removed at exit.
#pragma once
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ragform::fuzz {

class ScratchFile {
 public:
  explicit ScratchFile(const char* suffix)
      : path_("/tmp/ragform-fuzz-" + std::to_string(::getpid()) + suffix) {}
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Replaces the file's contents with the input; the path to hand to the parser.
  const std::string& write(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) __builtin_trap();  // the fuzzer's own scratch space is broken, not the parser
    if (size && std::fwrite(data, 1, size, f) != size) __builtin_trap();
    std::fclose(f);
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace ragform::fuzz

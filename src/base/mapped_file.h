// A read-only file image: memory-mapped, or (for model weights) read into memory backed by 2 MB
// transparent huge pages.
//
// Why huge pages: decode streams every weight once per token, and with the 4 KB pages of a file
// mapping the hardware prefetchers stop at every page boundary and the TLB misses every 4 KB;
// measured on the project's VM (five alternated pairs), Q8_0 tg32 ran 7% faster from 2 MB pages.
// The cost is a private copy (the page cache may keep another) and the read at load.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ragform {

class MappedFile {
 public:
  enum class Load {
    map,  // mmap the file
    // Read into huge-page memory when that can help and fits: the file is at least 64 MB,
    // transparent huge pages are not disabled, and MemAvailable exceeds the file size by 1 GB;
    // otherwise map. (The CLI's RAGFORM_LOAD=mmap|memory picks `map` or `memory` instead.)
    memory_if_room,
    memory,  // always read into (huge-page) memory
  };
  // Opens `path` read-only; throws ragform::Error naming the path on failure. An empty file gives
  // size() == 0 and data() == nullptr.
  explicit MappedFile(const std::string& path, Load how = Load::map);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  std::string_view bytes() const { return {reinterpret_cast<const char*>(data_), size_}; }
  // Whether the image was read into (huge-page) memory rather than mapped.
  bool in_memory() const { return in_memory_; }

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_size_ = 0;  // bytes mapped at data_ (in memory: size_ rounded up to 2 MB)
  bool in_memory_ = false;
};

// The most bytes a text file given whole (a prompt with -f, a prompt template) may hold: far
// above any context window, and small enough that /dev/zero or a wrong path to a model file is
// refused at once instead of ending in std::bad_alloc.
inline constexpr size_t kMaxTextFileBytes = size_t(64) << 20;

// Reads a whole file into a string; throws ragform::Error naming the path (and `what`, e.g.
// "prompt template", when given) when it cannot be read, is a directory, or holds more than `max`
// bytes. Reads at most max + 1 bytes, so a device or a pipe without end is refused after them;
// a pipe of at most `max` bytes (-f /dev/stdin, -f <(...)) is read whole.
std::string read_file_bytes(const std::string& path, size_t max = kMaxTextFileBytes,
                            const std::string& what = "");

// The first line of a file (without its "\n" or "\r\n"), reading at most `max` bytes: a line
// longer is refused naming the path and `what` (--api-key-file /dev/zero read 2 GB before).
std::string read_first_line(const std::string& path, size_t max, const std::string& what);

}  // namespace ragform

// A read-only memory-mapped file. Weights stay mapped (never copied) so a model costs only the
// pages the forward pass touches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ragform {

class MappedFile {
 public:
  // Maps `path` read-only; throws ragform::Error naming the path on failure. An empty file maps to
  // size() == 0 and data() == nullptr.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  std::string_view bytes() const { return {reinterpret_cast<const char*>(data_), size_}; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole file into a string; throws ragform::Error naming the path.
std::string read_file_bytes(const std::string& path);

}  // namespace ragform

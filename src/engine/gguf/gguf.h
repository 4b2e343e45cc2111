// GGUF model files (versions 2 and 3): a memory-mapped, bounds-checked reader and a writer.
//
// Byte layout (all integers little-endian):
//
//   offset 0   char[4]  magic "GGUF"
//              u32      version (2 or 3; version 1 used u32 counts and is rejected)
//              u64      n_tensors
//              u64      n_kv
//   n_kv times: key/value pair
//              u64      key length L, then L bytes of key (UTF-8, no NUL)
//              u32      value type (below)
//              value:   u8 0 | i8 1 | u16 2 | i16 3 | u32 4 | i32 5 | f32 6 | bool 7 (1 byte, 0/1)
//                       | string 8 (u64 length + bytes) | array 9 (u32 element type, u64 count,
//                       count elements; arrays may nest) | u64 10 | i64 11 | f64 12
//   n_tensors times: tensor info
//              string   name (u64 length + bytes)
//              u32      n_dims (1..4)
//              u64      ne[n_dims]   ne[0] is the contiguous dimension (row length)
//              u32      ggml type id (engine/gguf/types.h)
//              u64      offset of the tensor's data, relative to the data section
//   padding to a multiple of `general.alignment` (u32 key; absent = 32)
//   data section: tensors, each at its offset (a multiple of the alignment)
//
// Every count, length and offset read from the file is checked against the bytes that remain
// before it is used (a claim of 10^12 array elements fails before any allocation). Errors throw
// ragform::Error("gguf", "<file>: <field>: <why>").
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/mapped_file.h"
#include "engine/gguf/types.h"
#include "engine/gguf/value.h"

namespace ragform::gguf {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] = row length (contiguous)
  TensorType type = TensorType::F32;
  uint64_t offset = 0;            // relative to the data section
  const uint8_t* data = nullptr;  // points into the mapping (reader) or caller memory (writer)
  uint64_t n_bytes = 0;

  int64_t n_elements() const;
  int64_t rows() const;  // product of ne[1..]
};

class File {
 public:
  // Opens and validates `path`; the image (mapped, or read into memory: MappedFile::Load) lives as
  // long as the File.
  static std::unique_ptr<File> open(const std::string& path,
                                    MappedFile::Load how = MappedFile::Load::map);
  // The same with memory_if_room decided on the parsed header: the file is mapped and parsed
  // once, then kept mapped when keep_mapped(file) is true, else held as memory_if_room holds it
  // (the image read again, the header not). Any other `how` is as open(path, how).
  static std::unique_ptr<File> open(const std::string& path, MappedFile::Load how,
                                    const std::function<bool(const File&)>& keep_mapped);
  // Whether the image was read into huge-page memory (MappedFile::in_memory).
  bool in_memory() const { return map_ && map_->in_memory(); }
  // Parses an in-memory image (used by tests and the fuzzer); `bytes` must outlive the File.
  static std::unique_ptr<File> parse(const uint8_t* bytes, size_t size, const std::string& name);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order, and lookup by key.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Typed lookups; the key's absence or a wrong type throws naming the key.
  const Value& get(std::string_view key) const;
  int64_t get_int(std::string_view key) const { return get(key).as_int(); }
  int64_t get_int(std::string_view key, int64_t def) const;
  double get_float(std::string_view key, double def) const;
  std::string get_string(std::string_view key, const std::string& def) const;
  const std::string& get_string(std::string_view key) const { return get(key).as_string(); }
  bool get_bool(std::string_view key, bool def) const;
  // String array (e.g. tokenizer.ggml.tokens) as views into the file's values.
  std::vector<std::string_view> get_strings(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  const TensorInfo& tensor(std::string_view name) const;  // throws naming the tensor

  std::string architecture() const { return get_string("general.architecture", ""); }

 private:
  File() = default;
  void parse_image(const uint8_t* p, size_t n);
  std::unique_ptr<MappedFile> map_;
  std::string path_;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Builds a GGUF v3 file: metadata in insertion order, tensors laid out in insertion order at
// `general.alignment`. Tensor bytes are copied at write time from the given pointer.
class Writer {
 public:
  void set(const std::string& key, Value v);  // replaces an existing key in place
  void add_tensor(const std::string& name, const std::vector<int64_t>& ne, TensorType type,
                  const void* data, uint64_t n_bytes);
  // Serialises to a byte string (small files, tests) or writes to `path` (throws on I/O errors).
  std::string to_bytes() const;
  void write(const std::string& path) const;
  // A writer holding every key and tensor of `f` (for read -> write -> read round trips).
  static Writer copy_of(const File& f);

  // What write() would put before the tensor data, and where each tensor's bytes would go: for a
  // writer that produces the bytes later (StreamWriter). Tensor data pointers are not read.
  struct Layout {
    std::string header;             // magic to the data section (metadata, table, padding)
    std::vector<uint64_t> offsets;  // each tensor's offset in the data section
    uint64_t data_bytes = 0;        // the data section's size, padding included
  };
  Layout layout() const;

 private:
  std::vector<std::pair<std::string, Value>> kv_;
  struct Pending {
    std::string name;
    std::vector<int64_t> ne;
    TensorType type;
    const void* data;
    uint64_t n_bytes;
  };
  std::vector<Pending> tensors_;
  uint32_t alignment() const;
  template <typename Sink>
  void emit(Sink& sink, bool with_data) const;
};

}  // namespace ragform::gguf

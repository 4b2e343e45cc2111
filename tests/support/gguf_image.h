// GGUF images built by hand in memory, for the tests of the GGUF reader and what reads it (model
// card, tokenizer). GgufBytes writes the little-endian layout of engine/gguf/gguf.h field by
// field, so a test can write exactly the malformed file it means; gguf::Writer is the way to a
// well-formed one. parse_gguf reads either back.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf.h"

namespace ragform::testing {

struct GgufBytes {
  std::string b;

  // "GGUF", the version, the tensor count and the metadata count: the start of every image.
  static GgufBytes header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    GgufBytes g;
    g.b = "GGUF";
    g.pod<uint32_t>(version).pod<uint64_t>(n_tensors).pod<uint64_t>(n_kv);
    return g;
  }
  template <typename T>
  GgufBytes& pod(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  // A GGUF string: u64 length, then the bytes.
  GgufBytes& str(const std::string& s) {
    pod<uint64_t>(s.size());
    b += s;
    return *this;
  }
  // The start of a metadata entry: its key and value type id (the value follows).
  GgufBytes& key(const std::string& k, uint32_t value_type) { return str(k).pod(value_type); }
  // A tensor-info entry: name, dimension count and dimensions, ggml type id, data offset.
  GgufBytes& tensor_info(const std::string& name, const std::vector<uint64_t>& dims, uint32_t type,
                         uint64_t offset) {
    str(name).pod<uint32_t>(uint32_t(dims.size()));
    for (uint64_t d : dims) pod(d);
    return pod(type).pod(offset);
  }
};

// Parses an image held in memory as the file `name` (errors name it). The File views into
// `bytes`, which must outlive it.
inline std::unique_ptr<gguf::File> parse_gguf(const std::string& bytes,
                                              const std::string& name = "t.gguf") {
  return gguf::File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
}

}  // namespace ragform::testing

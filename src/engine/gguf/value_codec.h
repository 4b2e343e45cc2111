// The byte encoding of GGUF metadata values, shared by the file's parser and writer (gguf.cpp)
// and by the values' own accessors (value.cpp): a bounds-checked cursor, the element sizes, the
// validation of a value's bytes without keeping them, the reading of one value, and the writing
// of one value to a byte sink. Internal to engine/gguf/: include gguf.h or value.h instead.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/gguf/value.h"

namespace ragform::gguf {

inline constexpr int kMaxArrayDepth = 8;

// A cursor over the file image; every read checks the bytes that remain first.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n, const std::string& name) : p_(p), n_(n), name_(name) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return n_ - pos_; }

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw Error("gguf", name_ + ": " + field + ": " + why);
  }
  void need(size_t bytes, const std::string& field) const {
    if (bytes > remaining())
      fail(field, "needs " + std::to_string(bytes) + " bytes at offset " + std::to_string(pos_) +
                      " but only " + std::to_string(remaining()) + " remain (file size " +
                      std::to_string(n_) + ")");
  }
  template <typename T>
  T read(const std::string& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(const std::string& field) {
    uint64_t len = read<uint64_t>(field + " (string length)");
    need(len, field);
    std::string s(reinterpret_cast<const char*>(p_ + pos_), size_t(len));
    pos_ += size_t(len);
    return s;
  }
  void seek(size_t pos) { pos_ = pos; }
  const uint8_t* here() const { return p_ + pos_; }
  void skip(size_t bytes, const std::string& field) {
    need(bytes, field);
    pos_ += bytes;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& name_;
};

// Smallest number of bytes one element of `t` can occupy (to bound array counts before allocating).
size_t min_elem_bytes(ValueType t);
bool valid_value_type(uint32_t t);
// Bytes of one element of `t` when all its elements have one size; 0 for strings and arrays.
size_t fixed_size(ValueType t);

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// An array's element type and count, the count checked against the bytes that remain (before
// anything is allocated for it).
std::pair<ValueType, uint64_t> read_array_head(Cursor& c, const std::string& field, int depth);
// Validates `count` elements of `elem` (one value of `type`) at c and moves past them, keeping
// nothing.
void skip_elements(Cursor& c, ValueType elem, uint64_t count, const std::string& field, int depth);
void skip_value(Cursor& c, ValueType type, const std::string& field, int depth);

// Builds Arrays: from a file's bytes (validated) or from Values (for the writer).
struct ArrayCodec {
  // The `count` elements of `elem` at c, after their head (read_array_head).
  static Array read(Cursor& c, ValueType elem, uint64_t count, const std::string& field,
                    int depth) {
    Array a;
    a.elem_type = elem;
    a.count_ = count;
    const uint8_t* start = c.here();
    const size_t from = c.pos();
    if (fixed_size(elem) != 0) {
      skip_elements(c, elem, count, field, depth);
    } else {
      a.offsets_.reserve(size_t(count));  // count <= remaining / 8: at most the bytes left
      for (uint64_t i = 0; i < count; ++i) {
        a.offsets_.push_back(c.pos() - from);
        skip_value(c, elem, field, depth + 1);
      }
    }
    a.data_.assign(reinterpret_cast<const char*>(start), c.pos() - from);
    return a;
  }

  static Array from_values(ValueType elem, const std::vector<Value>& items);
  static Array from_strings(const std::vector<std::string>& items) {
    Array a;
    a.elem_type = ValueType::STRING;
    a.count_ = items.size();
    size_t total = 0;
    for (const auto& s : items) total += 8 + s.size();
    a.data_.reserve(total);
    a.offsets_.reserve(items.size());
    for (const auto& s : items) {
      a.offsets_.push_back(a.data_.size());
      const uint64_t len = s.size();
      a.data_.append(reinterpret_cast<const char*>(&len), sizeof len);
      a.data_ += s;
    }
    return a;
  }

  static const char* element(const Array& a, size_t i) {
    if (i >= a.count_)
      throw Error("gguf", "array element " + std::to_string(i) + " of " + std::to_string(a.count_) +
                              " is out of range");
    const size_t w = fixed_size(a.elem_type);
    return a.data_.data() + (w ? i * w : size_t(a.offsets_[i]));
  }
  static size_t element_end(const Array& a, size_t i) {
    return i + 1 < a.offsets_.size() ? size_t(a.offsets_[i + 1]) : a.data_.size();
  }
};

// One value of `type` at c.
Value read_value(Cursor& c, ValueType type, const std::string& field, int depth);

// The writer's byte sinks and encoders.
struct StringSink {
  std::string out;
  void put(const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }
  uint64_t size() const { return out.size(); }
};

template <typename Sink, typename T>
void put_pod(Sink& s, T v) {
  s.put(&v, sizeof v);
}
template <typename Sink>
void put_str(Sink& s, const std::string& str) {
  put_pod<Sink, uint64_t>(s, str.size());
  s.put(str.data(), str.size());
}
template <typename Sink>
void put_value(Sink& s, const Value& v) {
  switch (v.type) {
    case ValueType::U8:
      put_pod<Sink, uint8_t>(s, uint8_t(v.as_int()));
      break;
    case ValueType::I8:
      put_pod<Sink, int8_t>(s, int8_t(v.as_int()));
      break;
    case ValueType::U16:
      put_pod<Sink, uint16_t>(s, uint16_t(v.as_int()));
      break;
    case ValueType::I16:
      put_pod<Sink, int16_t>(s, int16_t(v.as_int()));
      break;
    case ValueType::U32:
      put_pod<Sink, uint32_t>(s, uint32_t(v.as_int()));
      break;
    case ValueType::I32:
      put_pod<Sink, int32_t>(s, int32_t(v.as_int()));
      break;
    case ValueType::U64:
      put_pod<Sink, uint64_t>(s, std::get<uint64_t>(v.v));
      break;
    case ValueType::I64:
      put_pod<Sink, int64_t>(s, v.as_int());
      break;
    case ValueType::F32:
      put_pod<Sink, float>(s, float(v.as_float()));
      break;
    case ValueType::F64:
      put_pod<Sink, double>(s, v.as_float());
      break;
    case ValueType::BOOL:
      put_pod<Sink, uint8_t>(s, v.as_bool() ? 1 : 0);
      break;
    case ValueType::STRING:
      put_str(s, v.as_string());
      break;
    case ValueType::ARRAY: {
      const Array& a = v.as_array();
      put_pod<Sink, uint32_t>(s, uint32_t(a.elem_type));
      put_pod<Sink, uint64_t>(s, a.size());
      const std::string_view b = a.bytes();
      s.put(b.data(), b.size());
      break;
    }
  }
}

}  // namespace ragform::gguf

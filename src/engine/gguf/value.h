// GGUF metadata values: the value types of the format (gguf.h has the byte layout), one value
// (Value) and an array of values held as its bytes (Array). Their byte encoding, shared with the
// file's parser and writer, is value_codec.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ragform::gguf {

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* value_type_name(ValueType t);

struct Value;
// A metadata array, held as its elements' bytes in the file's encoding (numbers little-endian,
// strings as u64 length + bytes, nested arrays as element type + count + elements) and, for
// strings and nested arrays, each element's start in those bytes: its memory is about its size in
// the file (a u8 array of 10^7 elements takes 10 MB, not one Value per element). Elements are
// decoded when read; a parsed array was validated whole when the file was parsed.
class Array {
 public:
  ValueType elem_type = ValueType::U8;

  size_t size() const { return size_t(count_); }
  bool empty() const { return count_ == 0; }
  // Element i (i < size()) as a Value: a copy (strings copied, nested arrays decoded).
  Value at(size_t i) const;
  // Element i decoded directly, without a Value; a type that does not fit throws as the
  // Value conversions do (int_at: integers and bools; float_at: floats and integers).
  int64_t int_at(size_t i) const;
  double float_at(size_t i) const;
  bool bool_at(size_t i) const;
  std::string_view string_at(size_t i) const;  // views into this Array
  Array array_at(size_t i) const;
  // The elements' bytes as written to a file (after the element type and the count).
  std::string_view bytes() const { return data_; }

 private:
  friend struct ArrayCodec;
  uint64_t count_ = 0;
  std::string data_;               // the elements' bytes
  std::vector<uint64_t> offsets_;  // each element's start in data_ (strings and arrays only)
};

// One metadata value. Scalars keep their exact GGUF type so a written file is byte-identical.
struct Value {
  ValueType type = ValueType::U8;
  std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<Array>> v;

  static Value u8(uint8_t x) { return {ValueType::U8, uint64_t(x)}; }
  static Value u32(uint32_t x) { return {ValueType::U32, uint64_t(x)}; }
  static Value i32(int32_t x) { return {ValueType::I32, int64_t(x)}; }
  static Value u64(uint64_t x) { return {ValueType::U64, x}; }
  static Value f32(float x) { return {ValueType::F32, double(x)}; }
  static Value boolean(bool x) { return {ValueType::BOOL, x}; }
  static Value str(std::string s) { return {ValueType::STRING, std::move(s)}; }
  static Value array(ValueType elem, std::vector<Value> items);
  static Value str_array(const std::vector<std::string>& items);

  bool is_integer() const;
  bool is_float() const { return type == ValueType::F32 || type == ValueType::F64; }
  // Conversions throw ragform::Error when the type does not fit.
  int64_t as_int() const;
  double as_float() const;  // integers convert too
  bool as_bool() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  std::string to_display(size_t max_items = 8) const;  // for `ragform info`
};

}  // namespace ragform::gguf

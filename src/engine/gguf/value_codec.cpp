#include "engine/gguf/value_codec.h"

namespace ragform::gguf {

namespace {
void check_bools(Cursor& c, size_t n, const std::string& field) {
  const uint8_t* p = c.here();
  for (size_t i = 0; i < n; ++i)
    if (p[i] > 1) c.fail(field, "bool value " + std::to_string(p[i]) + " is neither 0 nor 1");
}

}  // namespace

// Smallest number of bytes one element of `t` can occupy (to bound array counts before allocating).
size_t min_elem_bytes(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
    case ValueType::STRING:
      return 8;
    case ValueType::ARRAY:
      return 12;
  }
  return 1;
}

bool valid_value_type(uint32_t t) { return t <= 12; }

// Bytes of one element of `t` when all its elements have one size; 0 for strings and arrays.
size_t fixed_size(ValueType t) {
  return t == ValueType::STRING || t == ValueType::ARRAY ? 0 : min_elem_bytes(t);
}

// An array's element type and count, the count checked against the bytes that remain (before
// anything is allocated for it).
std::pair<ValueType, uint64_t> read_array_head(Cursor& c, const std::string& field, int depth) {
  if (depth >= kMaxArrayDepth)
    c.fail(field, "arrays nested deeper than " + std::to_string(kMaxArrayDepth));
  uint32_t et = c.read<uint32_t>(field + " (array element type)");
  if (!valid_value_type(et)) c.fail(field, "unknown array element type " + std::to_string(et));
  uint64_t count = c.read<uint64_t>(field + " (array length)");
  ValueType elem = ValueType(et);
  if (count > c.remaining() / min_elem_bytes(elem))
    c.fail(field, "array claims " + std::to_string(count) + " elements but only " +
                      std::to_string(c.remaining()) + " bytes remain");
  return {elem, count};
}

void skip_elements(Cursor& c, ValueType elem, uint64_t count, const std::string& field, int depth) {
  if (size_t w = fixed_size(elem)) {
    c.need(size_t(count) * w, field);  // count <= remaining / w: no overflow
    if (elem == ValueType::BOOL) check_bools(c, size_t(count), field);
    c.skip(size_t(count) * w, field);
    return;
  }
  for (uint64_t i = 0; i < count; ++i) skip_value(c, elem, field, depth + 1);
}

void skip_value(Cursor& c, ValueType type, const std::string& field, int depth) {
  switch (type) {
    case ValueType::STRING: {
      uint64_t len = c.read<uint64_t>(field + " (string length)");
      c.skip(size_t(len), field);
      return;
    }
    case ValueType::ARRAY: {
      auto [elem, count] = read_array_head(c, field, depth);
      skip_elements(c, elem, count, field, depth);
      return;
    }
    default:
      skip_elements(c, type, 1, field, depth - 1);
  }
}

Array ArrayCodec::from_values(ValueType elem, const std::vector<Value>& items) {
  Array a;
  a.elem_type = elem;
  a.count_ = items.size();
  StringSink s;
  const bool variable = fixed_size(elem) == 0;
  if (variable) a.offsets_.reserve(items.size());
  for (const Value& v : items) {
    if (v.type != elem)
      throw Error("gguf", std::string("an array of ") + value_type_name(elem) + " holds a " +
                              value_type_name(v.type) + " element");
    if (variable) a.offsets_.push_back(s.out.size());
    put_value(s, v);
  }
  a.data_ = std::move(s.out);
  return a;
}

Value read_value(Cursor& c, ValueType type, const std::string& field, int depth) {
  switch (type) {
    case ValueType::U8:
      return {type, uint64_t(c.read<uint8_t>(field))};
    case ValueType::I8:
      return {type, int64_t(c.read<int8_t>(field))};
    case ValueType::U16:
      return {type, uint64_t(c.read<uint16_t>(field))};
    case ValueType::I16:
      return {type, int64_t(c.read<int16_t>(field))};
    case ValueType::U32:
      return {type, uint64_t(c.read<uint32_t>(field))};
    case ValueType::I32:
      return {type, int64_t(c.read<int32_t>(field))};
    case ValueType::U64:
      return {type, c.read<uint64_t>(field)};
    case ValueType::I64:
      return {type, c.read<int64_t>(field)};
    case ValueType::F32:
      return {type, double(c.read<float>(field))};
    case ValueType::F64:
      return {type, c.read<double>(field)};
    case ValueType::BOOL: {
      uint8_t b = c.read<uint8_t>(field);
      if (b > 1) c.fail(field, "bool value " + std::to_string(b) + " is neither 0 nor 1");
      return {type, b != 0};
    }
    case ValueType::STRING:
      return {type, c.read_string(field)};
    case ValueType::ARRAY: {
      auto [elem, count] = read_array_head(c, field, depth);
      return {type, std::make_shared<Array>(ArrayCodec::read(c, elem, count, field, depth))};
    }
  }
  c.fail(field, "unknown value type " + std::to_string(uint32_t(type)));
}

}  // namespace ragform::gguf

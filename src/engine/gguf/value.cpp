#include "engine/gguf/value.h"

#include <limits>
#include <sstream>

#include "base/error.h"
#include "engine/gguf/value_codec.h"

namespace ragform::gguf {

Value Array::at(size_t i) const {
  const char* p = ArrayCodec::element(*this, i);
  switch (elem_type) {
    case ValueType::U8:
      return {elem_type, uint64_t(load<uint8_t>(p))};
    case ValueType::I8:
      return {elem_type, int64_t(load<int8_t>(p))};
    case ValueType::U16:
      return {elem_type, uint64_t(load<uint16_t>(p))};
    case ValueType::I16:
      return {elem_type, int64_t(load<int16_t>(p))};
    case ValueType::U32:
      return {elem_type, uint64_t(load<uint32_t>(p))};
    case ValueType::I32:
      return {elem_type, int64_t(load<int32_t>(p))};
    case ValueType::U64:
      return {elem_type, load<uint64_t>(p)};
    case ValueType::I64:
      return {elem_type, load<int64_t>(p)};
    case ValueType::F32:
      return {elem_type, double(load<float>(p))};
    case ValueType::F64:
      return {elem_type, load<double>(p)};
    case ValueType::BOOL:
      return {elem_type, load<uint8_t>(p) != 0};
    case ValueType::STRING:
      return Value::str(std::string(string_at(i)));
    case ValueType::ARRAY:
      return {elem_type, std::make_shared<Array>(array_at(i))};
  }
  throw Error("gguf", "unknown array element type");
}

int64_t Array::int_at(size_t i) const {
  const char* p = ArrayCodec::element(*this, i);
  switch (elem_type) {
    case ValueType::U8:
      return load<uint8_t>(p);
    case ValueType::I8:
      return load<int8_t>(p);
    case ValueType::U16:
      return load<uint16_t>(p);
    case ValueType::I16:
      return load<int16_t>(p);
    case ValueType::U32:
      return load<uint32_t>(p);
    case ValueType::I32:
      return load<int32_t>(p);
    case ValueType::I64:
      return load<int64_t>(p);
    case ValueType::U64: {
      const uint64_t u = load<uint64_t>(p);
      if (u > uint64_t(std::numeric_limits<int64_t>::max()))
        throw Error("gguf", "integer value too large");
      return int64_t(u);
    }
    case ValueType::BOOL:
      return load<uint8_t>(p) != 0 ? 1 : 0;
    default:
      throw Error("gguf", std::string("expected an integer, found ") + value_type_name(elem_type));
  }
}

double Array::float_at(size_t i) const {
  switch (elem_type) {
    case ValueType::F32:
      return double(load<float>(ArrayCodec::element(*this, i)));
    case ValueType::F64:
      return load<double>(ArrayCodec::element(*this, i));
    case ValueType::BOOL:
    case ValueType::STRING:
    case ValueType::ARRAY:
      throw Error("gguf", std::string("expected a number, found ") + value_type_name(elem_type));
    default:
      return double(int_at(i));
  }
}

bool Array::bool_at(size_t i) const {
  if (elem_type == ValueType::BOOL) return load<uint8_t>(ArrayCodec::element(*this, i)) != 0;
  if (elem_type == ValueType::STRING || elem_type == ValueType::ARRAY ||
      elem_type == ValueType::F32 || elem_type == ValueType::F64)
    throw Error("gguf", std::string("expected a bool, found ") + value_type_name(elem_type));
  return int_at(i) != 0;
}

std::string_view Array::string_at(size_t i) const {
  if (elem_type != ValueType::STRING)
    throw Error("gguf", std::string("expected a string, found ") + value_type_name(elem_type));
  const char* p = ArrayCodec::element(*this, i);
  return {p + 8, size_t(load<uint64_t>(p))};
}

Array Array::array_at(size_t i) const {
  if (elem_type != ValueType::ARRAY)
    throw Error("gguf", std::string("expected an array, found ") + value_type_name(elem_type));
  const char* p = ArrayCodec::element(*this, i);
  const std::string name = "array element";
  Cursor c(reinterpret_cast<const uint8_t*>(p), ArrayCodec::element_end(*this, i) - offsets_[i],
           name);
  auto [elem, count] = read_array_head(c, name, 0);
  return ArrayCodec::read(c, elem, count, name, 0);
}

const char* value_type_name(ValueType t) {
  static const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) <= 12 ? names[uint32_t(t)] : "?";
}

Value Value::array(ValueType elem, std::vector<Value> items) {
  return {ValueType::ARRAY, std::make_shared<Array>(ArrayCodec::from_values(elem, items))};
}

Value Value::str_array(const std::vector<std::string>& items) {
  return {ValueType::ARRAY, std::make_shared<Array>(ArrayCodec::from_strings(items))};
}

bool Value::is_integer() const {
  switch (type) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::U16:
    case ValueType::I16:
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::U64:
    case ValueType::I64:
      return true;
    default:
      return false;
  }
}

int64_t Value::as_int() const {
  if (auto* u = std::get_if<uint64_t>(&v)) {
    if (*u > uint64_t(std::numeric_limits<int64_t>::max()))
      throw Error("gguf", "integer value too large");
    return int64_t(*u);
  }
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  throw Error("gguf", std::string("expected an integer, found ") + value_type_name(type));
}

double Value::as_float() const {
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (is_integer()) return double(as_int());
  throw Error("gguf", std::string("expected a number, found ") + value_type_name(type));
}

bool Value::as_bool() const {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (is_integer()) return as_int() != 0;
  throw Error("gguf", std::string("expected a bool, found ") + value_type_name(type));
}

const std::string& Value::as_string() const {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  throw Error("gguf", std::string("expected a string, found ") + value_type_name(type));
}

const Array& Value::as_array() const {
  if (auto* a = std::get_if<std::shared_ptr<Array>>(&v)) return **a;
  throw Error("gguf", std::string("expected an array, found ") + value_type_name(type));
}

std::string Value::to_display(size_t max_items) const {
  std::ostringstream s;
  switch (type) {
    case ValueType::STRING: {
      const std::string& str = as_string();
      s << '"' << (str.size() > 80 ? str.substr(0, 77) + "..." : str) << '"';
      break;
    }
    case ValueType::ARRAY: {
      const Array& a = as_array();
      s << "[" << value_type_name(a.elem_type) << " x " << a.size() << "]";
      if (a.elem_type != ValueType::ARRAY) {
        s << " ";
        for (size_t i = 0; i < a.size() && i < max_items; ++i)
          s << (i ? ", " : "") << a.at(i).to_display(0);
        if (a.size() > max_items) s << ", ...";
      }
      break;
    }
    case ValueType::BOOL:
      s << (as_bool() ? "true" : "false");
      break;
    case ValueType::F32:
    case ValueType::F64:
      s << as_float();
      break;
    default:  // u64 values above INT64_MAX are valid metadata: print them, do not throw
      if (auto* u = std::get_if<uint64_t>(&v))
        s << *u;
      else
        s << as_int();
      break;
  }
  return s.str();
}

}  // namespace ragform::gguf

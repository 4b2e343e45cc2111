#include "engine/gguf/gguf.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "base/error.h"

namespace ragform::gguf {

namespace {
constexpr uint32_t kDefaultAlignment = 32;
constexpr int kMaxArrayDepth = 8;

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

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void check_bools(Cursor& c, size_t n, const std::string& field) {
  const uint8_t* p = c.here();
  for (size_t i = 0; i < n; ++i)
    if (p[i] > 1) c.fail(field, "bool value " + std::to_string(p[i]) + " is neither 0 nor 1");
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

// Validates one value of `type` at c and moves past it, keeping nothing.
void skip_value(Cursor& c, ValueType type, const std::string& field, int depth);

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
}  // namespace

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

namespace {
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
}  // namespace

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

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (auto d : ne) n *= d;
  return n;
}

int64_t TensorInfo::rows() const {
  int64_t n = 1;
  for (size_t i = 1; i < ne.size(); ++i) n *= ne[i];
  return n;
}

std::unique_ptr<File> File::open(const std::string& path, MappedFile::Load how) {
  std::unique_ptr<File> f(new File());
  f->map_ = std::make_unique<MappedFile>(path, how);
  f->path_ = path;
  f->parse_image(f->map_->data(), f->map_->size());
  return f;
}

std::unique_ptr<File> File::open(const std::string& path, MappedFile::Load how,
                                 const std::function<bool(const File&)>& keep_mapped) {
  if (how != MappedFile::Load::memory_if_room) return open(path, how);
  std::unique_ptr<File> f = open(path, MappedFile::Load::map);
  if (keep_mapped(*f)) return f;
  auto image = std::make_unique<MappedFile>(path, how);
  if (!image->in_memory()) return f;  // no room, or too small: the mapping it has is the answer
  if (image->size() != f->size_)
    throw Error("gguf", path + ": the file changed size while it was being opened");
  for (TensorInfo& t : f->tensors_) t.data = image->data() + (t.data - f->map_->data());
  f->map_ = std::move(image);
  return f;
}

std::unique_ptr<File> File::parse(const uint8_t* bytes, size_t size, const std::string& name) {
  std::unique_ptr<File> f(new File());
  f->path_ = name;
  f->parse_image(bytes, size);
  return f;
}

void File::parse_image(const uint8_t* p, size_t n) {
  size_ = n;
  Cursor c(p, n, path_);
  c.need(4, "magic");
  if (std::memcmp(p, "GGUF", 4) != 0)
    c.fail("magic", "not a GGUF file (first bytes are not 'GGUF')");
  c.seek(4);
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3)
    c.fail("version",
           "unsupported GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
  uint64_t n_tensors = c.read<uint64_t>("n_tensors");
  uint64_t n_kv = c.read<uint64_t>("n_kv");
  // Each KV pair needs at least 8 (key length) + 4 (type) + 1 bytes; each tensor info at least
  // 8+4+8+4+8.
  if (n_kv > c.remaining() / 13)
    c.fail("n_kv", "claims " + std::to_string(n_kv) + " key/value pairs but only " +
                       std::to_string(c.remaining()) + " bytes remain");
  if (n_tensors > c.remaining() / 32)
    c.fail("n_tensors", "claims " + std::to_string(n_tensors) + " tensors but only " +
                            std::to_string(c.remaining()) + " bytes remain");

  kv_.reserve(size_t(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string idx = "metadata #" + std::to_string(i);
    std::string key = c.read_string(idx + " key");
    if (key.empty()) c.fail(idx, "empty key");
    uint32_t t = c.read<uint32_t>("'" + key + "' value type");
    if (!valid_value_type(t)) c.fail("'" + key + "'", "unknown value type " + std::to_string(t));
    Value v = read_value(c, ValueType(t), "'" + key + "'", 0);
    if (kv_index_.count(key)) c.fail("'" + key + "'", "duplicate key");
    kv_index_[key] = kv_.size();
    kv_.emplace_back(std::move(key), std::move(v));
  }

  if (const Value* a = find("general.alignment")) {
    if (a->type != ValueType::U32)
      c.fail("'general.alignment'", std::string("must be u32, found ") + value_type_name(a->type));
    int64_t al = a->as_int();
    if (al == 0 || (al & (al - 1)) != 0)
      c.fail("'general.alignment'", "must be a power of two, found " + std::to_string(al));
    alignment_ = uint32_t(al);
  } else {
    alignment_ = kDefaultAlignment;
  }

  tensors_.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    std::string idx = "tensor #" + std::to_string(i);
    TensorInfo ti;
    ti.name = c.read_string(idx + " name");
    std::string field = "tensor '" + ti.name + "'";
    uint32_t n_dims = c.read<uint32_t>(field + " n_dims");
    if (n_dims == 0 || n_dims > 4)
      c.fail(field, "n_dims " + std::to_string(n_dims) + " is not in 1..4");
    int64_t n_el = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = c.read<uint64_t>(field + " ne[" + std::to_string(d) + "]");
      if (ne == 0 || ne > (uint64_t(1) << 40))
        c.fail(field,
               "dimension " + std::to_string(d) + " = " + std::to_string(ne) + " is out of range");
      if (n_el > std::numeric_limits<int64_t>::max() / int64_t(ne))
        c.fail(field, "element count overflows");
      n_el *= int64_t(ne);
      ti.ne.push_back(int64_t(ne));
    }
    uint32_t tid = c.read<uint32_t>(field + " type");
    auto info = type_info(tid);
    if (!info) c.fail(field, "unsupported tensor type id " + std::to_string(tid));
    ti.type = info->type;
    if (ti.ne[0] % info->block_size != 0)
      c.fail(field, "row length " + std::to_string(ti.ne[0]) + " is not a multiple of the " +
                        info->name + " block size " + std::to_string(info->block_size));
    const uint64_t n_blocks = uint64_t(n_el / info->block_size);
    if (n_blocks > std::numeric_limits<uint64_t>::max() / uint64_t(info->type_size))
      c.fail(field,
             "byte size of " + std::to_string(n_el) + " " + info->name + " elements overflows");
    ti.n_bytes = n_blocks * uint64_t(info->type_size);
    ti.offset = c.read<uint64_t>(field + " offset");
    if (ti.offset % alignment_ != 0)
      c.fail(field, "offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
                        std::to_string(alignment_));
    if (tensor_index_.count(ti.name)) c.fail(field, "duplicate tensor name");
    tensor_index_[ti.name] = tensors_.size();
    tensors_.push_back(std::move(ti));
  }

  uint64_t data_off = (uint64_t(c.pos()) + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors > 0 && data_off > n)
    c.fail("data section",
           "starts at " + std::to_string(data_off) + " beyond the file size " + std::to_string(n));
  data_offset_ = data_off;
  for (auto& ti : tensors_) {
    uint64_t avail = n >= data_off ? n - data_off : 0;
    if (ti.offset > avail || ti.n_bytes > avail - ti.offset)
      c.fail("tensor '" + ti.name + "'", "data at offset " + std::to_string(data_off + ti.offset) +
                                             " + " + std::to_string(ti.n_bytes) +
                                             " bytes exceeds the file size " + std::to_string(n));
    ti.data = p + data_off + ti.offset;
  }
}

const Value* File::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const Value& File::get(std::string_view key) const {
  const Value* v = find(key);
  if (!v) throw Error("gguf", path_ + ": missing metadata key '" + std::string(key) + "'");
  return *v;
}

namespace {
template <typename F>
auto typed(const std::string& path, std::string_view key, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error("gguf", path + ": metadata key '" + std::string(key) + "': " + e.what());
  }
}
}  // namespace

int64_t File::get_int(std::string_view key, int64_t def) const {
  const Value* v = find(key);
  return v ? typed(path_, key, [&] { return v->as_int(); }) : def;
}
double File::get_float(std::string_view key, double def) const {
  const Value* v = find(key);
  return v ? typed(path_, key, [&] { return v->as_float(); }) : def;
}
std::string File::get_string(std::string_view key, const std::string& def) const {
  const Value* v = find(key);
  return v ? typed(path_, key, [&] { return v->as_string(); }) : def;
}
bool File::get_bool(std::string_view key, bool def) const {
  const Value* v = find(key);
  return v ? typed(path_, key, [&] { return v->as_bool(); }) : def;
}

std::vector<std::string_view> File::get_strings(std::string_view key) const {
  const Array& a = typed(path_, key, [&]() -> const Array& { return get(key).as_array(); });
  if (a.elem_type != ValueType::STRING)
    throw Error("gguf",
                path_ + ": metadata key '" + std::string(key) + "': expected an array of strings");
  std::vector<std::string_view> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(a.string_at(i));
  return out;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw Error("gguf", path_ + ": missing tensor '" + std::string(name) + "'");
  return *t;
}

// ---------------------------------------------------------------------------------------------
// Writer

void Writer::set(const std::string& key, Value v) {
  for (auto& kv : kv_)
    if (kv.first == key) {
      kv.second = std::move(v);
      return;
    }
  kv_.emplace_back(key, std::move(v));
}

void Writer::add_tensor(const std::string& name, const std::vector<int64_t>& ne, TensorType type,
                        const void* data, uint64_t n_bytes) {
  tensors_.push_back({name, ne, type, data, n_bytes});
}

uint32_t Writer::alignment() const {
  for (auto& kv : kv_)
    if (kv.first == "general.alignment") return uint32_t(kv.second.as_int());
  return kDefaultAlignment;
}

namespace {
struct FileSink {
  std::ofstream f;
  uint64_t n = 0;
  std::string path;
  void put(const void* p, size_t len) {
    f.write(static_cast<const char*>(p), std::streamsize(len));
    if (!f) throw Error("gguf", path + ": write failed");
    n += len;
  }
  uint64_t size() const { return n; }
};

template <typename Sink>
void pad_to(Sink& s, uint32_t align) {
  static const char zeros[64] = {};
  uint64_t pad = (align - s.size() % align) % align;
  while (pad > 0) {
    uint64_t k = pad < sizeof zeros ? pad : sizeof zeros;
    s.put(zeros, size_t(k));
    pad -= k;
  }
}
}  // namespace

template <typename Sink>
void Writer::emit(Sink& s, bool with_data) const {
  uint32_t align = alignment();
  std::set<std::string> names;
  for (auto& t : tensors_) {
    if (!names.insert(t.name).second)
      throw Error("gguf writer", "duplicate tensor '" + t.name + "'");
    const TypeInfo& ti = type_info(t.type);
    int64_t n = 1;
    for (auto d : t.ne) n *= d;
    if (t.ne.empty() || t.ne[0] % ti.block_size != 0 ||
        uint64_t(n / ti.block_size) * ti.type_size != t.n_bytes)
      throw Error("gguf writer", "tensor '" + t.name + "': byte size " + std::to_string(t.n_bytes) +
                                     " does not match its shape and type");
  }
  s.put("GGUF", 4);
  put_pod<Sink, uint32_t>(s, 3);
  put_pod<Sink, uint64_t>(s, tensors_.size());
  put_pod<Sink, uint64_t>(s, kv_.size());
  for (auto& [k, v] : kv_) {
    put_str(s, k);
    put_pod<Sink, uint32_t>(s, uint32_t(v.type));
    put_value(s, v);
  }
  uint64_t off = 0;
  for (auto& t : tensors_) {
    put_str(s, t.name);
    put_pod<Sink, uint32_t>(s, uint32_t(t.ne.size()));
    for (auto d : t.ne) put_pod<Sink, uint64_t>(s, uint64_t(d));
    put_pod<Sink, uint32_t>(s, uint32_t(t.type));
    put_pod<Sink, uint64_t>(s, off);
    off += (t.n_bytes + align - 1) / align * align;
  }
  pad_to(s, align);
  if (!with_data) return;
  for (auto& t : tensors_) {
    s.put(t.data, size_t(t.n_bytes));
    pad_to(s, align);
  }
}

std::string Writer::to_bytes() const {
  StringSink s;
  emit(s, true);
  return std::move(s.out);
}

Writer::Layout Writer::layout() const {
  StringSink s;
  emit(s, false);
  Layout l;
  l.header = std::move(s.out);
  const uint64_t align = alignment();
  for (auto& t : tensors_) {
    l.offsets.push_back(l.data_bytes);
    l.data_bytes += (t.n_bytes + align - 1) / align * align;
  }
  return l;
}

void Writer::write(const std::string& path) const {
  FileSink s;
  s.path = path;
  s.f.open(path, std::ios::binary | std::ios::trunc);
  if (!s.f) throw Error("gguf", path + ": cannot open for writing");
  emit(s, true);
  s.f.close();
  if (!s.f) throw Error("gguf", path + ": write failed");
}

Writer Writer::copy_of(const File& f) {
  Writer w;
  for (auto& [k, v] : f.metadata()) w.kv_.emplace_back(k, v);
  for (auto& t : f.tensors()) w.add_tensor(t.name, t.ne, t.type, t.data, t.n_bytes);
  return w;
}

}  // namespace ragform::gguf

#include "engine/gguf/gguf.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "base/error.h"
#include "engine/gguf/value_codec.h"

namespace ragform::gguf {

namespace {
constexpr uint32_t kDefaultAlignment = 32;
}  // namespace

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

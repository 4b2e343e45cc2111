// quantize_model (quantize_model.h): plan every tensor's type, lay OUT out, then convert and write
// tensor by tensor in batches of rows.
#include "engine/model/quantize_model.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "base/error.h"
#include "base/file_identity.h"
#include "base/thread_pool.h"
#include "engine/gguf/gguf.h"
#include "engine/gguf/stream_writer.h"
#include "engine/ops/ops.h"
#include "engine/ops/quantize_weights.h"

namespace ragform::model {
namespace {

namespace fs = std::filesystem;
using gguf::TensorType;

constexpr const char* kWhat = "quantize";
constexpr int64_t kBatchElements = 8 << 20;   // F32 elements converted per batch (32 MB)
constexpr uint32_t kQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION for these block layouts

// An error's reason without its "quantize: " prefix, to nest it in a message that has one.
std::string reason(const Error& e) {
  const std::string w = e.what(), prefix = std::string(kWhat) + ": ";
  return w.rfind(prefix, 0) == 0 ? w.substr(prefix.size()) : w;
}

void check_paths(const QuantizeOptions& o) {
  if (o.in.empty()) throw UsageError(kWhat, "no input file");
  std::error_code ec;
  if (!fs::exists(o.in, ec)) throw FileError(kWhat, o.in + ": no such file", ENOENT);
  if (fs::is_directory(o.in, ec)) throw FileError(kWhat, o.in + ": is a directory", EISDIR);
  // A FIFO, a socket or a device would be opened and read (a FIFO without a writer blocks the
  // open for ever): only a regular file (or a link to one) is a model.
  if (!fs::is_regular_file(o.in, ec))
    throw FileError(
        kWhat, o.in + ": not a regular file (a FIFO, socket or device): give a GGUF file", EINVAL);
  if (o.dry_run) return;
  if (o.out.empty()) throw UsageError(kWhat, "no output file");
  if (same_file(o.in, o.out))
    throw UsageError(kWhat, "the output " + o.out +
                                " is the input file: write to another path (the input is read "
                                "while the output is written)");
  if (fs::is_directory(o.out, ec)) throw UsageError(kWhat, o.out + ": is a directory");
}

// Drops the pages of IN's mapping under [p, p + n) from this process once they have been read:
// the file stays in the page cache, but the resident set holds one batch, not all of IN.
void release_pages(const uint8_t* p, size_t n) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t b = (uintptr_t(p) + page - 1) / page * page, e = (uintptr_t(p) + n) / page * page;
  if (e > b)
    madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);  // advice: failure is harmless
}

// Converts rows [r0, r0 + rows) of tensor `t` from its type to `to` into `out`.
void convert_rows(const gguf::TensorInfo& t, TensorType to, int64_t r0, int64_t rows, uint8_t* out,
                  ThreadPool& pool, std::vector<std::vector<float>>& scratch) {
  const int64_t n = t.ne[0];
  const size_t in_row = gguf::row_bytes(t.type, n), out_row = gguf::row_bytes(to, n);
  pool.parallel_for(size_t(rows), [&](size_t b, size_t e, int thread) {
    std::vector<float>& x = scratch[size_t(thread)];
    x.resize(size_t(n));
    for (size_t r = b; r < e; ++r) {
      const uint8_t* src = t.data + size_t(r0 + int64_t(r)) * in_row;
      uint8_t* dst = out + r * out_row;
      if (to == TensorType::F32) {
        // Dequantisation is exact into F32: no second rounding, no finiteness check.
        ops::dequantize_row(t.type, src, reinterpret_cast<float*>(dst), n);
        continue;
      }
      ops::dequantize_row(t.type, src, x.data(), n);
      try {
        ops::quantize_row(to, x.data(), dst, n);
      } catch (const Error& err) {
        throw Error(kWhat, "row " + std::to_string(r0 + int64_t(r)) + ": " + reason(err));
      }
    }
  });
}

}  // namespace

QuantizeSummary quantize_model(const QuantizeOptions& o) {
  const WeightScheme scheme = parse_scheme(o.type, kWhat);
  check_paths(o);
  std::unique_ptr<gguf::File> in;
  try {
    in = gguf::File::open(o.in);
  } catch (const Error& e) {
    // The reader names a tensor of a type it does not know; say which types there are.
    const std::string why = e.what();
    if (why.find("unsupported tensor type") == std::string::npos) throw;
    throw Error(kWhat, why +
                           " (quantize reads the engine's types: f32, f16, bf16, q4_0, q4_1, "
                           "q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K)");
  }
  const std::vector<TensorType> to = plan_types(in->tensors(), recipe_facts(*in), scheme, kWhat);

  QuantizeSummary sum;
  sum.scheme = scheme;
  sum.file_bytes_in = in->file_size();
  bool quantized = false;
  uint64_t total_elements = 0;
  std::vector<gguf::TensorSpec> specs;
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const gguf::TensorInfo& t = in->tensors()[i];
    TensorConversion c{t.name, t.ne,      t.type,
                       to[i],  t.n_bytes, gguf::row_bytes(to[i], t.ne[0]) * uint64_t(t.rows())};
    (c.copied() ? sum.n_copied : sum.n_converted)++;
    ++sum.type_counts[gguf::type_name(c.to)];
    quantized |= gguf::type_info(c.to).block_size > 1;
    total_elements += uint64_t(t.n_elements());
    specs.push_back({t.name, t.ne, c.to});
    sum.tensors.push_back(std::move(c));
  }

  // IN's keys in IN's order; Writer::set replaces a key in place, so only these two can change.
  gguf::Writer meta;
  for (const auto& [k, v] : in->metadata()) meta.set(k, v);
  meta.set("general.file_type", gguf::Value::u32(scheme.file_type));
  if (quantized) meta.set("general.quantization_version", gguf::Value::u32(kQuantizationVersion));
  if (o.dry_run) {
    sum.file_bytes_out = gguf::StreamWriter::size_of(std::move(meta), specs);
    return sum;
  }

  gguf::StreamWriter file(o.out, std::move(meta), specs, kWhat);
  sum.file_bytes_out = file.file_bytes();
  ThreadPool pool(o.threads);
  std::vector<std::vector<float>> scratch(size_t(pool.size()));
  std::vector<uint8_t> buf;
  uint64_t done = 0;
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const gguf::TensorInfo& t = in->tensors()[i];
    const TensorConversion& c = sum.tensors[i];
    const int64_t n = t.ne[0], rows = t.rows();
    const size_t in_row = gguf::row_bytes(c.from, n), out_row = gguf::row_bytes(c.to, n);
    const int64_t batch = std::max<int64_t>(1, kBatchElements / n);
    try {
      for (int64_t r0 = 0; r0 < rows; r0 += batch) {
        const int64_t nr = std::min(batch, rows - r0);
        if (c.copied()) {
          // Straight from IN's mapping: the bytes are the bytes.
          file.write(i, uint64_t(r0) * out_row, t.data + size_t(r0) * in_row, size_t(nr) * out_row);
        } else {
          buf.resize(size_t(nr) * out_row);
          convert_rows(t, c.to, r0, nr, buf.data(), pool, scratch);
          file.write(i, uint64_t(r0) * out_row, buf.data(), buf.size());
        }
        release_pages(t.data + size_t(r0) * in_row, size_t(nr) * in_row);
        done += uint64_t(nr * n);
        if (o.progress) o.progress(done, total_elements);
      }
    } catch (const Error& e) {
      throw Error(kWhat, o.in + ": tensor '" + t.name + "' (" + gguf::type_name(c.from) + " -> " +
                             gguf::type_name(c.to) + "): " + reason(e));
    }
  }
  file.commit();
  return sum;
}

}  // namespace ragform::model

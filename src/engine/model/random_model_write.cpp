// The streaming writer behind write_random_model (random_model.h): gguf::StreamWriter lays the
// file out (metadata, tensor table, alignment), then each tensor is generated, quantised and
// written in batches of rows. Peak memory is one batch (<= ~32 MB of F32 plus its quantised bytes)
// whatever the model size.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/gguf/gguf.h"
#include "engine/gguf/stream_writer.h"
#include "engine/model/arch.h"
#include "engine/model/random_model.h"
#include "engine/model/random_model_bert.h"
#include "engine/model/random_normal.h"
#include "engine/ops/quantize_weights.h"

namespace ragform::model {
namespace {

using gguf::TensorType;
using gguf::Value;
using gguf::ValueType;

constexpr int64_t kChunkRows = 64;           // rows per independently seeded generator
constexpr int64_t kBatchElements = 8 << 20;  // F32 elements generated per batch (32 MB)

using detail::Gaussian;
using detail::splitmix64_next;

// value = mean + sigma * N(0, 1) for every element of a tensor with this role.
void distribution(const TensorPlan& t, const ModelShape& s, float& mean, float& sigma) {
  mean = 0.0f;
  switch (t.role) {
    case TensorRole::Norm:
      mean = 1.0f;
      sigma = 0.1f;
      return;
    case TensorRole::Bias:
      sigma = 0.5f;
      return;
    case TensorRole::TokenEmbd:
      sigma = s.tied ? 2.4f / std::sqrt(float(s.n_embd)) : 1.0f;
      return;
    default:
      sigma = 1.0f / std::sqrt(float(t.ne[0]));
      return;  // N(0, 1/fan_in)
  }
}

void put_metadata(gguf::Writer& w, const std::string& arch, const ModelShape& s,
                  const WeightScheme& scheme, bool quantized) {
  const std::string a = arch + ".";
  w.set("general.architecture", Value::str(arch));
  w.set("general.name", Value::str("ragform random " + s.name));
  w.set("general.file_type", Value::u32(scheme.file_type));
  if (quantized) w.set("general.quantization_version", Value::u32(2));
  w.set(a + "context_length", Value::u32(uint32_t(s.n_ctx)));
  w.set(a + "embedding_length", Value::u32(uint32_t(s.n_embd)));
  w.set(a + "block_count", Value::u32(uint32_t(s.n_layer)));
  w.set(a + "feed_forward_length", Value::u32(uint32_t(s.n_ff)));
  w.set(a + "attention.head_count", Value::u32(uint32_t(s.n_head)));
  w.set(a + "attention.head_count_kv", Value::u32(uint32_t(s.n_head_kv)));
  w.set(a + "rope.freq_base", Value::f32(s.rope_base));
  w.set(a + "attention.layer_norm_rms_epsilon", Value::f32(s.rms_eps));
  if (arch == "llama" || arch == "phi3")
    w.set(a + "rope.dimension_count", Value::u32(uint32_t(s.head_size())));
  if (arch == "gemma3")
    w.set(a + "attention.sliding_window", Value::u32(uint32_t(s.n_swa > 0 ? s.n_swa : 512)));
  if (arch == "qwen3" || s.head_size() * s.n_head != s.n_embd) {
    w.set(a + "attention.key_length", Value::u32(uint32_t(s.head_size())));
    w.set(a + "attention.value_length", Value::u32(uint32_t(s.head_size())));
  }
}

using KeyValues = std::vector<std::pair<std::string, Value>>;

// Every tokenizer.* key of `path`; sets n_vocab to its vocabulary size.
KeyValues copy_vocab(const std::string& path, int& n_vocab) {
  auto f = gguf::File::open(path);
  if (!f->has("tokenizer.ggml.tokens"))
    throw Error("make-test-model", path + ": --vocab-from file has no tokenizer.ggml.tokens");
  KeyValues kv;
  for (const auto& [k, v] : f->metadata())
    if (k.rfind("tokenizer.", 0) == 0) kv.emplace_back(k, v);
  n_vocab = int(f->get_strings("tokenizer.ggml.tokens").size());
  return kv;
}

KeyValues synthetic_vocab_keys(int n) {
  KeyValues w;
  const SyntheticVocab v = synthetic_spm_vocab(n);
  std::vector<Value> scores, types;
  scores.reserve(v.scores.size());
  types.reserve(v.types.size());
  for (float x : v.scores) scores.push_back(Value::f32(x));
  for (int32_t x : v.types) types.push_back(Value::i32(x));
  w.emplace_back("tokenizer.ggml.model", Value::str("llama"));
  w.emplace_back("tokenizer.ggml.tokens", Value::str_array(v.tokens));
  w.emplace_back("tokenizer.ggml.scores", Value::array(ValueType::F32, std::move(scores)));
  w.emplace_back("tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(types)));
  w.emplace_back("tokenizer.ggml.bos_token_id", Value::u32(1));
  w.emplace_back("tokenizer.ggml.eos_token_id", Value::u32(2));
  w.emplace_back("tokenizer.ggml.unknown_token_id", Value::u32(0));
  w.emplace_back("tokenizer.ggml.add_bos_token", Value::boolean(true));
  w.emplace_back("tokenizer.ggml.add_eos_token", Value::boolean(false));
  return w;
}

// Generates, quantises and writes one tensor in batches of rows.
void write_tensor(const TensorPlan& t, const ModelShape& s, uint64_t seed, gguf::StreamWriter& file,
                  size_t index, ThreadPool& pool, std::vector<std::vector<float>>& scratch,
                  const std::function<void(uint64_t)>& done) {
  const int64_t n_in = t.ne[0];
  int64_t n_rows = 1;
  for (size_t i = 1; i < t.ne.size(); ++i) n_rows *= t.ne[i];
  const size_t row_bytes = gguf::row_bytes(t.type, n_in);
  float mean, sigma;
  distribution(t, s, mean, sigma);
  const uint64_t tensor_seed = seed ^ fnv1a64(t.name);
  const int64_t batch_rows =
      std::max<int64_t>(kChunkRows, kBatchElements / n_in / kChunkRows * kChunkRows);
  std::vector<uint8_t> out;
  for (int64_t r0 = 0; r0 < n_rows; r0 += batch_rows) {
    const int64_t rows = std::min(batch_rows, n_rows - r0);
    out.resize(size_t(rows) * row_bytes);
    const int64_t n_chunks = (rows + kChunkRows - 1) / kChunkRows;
    pool.parallel_for(size_t(n_chunks), [&](size_t c0, size_t c1, int thread) {
      std::vector<float>& buf = scratch[size_t(thread)];
      for (size_t c = c0; c < c1; ++c) {
        const int64_t first = int64_t(c) * kChunkRows;
        const int64_t nr = std::min(kChunkRows, rows - first);
        const int64_t chunk_index = (r0 + first) / kChunkRows;
        uint64_t st = tensor_seed + uint64_t(chunk_index) * 0xD1B54A32D192ED03ull;
        Gaussian g(splitmix64_next(st));
        buf.resize(size_t(nr * n_in));
        if (t.role == TensorRole::RopeFreqs)
          buf = llama3_rope_factors(int(2 * n_in), s.rope_base);
        else
          for (auto& v : buf) v = mean + sigma * g.next();
        ops::quantize_row(t.type, buf.data(), out.data() + size_t(first) * row_bytes, nr * n_in);
      }
    });
    file.write(index, uint64_t(r0) * row_bytes, out.data(), out.size());
    done(uint64_t(rows * n_in));
  }
}

}  // namespace

RandomModelSummary write_random_model(const RandomModelOptions& o) {
  if (o.out.empty()) throw UsageError("make-test-model", "no output file (-o FILE)");
  if (o.arch == "bert" || is_bert_shape(o.shape)) return write_random_bert_model(o);
  ModelShape s = find_shape(o.shape);
  const std::string arch = o.arch.empty() ? s.arch : o.arch;
  {
    const auto archs = random_model_archs();
    if (std::find(archs.begin(), archs.end(), arch) == archs.end()) {
      std::string list;
      for (const auto& a : archs) list += (list.empty() ? "" : ", ") + a;
      throw UsageError("make-test-model",
                       "unknown --arch '" + arch + "' (supported: " + list + ")");
    }
  }
  if (o.layers < 0) throw UsageError("make-test-model", "--layers must be positive");
  if (o.layers > 0) s.n_layer = o.layers;
  const WeightScheme scheme = parse_scheme(o.type);

  // The vocabulary decides n_vocab (token_embd's rows), so it is read first.
  const KeyValues vocab =
      o.vocab_from.empty() ? synthetic_vocab_keys(s.n_vocab) : copy_vocab(o.vocab_from, s.n_vocab);

  const std::vector<TensorPlan> plan = plan_tensors(s, arch, scheme);
  bool quantized = false;
  uint64_t total_elements = 0;
  RandomModelSummary sum;
  for (const auto& t : plan) {
    int64_t n = 1;
    for (auto d : t.ne) n *= d;
    total_elements += uint64_t(n);
    quantized |= gguf::type_info(t.type).block_size > 1;
    ++sum.type_counts[gguf::type_name(t.type)];
  }
  gguf::Writer w;
  put_metadata(w, arch, s, scheme, quantized);
  for (const auto& [k, v] : vocab) w.set(k, v);

  std::vector<gguf::TensorSpec> specs;
  for (const auto& t : plan) specs.push_back({t.name, t.ne, t.type});
  gguf::StreamWriter file(o.out, std::move(w), specs, "make-test-model");
  sum.file_bytes = file.file_bytes();
  ThreadPool pool(o.threads);
  std::vector<std::vector<float>> scratch(size_t(pool.size()));
  uint64_t done_elements = 0;
  auto done = [&](uint64_t n) {
    done_elements += n;
    if (o.progress) o.progress(done_elements, total_elements);
  };
  for (size_t i = 0; i < plan.size(); ++i)
    write_tensor(plan[i], s, o.seed, file, i, pool, scratch, done);
  file.commit();
  sum.arch = arch;
  sum.shape = s;
  sum.n_params = int64_t(total_elements);
  return sum;
}

}  // namespace ragform::model

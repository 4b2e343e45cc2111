#include "engine/model/random_model_bert.h"

#include <cmath>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "engine/gguf/gguf.h"
#include "engine/model/random_normal.h"
#include "engine/ops/quantize_weights.h"

namespace ragform::model {

namespace {
using gguf::TensorType;
using gguf::Value;
using gguf::ValueType;

// n standard normal samples from one seed.
void gaussians(uint64_t seed, float* out, int64_t n) {
  detail::Gaussian g(seed);
  for (int64_t i = 0; i < n; ++i) out[i] = g.next();
}

struct Planned {
  std::string name;
  std::vector<int64_t> ne;
  TensorType type;
  float mean, sigma;
  std::vector<uint8_t> bytes;
};

// A WordPiece vocabulary of n tokens in llama.cpp's converted form: [PAD], [unused1..99], [UNK],
// [CLS], [SEP], [MASK] at BERT's ids, then every printable ASCII character as a word start
// ("▁c") and a continuation ("c"), then lowercase strings of 2, 3, ... letters, both forms.
std::vector<std::pair<std::string, Value>> synthetic_wpm_vocab(int n) {
  std::vector<std::string> tok;
  std::vector<Value> types;
  auto add = [&](std::string t, int type) {
    if (int(tok.size()) < n) tok.push_back(std::move(t)), types.push_back(Value::i32(type));
  };
  add("[PAD]", 3);
  for (int i = 1; i < 100; ++i) add("[unused" + std::to_string(i) + "]", 3);
  add("[UNK]", 2);
  add("[CLS]", 3);
  add("[SEP]", 3);
  add("[MASK]", 3);
  const std::string ws = "\xE2\x96\x81";
  for (char c = '!'; c <= '~'; ++c)
    if (!(c >= 'A' && c <= 'Z')) add(ws + c, 1), add(std::string(1, c), 1);
  for (int len = 2; int(tok.size()) < n; ++len) {
    std::string w(size_t(len), 'a');
    for (;;) {
      add(ws + w, 1);
      add(w, 1);
      if (int(tok.size()) >= n) break;
      int k = len - 1;
      while (k >= 0 && w[size_t(k)] == 'z') w[size_t(k--)] = 'a';
      if (k < 0) break;
      ++w[size_t(k)];
    }
  }
  return {{"tokenizer.ggml.model", Value::str("bert")},
          {"tokenizer.ggml.pre", Value::str("bert-bge")},
          {"tokenizer.ggml.tokens", Value::str_array(tok)},
          {"tokenizer.ggml.token_type", Value::array(ValueType::I32, std::move(types))},
          {"tokenizer.ggml.unknown_token_id", Value::u32(100)},
          {"tokenizer.ggml.seperator_token_id", Value::u32(102)},
          {"tokenizer.ggml.padding_token_id", Value::u32(0)},
          {"tokenizer.ggml.cls_token_id", Value::u32(101)},
          {"tokenizer.ggml.mask_token_id", Value::u32(103)}};
}
}  // namespace

const std::vector<ModelShape>& bert_shapes() {
  static const std::vector<ModelShape> shapes = [] {
    auto mk = [](const char* name, int e, int l, int h, int ff) {
      ModelShape s;
      s.name = name;
      s.arch = "bert";
      s.n_embd = e, s.n_layer = l, s.n_head = h, s.n_head_kv = h, s.n_ff = ff;
      s.n_vocab = 30522, s.n_ctx = 512, s.rms_eps = 1e-12f;
      return s;
    };
    return std::vector<ModelShape>{mk("bge-small", 384, 12, 12, 1536),
                                   mk("bge-base", 768, 12, 12, 3072)};
  }();
  return shapes;
}

bool is_bert_shape(const std::string& name) {
  for (const auto& s : bert_shapes())
    if (s.name == name) return true;
  return false;
}

namespace {

// The tokenizer metadata: a synthetic WordPiece vocabulary of s.n_vocab tokens, or the one of
// --vocab-from (which then sets s.n_vocab).
std::vector<std::pair<std::string, Value>> bert_vocab(const RandomModelOptions& o, ModelShape& s) {
  std::vector<std::pair<std::string, Value>> vocab;
  if (o.vocab_from.empty()) {
    vocab = synthetic_wpm_vocab(s.n_vocab);
  } else {
    auto f = gguf::File::open(o.vocab_from);
    if (f->get_string("tokenizer.ggml.model", "") != "bert")
      throw UsageError(
          "make-test-model",
          o.vocab_from + ": --vocab-from for bert needs a WordPiece (bert) vocabulary");
    for (const auto& [k, v] : f->metadata())
      if (k.rfind("tokenizer.", 0) == 0) vocab.emplace_back(k, v);
    s.n_vocab = int(f->get_strings("tokenizer.ggml.tokens").size());
  }

  return vocab;
}

// Every tensor of the encoder with its type (the weight scheme's choice per role) and the normal
// distribution its values are drawn from.
std::vector<Planned> plan_bert_tensors(const ModelShape& s, const WeightScheme& scheme) {
  const int64_t E = s.n_embd, FF = s.n_ff;
  std::vector<Planned> plan;
  auto mat = [&](const std::string& name, int64_t n_in, int64_t n_out, TensorRole role, int layer) {
    TensorType t = choose_tensor_type(scheme, role, layer, s.n_layer, n_in, false);
    plan.push_back({name, {n_in, n_out}, t, 0.0f, 1.0f / std::sqrt(float(n_in)), {}});
  };
  auto vec = [&](const std::string& name, int64_t n, bool norm) {
    plan.push_back({name, {n}, TensorType::F32, norm ? 1.0f : 0.0f, norm ? 0.1f : 0.5f, {}});
  };
  mat("token_embd.weight", E, s.n_vocab, TensorRole::TokenEmbd, -1);
  plan.back().sigma = 0.02f;  // BERT's initializer_range
  plan.push_back({"token_types.weight", {E, 2}, TensorType::F32, 0.0f, 0.02f, {}});
  plan.push_back({"position_embd.weight", {E, s.n_ctx}, TensorType::F32, 0.0f, 0.02f, {}});
  vec("token_embd_norm.weight", E, true);
  vec("token_embd_norm.bias", E, false);
  for (int il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    mat(p + "attn_q.weight", E, E, TensorRole::AttnQ, il);
    vec(p + "attn_q.bias", E, false);
    mat(p + "attn_k.weight", E, E, TensorRole::AttnK, il);
    vec(p + "attn_k.bias", E, false);
    mat(p + "attn_v.weight", E, E, TensorRole::AttnV, il);
    vec(p + "attn_v.bias", E, false);
    mat(p + "attn_output.weight", E, E, TensorRole::AttnOutput, il);
    vec(p + "attn_output.bias", E, false);
    vec(p + "attn_output_norm.weight", E, true);
    vec(p + "attn_output_norm.bias", E, false);
    mat(p + "ffn_up.weight", E, FF, TensorRole::FfnUp, il);
    vec(p + "ffn_up.bias", FF, false);
    mat(p + "ffn_down.weight", FF, E, TensorRole::FfnDown, il);
    vec(p + "ffn_down.bias", E, false);
    vec(p + "layer_output_norm.weight", E, true);
    vec(p + "layer_output_norm.bias", E, false);
  }

  return plan;
}

// The tensors' bytes: seeded normal values per chunk of 64 rows (the same for any thread count),
// quantised to each tensor's type. Counts the types and parameters into `sum`.
bool fill_tensors(std::vector<Planned>& plan, const RandomModelOptions& o, RandomModelSummary& sum,
                  uint64_t& total) {
  ThreadPool pool(o.threads);
  total = 0;
  uint64_t done = 0;
  for (const auto& t : plan) total += uint64_t(t.ne[0] * (t.ne.size() > 1 ? t.ne[1] : 1));
  bool quantized = false;
  for (Planned& t : plan) {
    const int64_t n_in = t.ne[0], rows = t.ne.size() > 1 ? t.ne[1] : 1;
    const size_t row_bytes = gguf::row_bytes(t.type, n_in);
    t.bytes.resize(row_bytes * size_t(rows));
    const uint64_t tseed = o.seed ^ fnv1a64(t.name);
    const int64_t chunks = (rows + 63) / 64;
    pool.parallel_for(size_t(chunks), [&](size_t c0, size_t c1, int) {
      std::vector<float> buf;
      for (size_t c = c0; c < c1; ++c) {
        const int64_t r0 = int64_t(c) * 64, nr = std::min<int64_t>(64, rows - r0);
        uint64_t st = tseed + uint64_t(c) * 0xD1B54A32D192ED03ull;
        buf.resize(size_t(nr * n_in));
        gaussians(detail::splitmix64_next(st), buf.data(), nr * n_in);
        for (float& v : buf) v = t.mean + t.sigma * v;
        ops::quantize_row(t.type, buf.data(), t.bytes.data() + size_t(r0) * row_bytes, nr * n_in);
      }
    });
    done += uint64_t(n_in * rows);
    if (o.progress) o.progress(done, total);
    quantized |= gguf::type_info(t.type).block_size > 1;
    ++sum.type_counts[gguf::type_name(t.type)];
  }

  return quantized;
}

}  // namespace

RandomModelSummary write_random_bert_model(const RandomModelOptions& o) {
  if (o.out.empty()) throw UsageError("make-test-model", "no output file (-o FILE)");
  if (!o.arch.empty() && o.arch != "bert")
    throw UsageError("make-test-model", "shape '" + o.shape + "' is a bert encoder shape");
  ModelShape s;
  bool found = false;
  for (const auto& b : bert_shapes())
    if (b.name == o.shape) s = b, found = true;
  if (!found)
    throw UsageError("make-test-model",
                     "--arch bert takes --shape bge-small or bge-base, not '" + o.shape + "'");
  if (o.layers < 0) throw UsageError("make-test-model", "--layers must be positive");
  if (o.layers > 0) s.n_layer = o.layers;
  const WeightScheme scheme = parse_scheme(o.type);

  std::vector<std::pair<std::string, Value>> vocab = bert_vocab(o, s);
  std::vector<Planned> plan = plan_bert_tensors(s, scheme);
  RandomModelSummary sum;
  uint64_t total = 0;
  const bool quantized = fill_tensors(plan, o, sum, total);

  gguf::Writer w;
  w.set("general.architecture", Value::str("bert"));
  w.set("general.name", Value::str("ragform random " + s.name));
  w.set("general.file_type", Value::u32(scheme.file_type));
  if (quantized) w.set("general.quantization_version", Value::u32(2));
  w.set("bert.context_length", Value::u32(uint32_t(s.n_ctx)));
  w.set("bert.embedding_length", Value::u32(uint32_t(s.n_embd)));
  w.set("bert.block_count", Value::u32(uint32_t(s.n_layer)));
  w.set("bert.feed_forward_length", Value::u32(uint32_t(s.n_ff)));
  w.set("bert.attention.head_count", Value::u32(uint32_t(s.n_head)));
  w.set("bert.attention.layer_norm_epsilon", Value::f32(s.rms_eps));
  w.set("bert.attention.causal", Value::boolean(false));
  w.set("bert.pooling_type", Value::u32(2));  // BGE: the CLS token
  w.set("tokenizer.ggml.token_type_count", Value::u32(2));
  for (const auto& [k, v] : vocab) w.set(k, v);
  for (const Planned& t : plan) w.add_tensor(t.name, t.ne, t.type, t.bytes.data(), t.bytes.size());
  // Beside o.out and renamed into place (base/atomic_file.h); a failure leaves neither.
  write_file_atomically(o.out, w.to_bytes(), "make-test-model");
  sum.file_bytes = gguf::File::open(o.out)->file_size();
  sum.arch = "bert";
  sum.shape = s;
  sum.n_params = int64_t(total);
  return sum;
}

}  // namespace ragform::model

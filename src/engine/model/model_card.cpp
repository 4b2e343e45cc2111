#include "engine/model/model_card.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "base/error.h"

namespace ragform::model {

namespace {

using gguf::ValueType;

[[noreturn]] void fail(const gguf::File& f, const std::string& key, const std::string& why) {
  throw Error("model card", f.path() + ": '" + key + "' " + why);
}

// A float as the shortest decimal that reads back to the same float32 (F32 keys store 1e-5 as
// 9.99999975e-06; users should see 1e-05). F64 values are kept as they are.
double clean_float(const gguf::Value& v) {
  double d = v.as_float();
  if (v.type != ValueType::F32 || !std::isfinite(d)) return d;
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf - 1, float(d));
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

// An integer key, or a per-layer array of integers (llama.cpp's get_key_or_arr): the largest
// element is reported and a warning notes that it varies.
std::optional<int64_t> opt_int(const gguf::File& f, const std::string& key,
                               std::vector<std::string>& warnings) {
  const gguf::Value* v = f.find(key);
  if (!v) return std::nullopt;
  auto scalar = [&](const gguf::Value& x) -> int64_t {
    if (!x.is_integer())
      fail(f, key, std::string("must be an integer, found ") + gguf::value_type_name(x.type));
    try {
      return x.as_int();
    } catch (const Error&) {
      fail(f, key, "is too large");
    }
  };
  if (v->type != ValueType::ARRAY) return scalar(*v);
  const gguf::Array& a = v->as_array();
  if (a.empty()) fail(f, key, "is an empty per-layer array");
  int64_t lo = scalar(a.at(0)), hi = lo;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t x = scalar(a.at(i));
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  if (lo != hi)
    warnings.push_back("'" + key + "' varies per layer (" + std::to_string(lo) + ".." +
                       std::to_string(hi) + "); the largest is shown");
  return hi;
}

std::optional<int64_t> opt_positive(const gguf::File& f, const std::string& key,
                                    std::vector<std::string>& warnings) {
  auto v = opt_int(f, key, warnings);
  if (v && *v <= 0) fail(f, key, "must be positive, found " + std::to_string(*v));
  return v;
}

int64_t req_positive(const gguf::File& f, const std::string& key,
                     std::vector<std::string>& warnings) {
  auto v = opt_positive(f, key, warnings);
  if (!v) fail(f, key, "is missing (required for a model with tensors)");
  return *v;
}

std::optional<double> opt_float(const gguf::File& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  if (!v) return std::nullopt;
  if (!v->is_float() && !v->is_integer())
    fail(f, key, std::string("must be a number, found ") + gguf::value_type_name(v->type));
  double d = 0;
  try {
    d = clean_float(*v);
  } catch (const Error&) {
    fail(f, key, "is too large");
  }
  if (!std::isfinite(d)) fail(f, key, "is not finite");
  return d;
}

std::string opt_string(const gguf::File& f, const std::string& key) {
  const gguf::Value* v = f.find(key);
  if (!v) return "";
  if (v->type != ValueType::STRING)
    fail(f, key, std::string("must be a string, found ") + gguf::value_type_name(v->type));
  return v->as_string();
}

// llama.cpp's default special-token ids per tokenizer model (llama-vocab.cpp load()).
struct Defaults {
  int64_t bos = -1, eos = -1, unk = -1, sep = -1, pad = -1, mask = -1;
};
Defaults default_ids(const std::string& model) {
  Defaults d;
  if (model == "llama") {
    d.bos = 1, d.eos = 2, d.unk = 0;
  } else if (model == "gpt2") {
    d.bos = 11, d.eos = 11;
  } else if (model == "bert") {
    d.bos = 101, d.unk = 100, d.sep = 102, d.pad = 0, d.mask = 103;
  } else if (model == "t5") {
    d.eos = 1, d.unk = 2, d.pad = 0;
  }
  return d;
}

// Texts llama.cpp recognises as end-of-turn when tokenizer.ggml.eot_token_id is absent. llama.cpp
// takes the first match in hash-map order; ragform takes the earliest in this list.
constexpr std::array<const char*, 10> kEotTexts = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",      "_<EOT>",  "[EOT]",         "<end_of_utterance>"};

void read_special_tokens(const gguf::File& f, ModelCard& c,
                         const std::vector<std::string_view>& tokens) {
  const Defaults d = default_ids(c.tokenizer_model);
  const int64_t n = int64_t(tokens.size());
  struct Role {
    const char* role;
    const char* key;
    int64_t def;
  };
  const Role roles[] = {
      {"bos", "tokenizer.ggml.bos_token_id", d.bos},
      {"eos", "tokenizer.ggml.eos_token_id", d.eos},
      {"eot", "tokenizer.ggml.eot_token_id", -1},
      {"unk", "tokenizer.ggml.unknown_token_id", d.unk},
      {"sep", "tokenizer.ggml.seperator_token_id", d.sep},  // sic: llama.cpp's key spelling
      {"pad", "tokenizer.ggml.padding_token_id", d.pad},
      {"mask", "tokenizer.ggml.mask_token_id", d.mask},
      {"cls", "tokenizer.ggml.cls_token_id", -1},
  };
  for (const Role& r : roles) {
    int64_t id = r.def;
    std::string source = "default";
    if (auto v = opt_int(f, r.key, c.warnings)) {
      // 0xFFFFFFFF (-1 as u32) is the converters' "none"; other out-of-range ids are ignored with a
      // warning, as llama.cpp does ("bad special token ... using default id").
      if (*v >= 0 && *v < n) {
        id = *v;
        source = "metadata";
      } else if (*v != -1 && *v != 0xFFFFFFFFll) {
        c.warnings.push_back(std::string("'") + r.key + "' = " + std::to_string(*v) +
                             " is outside the vocabulary of " + std::to_string(n) +
                             " tokens; using the default");
      }
    }
    if (std::string_view(r.role) == "eot" && id < 0) {
      for (const char* text : kEotTexts) {
        for (int64_t i = 0; i < n && id < 0; ++i)
          if (tokens[size_t(i)] == text) id = i;
        if (id >= 0) {
          source = "text";
          break;
        }
      }
    }
    if (id < 0 || id >= n) continue;
    c.special_tokens.push_back({r.role, id, std::string(tokens[size_t(id)]), source});
  }
}

void read_tokenizer(const gguf::File& f, ModelCard& c) {
  c.tokenizer_model = opt_string(f, "tokenizer.ggml.model");
  c.tokenizer_pre = opt_string(f, "tokenizer.ggml.pre");
  std::vector<std::string_view> tokens;
  if (f.has("tokenizer.ggml.tokens")) {
    try {
      tokens = f.get_strings("tokenizer.ggml.tokens");
    } catch (const Error& e) {
      fail(f, "tokenizer.ggml.tokens",
           std::string("is not an array of strings (") + e.what() + ")");
    }
  }
  c.vocab_size = int64_t(tokens.size());
  if (c.vocab_only && c.tokenizer_model.empty())
    fail(f, "tokenizer.ggml.model", "is missing in a vocabulary-only file (no tensors)");
  if (!c.tokenizer_model.empty() && c.tokenizer_model != "none" &&
      c.tokenizer_model != "no_vocab" && tokens.empty())
    fail(f, "tokenizer.ggml.tokens",
         "is missing or empty for tokenizer '" + c.tokenizer_model + "'");
  if (c.tokenizer_model.empty())
    c.warnings.push_back("no tokenizer metadata (tokenizer.ggml.model)");
  if (const gguf::Value* m = f.find("tokenizer.ggml.merges")) {
    if (m->type != ValueType::ARRAY) fail(f, "tokenizer.ggml.merges", "must be an array");
    c.n_merges = int64_t(m->as_array().size());
  }
  if (f.has("tokenizer.ggml.add_bos_token"))
    c.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", true);
  if (f.has("tokenizer.ggml.add_eos_token"))
    c.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
  read_special_tokens(f, c, tokens);
  if (const gguf::Value* t = f.find("tokenizer.chat_template")) {
    if (t->type != ValueType::STRING) fail(f, "tokenizer.chat_template", "must be a string");
    c.has_chat_template = true;
    c.chat_family = "unknown";  // named by summarize() (model_card.h)
  }
}

void read_hparams(const gguf::File& f, ModelCard& c) {
  const std::string& a = c.architecture;
  auto& w = c.warnings;
  if (c.vocab_only) {
    c.n_embd = opt_positive(f, a + ".embedding_length", w);
    c.n_layer = opt_positive(f, a + ".block_count", w);
    c.n_head = opt_positive(f, a + ".attention.head_count", w);
    c.n_ctx_train = opt_positive(f, a + ".context_length", w);
  } else {
    c.n_embd = req_positive(f, a + ".embedding_length", w);
    c.n_layer = req_positive(f, a + ".block_count", w);
    c.n_head = req_positive(f, a + ".attention.head_count", w);
    c.n_ctx_train = req_positive(f, a + ".context_length", w);
  }
  c.n_ff = opt_positive(f, a + ".feed_forward_length", w);
  c.n_head_kv = opt_positive(f, a + ".attention.head_count_kv", w);
  if (!c.n_head_kv) c.n_head_kv = c.n_head;
  if (c.n_head && c.n_head_kv && *c.n_head % *c.n_head_kv != 0)
    fail(f, a + ".attention.head_count_kv",
         "= " + std::to_string(*c.n_head_kv) + " does not divide head_count " +
             std::to_string(*c.n_head));
  c.head_dim = opt_positive(f, a + ".attention.key_length", w);
  if (!c.head_dim && c.n_embd && c.n_head) {
    if (*c.n_embd % *c.n_head != 0)
      fail(f, a + ".attention.head_count",
           "= " + std::to_string(*c.n_head) + " does not divide embedding_length " +
               std::to_string(*c.n_embd));
    c.head_dim = *c.n_embd / *c.n_head;
  }
  c.n_rot = opt_positive(f, a + ".rope.dimension_count", w);
  if (!c.n_rot) c.n_rot = c.head_dim;

  c.rope_type = rope_type_of_arch(a);
  if (auto base = opt_float(f, a + ".rope.freq_base")) {
    if (*base <= 0) fail(f, a + ".rope.freq_base", "must be positive");
    c.rope_freq_base = *base;
  }
  // llama.cpp: factor from rope.scaling.factor, else rope.scale_linear; 0 means 1 (no scaling).
  auto factor = opt_float(f, a + ".rope.scaling.factor");
  if (!factor) factor = opt_float(f, a + ".rope.scale_linear");
  if (factor && *factor < 0) fail(f, a + ".rope.scaling.factor", "must not be negative");
  c.rope_scaling_factor = factor && *factor != 0.0 ? *factor : 1.0;
  std::string type = opt_string(f, a + ".rope.scaling.type");
  c.rope_scaling = !type.empty() ? type : (c.rope_scaling_factor != 1.0 ? "linear" : "none");
  c.rope_original_ctx = opt_positive(f, a + ".rope.scaling.original_context_length", w);

  if (auto eps = opt_float(f, a + ".attention.layer_norm_rms_epsilon")) {
    c.norm = "rms";
    c.norm_eps = eps;
  } else if (auto leps = opt_float(f, a + ".attention.layer_norm_epsilon")) {
    c.norm = "layer";
    c.norm_eps = leps;
  }
  if (c.norm_eps && *c.norm_eps < 0)
    fail(f, a + ".attention.layer_norm_rms_epsilon", "is negative");
}

void read_tensors(const gguf::File& f, ModelCard& c) {
  std::map<uint32_t, TypeUsage> hist;
  for (const auto& t : f.tensors()) {
    if (__builtin_add_overflow(c.n_params, t.n_elements(), &c.n_params) ||
        __builtin_add_overflow(c.tensor_bytes, t.n_bytes, &c.tensor_bytes))
      throw Error("model card", f.path() + ": tensor sizes overflow at '" + t.name + "'");
    TypeUsage& u = hist[uint32_t(t.type)];
    u.type = t.type;
    u.count += 1;
    u.bytes += t.n_bytes;
  }
  for (auto& [id, u] : hist) c.type_histogram.push_back(u);
  if (c.vocab_only) return;
  const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
  c.tied_output = embd && !f.find_tensor("output.weight");
  if (!embd) {
    c.warnings.push_back("no token_embd.weight tensor");
  } else {
    if (c.n_embd && embd->ne[0] != *c.n_embd)
      c.warnings.push_back("token_embd.weight row length " + std::to_string(embd->ne[0]) +
                           " differs from embedding_length " + std::to_string(*c.n_embd));
    int64_t rows = embd->rows();
    if (c.vocab_size > 0 && rows != c.vocab_size)
      c.warnings.push_back("token_embd.weight has " + std::to_string(rows) + " rows but the " +
                           "tokenizer has " + std::to_string(c.vocab_size) + " tokens");
  }
}

std::string fmt_g(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double x = double(b);
  int u = 0;
  while (x >= 1024 && u < 4) x /= 1024, ++u;
  char buf[40];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)b);
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", x, units[u]);
  return buf;
}

std::string human_count(int64_t n) {
  char buf[40];
  if (n >= 1000000000)
    std::snprintf(buf, sizeof buf, "%.2f B", double(n) / 1e9);
  else if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.2f M", double(n) / 1e6);
  else if (n >= 1000)
    std::snprintf(buf, sizeof buf, "%.2f K", double(n) / 1e3);
  else
    return std::to_string(n);
  return buf;
}

template <typename T>
nlohmann::json opt_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string opt_text(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }

}  // namespace

std::string rope_type_of_arch(const std::string& arch) {
  // llama.cpp llama_model_rope_type(): which architectures rotate adjacent pairs (NORM), pairs
  // offset by n_rot/2 (NEOX), multi-section (MROPE), or use no RoPE at all.
  static const std::map<std::string, std::string, std::less<>> table = {
      {"gpt2", "none"},         {"gptj", "none"},       {"mpt", "none"},
      {"refact", "none"},       {"bloom", "none"},      {"mamba", "none"},
      {"jina-bert-v2", "none"}, {"t5", "none"},         {"t5encoder", "none"},
      {"jais", "none"},         {"rwkv6", "none"},      {"llama", "norm"},
      {"llama4", "norm"},       {"deci", "norm"},       {"baichuan", "norm"},
      {"starcoder", "norm"},    {"internlm2", "norm"},  {"minicpm", "norm"},
      {"xverse", "norm"},       {"command-r", "norm"},  {"cohere2", "norm"},
      {"olmo", "norm"},         {"arctic", "norm"},     {"deepseek", "norm"},
      {"deepseek2", "norm"},    {"plm", "norm"},        {"chatglm", "norm"},
      {"glm4", "norm"},         {"granite", "norm"},    {"granitemoe", "norm"},
      {"chameleon", "norm"},    {"plamo", "norm"},      {"orion", "norm"},
      {"falcon", "neox"},       {"grok", "neox"},       {"dbrx", "neox"},
      {"bert", "neox"},         {"nomic-bert", "neox"}, {"stablelm", "neox"},
      {"bitnet", "neox"},       {"qwen", "neox"},       {"qwen2", "neox"},
      {"qwen2moe", "neox"},     {"qwen3", "neox"},      {"qwen3moe", "neox"},
      {"olmo2", "neox"},        {"olmoe", "neox"},      {"phi2", "neox"},
      {"phi3", "neox"},         {"phimoe", "neox"},     {"gemma", "neox"},
      {"gemma2", "neox"},       {"gemma3", "neox"},     {"starcoder2", "neox"},
      {"openelm", "neox"},      {"gptneox", "neox"},    {"codeshell", "neox"},
      {"nemotron", "neox"},     {"exaone", "neox"},     {"minicpm3", "neox"},
      {"qwen2vl", "mrope"},
  };
  auto it = table.find(arch);
  return it == table.end() ? "unknown" : it->second;
}

std::string file_type_name(int64_t t) {
  // llama.cpp llama_model_ftype_name() for enum llama_ftype.
  static const std::map<int64_t, const char*> names = {
      {0, "all F32"},
      {1, "F16"},
      {2, "Q4_0"},
      {3, "Q4_1"},
      {7, "Q8_0"},
      {8, "Q5_0"},
      {9, "Q5_1"},
      {10, "Q2_K - Medium"},
      {11, "Q3_K - Small"},
      {12, "Q3_K - Medium"},
      {13, "Q3_K - Large"},
      {14, "Q4_K - Small"},
      {15, "Q4_K - Medium"},
      {16, "Q5_K - Small"},
      {17, "Q5_K - Medium"},
      {18, "Q6_K"},
      {19, "IQ2_XXS - 2.0625 bpw"},
      {20, "IQ2_XS - 2.3125 bpw"},
      {21, "Q2_K - Small"},
      {22, "IQ3_XS - 3.3 bpw"},
      {23, "IQ3_XXS - 3.0625 bpw"},
      {24, "IQ1_S - 1.5625 bpw"},
      {25, "IQ4_NL - 4.5 bpw"},
      {26, "IQ3_S - 3.4375 bpw"},
      {27, "IQ3_S mix - 3.66 bpw"},
      {28, "IQ2_S - 2.5 bpw"},
      {29, "IQ2_M - 2.7 bpw"},
      {30, "IQ4_XS - 4.25 bpw"},
      {31, "IQ1_M - 1.75 bpw"},
      {32, "BF16"},
      {36, "TQ1_0 - 1.69 bpw ternary"},
      {37, "TQ2_0 - 2.06 bpw ternary"},
  };
  auto it = names.find(t);
  return it == names.end() ? "unknown (" + std::to_string(t) + ")" : it->second;
}

std::string tokenizer_kind(const std::string& model) {
  if (model == "llama") return "SPM";
  if (model == "gpt2") return "BPE";
  if (model == "bert") return "WPM";
  if (model == "t5") return "UGM";
  if (model == "rwkv") return "RWKV";
  if (model == "none" || model == "no_vocab" || model.empty()) return "none";
  return "unknown";
}

ModelCard summarize_file(const gguf::File& f) {
  ModelCard c;
  c.path = f.path();
  c.file_size = f.file_size();
  c.gguf_version = f.version();
  c.alignment = f.alignment();
  c.vocab_only = f.tensors().empty();
  c.n_tensors = int64_t(f.tensors().size());
  c.name = opt_string(f, "general.name");
  c.architecture = opt_string(f, "general.architecture");
  if (c.architecture.empty()) fail(f, "general.architecture", "is missing");
  if (auto ft = opt_int(f, "general.file_type", c.warnings)) {
    c.file_type = ft;
    c.file_type_name = file_type_name(*ft);
  }
  read_hparams(f, c);
  read_tokenizer(f, c);
  read_tensors(f, c);
  if (auto vs = opt_int(f, c.architecture + ".vocab_size", c.warnings);
      vs && c.vocab_size > 0 && *vs != c.vocab_size)
    c.warnings.push_back("'" + c.architecture + ".vocab_size' = " + std::to_string(*vs) +
                         " but tokenizer.ggml.tokens has " + std::to_string(c.vocab_size));
  return c;
}

int training_context(const std::string& path) {
  try {
    auto f = gguf::File::open(path);
    const ModelCard card = summarize_file(*f);
    return card.n_ctx_train && *card.n_ctx_train > 0 && *card.n_ctx_train < (1 << 30)
               ? int(*card.n_ctx_train)
               : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

nlohmann::json to_json(const ModelCard& c) {
  using nlohmann::json;
  json types = json::array();
  for (const auto& u : c.type_histogram)
    types.push_back({{"type", gguf::type_name(u.type)}, {"count", u.count}, {"bytes", u.bytes}});
  json special = json::object();
  for (const auto& s : c.special_tokens)
    special[s.role] = {{"id", s.id}, {"text", s.text}, {"source", s.source}};
  return {
      {"path", c.path},
      {"name", c.name},
      {"architecture", c.architecture},
      {"file_size", c.file_size},
      {"gguf_version", c.gguf_version},
      {"alignment", c.alignment},
      {"file_type", opt_json(c.file_type)},
      {"file_type_name", c.file_type ? json(c.file_type_name) : json(nullptr)},
      {"vocab_only", c.vocab_only},
      {"n_embd", opt_json(c.n_embd)},
      {"n_layer", opt_json(c.n_layer)},
      {"n_head", opt_json(c.n_head)},
      {"n_head_kv", opt_json(c.n_head_kv)},
      {"head_dim", opt_json(c.head_dim)},
      {"n_ff", opt_json(c.n_ff)},
      {"n_ctx_train", opt_json(c.n_ctx_train)},
      {"rope",
       {{"type", c.rope_type},
        {"n_rot", opt_json(c.n_rot)},
        {"freq_base", c.rope_freq_base},
        {"scaling", c.rope_scaling},
        {"scaling_factor", c.rope_scaling_factor},
        {"original_context_length", opt_json(c.rope_original_ctx)}}},
      {"norm",
       {{"kind", c.norm.empty() ? json(nullptr) : json(c.norm)}, {"eps", opt_json(c.norm_eps)}}},
      {"tied_output", opt_json(c.tied_output)},
      {"n_tensors", c.n_tensors},
      {"n_params", c.n_params},
      {"tensor_bytes", c.tensor_bytes},
      {"tensor_types", types},
      {"tokenizer",
       {{"model", c.tokenizer_model},
        {"kind", tokenizer_kind(c.tokenizer_model)},
        {"pre", c.tokenizer_pre.empty() ? json(nullptr) : json(c.tokenizer_pre)},
        {"vocab_size", c.vocab_size},
        {"n_merges", c.n_merges},
        {"add_bos", opt_json(c.add_bos)},
        {"add_eos", opt_json(c.add_eos)},
        {"special", special}}},
      {"chat_template", {{"present", c.has_chat_template}, {"family", c.chat_family}}},
      {"warnings", c.warnings},
  };
}

std::string to_text(const ModelCard& c) {
  std::ostringstream s;
  auto line = [&](const std::string& label, const std::string& value) {
    s << "  " << label << std::string(label.size() < 14 ? 14 - label.size() : 1, ' ') << value
      << "\n";
  };
  s << c.path << "\n";
  line("name", c.name.empty() ? "(general.name not set)" : c.name);
  line("architecture", c.architecture);
  line("file", human_bytes(c.file_size) + " (" + std::to_string(c.file_size) + " bytes), GGUF v" +
                   std::to_string(c.gguf_version) + ", alignment " + std::to_string(c.alignment));
  line("file type", c.file_type ? c.file_type_name + " (" + std::to_string(*c.file_type) + ")"
                                : "(general.file_type not set)");
  if (c.vocab_only) {
    line("tensors", "none: vocabulary only");
  } else {
    line("parameters", human_count(c.n_params) + " (" + std::to_string(c.n_params) + ")");
    line("tensors", std::to_string(c.n_tensors) + ", " + human_bytes(c.tensor_bytes));
    for (const auto& u : c.type_histogram) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "%-6s %4lld tensors  %s", gguf::type_name(u.type),
                    (long long)u.count, human_bytes(u.bytes).c_str());
      line("", buf);
    }
  }
  line("dimensions", "n_embd " + opt_text(c.n_embd) + ", n_layer " + opt_text(c.n_layer) +
                         ", n_head " + opt_text(c.n_head) + ", n_head_kv " + opt_text(c.n_head_kv) +
                         ", head_dim " + opt_text(c.head_dim) + ", n_ff " + opt_text(c.n_ff));
  line("context", opt_text(c.n_ctx_train) + " tokens (training)");
  std::string rope = c.rope_type == "none" ? std::string("none")
                                           : c.rope_type + ", base " + fmt_g(c.rope_freq_base) +
                                                 ", n_rot " + opt_text(c.n_rot);
  if (c.rope_scaling != "none")
    rope += ", scaling " + c.rope_scaling + " x" + fmt_g(c.rope_scaling_factor) +
            (c.rope_original_ctx ? " from " + std::to_string(*c.rope_original_ctx) : "");
  line("rope", rope);
  line("norm", c.norm.empty() ? "(no epsilon key)"
                              : (c.norm == "rms" ? "RMSNorm" : "LayerNorm") +
                                    std::string(", eps ") + fmt_g(*c.norm_eps));
  if (c.tied_output) line("output", *c.tied_output ? "tied (token_embd reused)" : "untied");
  std::string tk = c.tokenizer_model.empty()
                       ? std::string("(none)")
                       : c.tokenizer_model + " (" + tokenizer_kind(c.tokenizer_model) + ")";
  if (!c.tokenizer_pre.empty()) tk += ", pre " + c.tokenizer_pre;
  tk += ", " + std::to_string(c.vocab_size) + " tokens";
  if (c.n_merges) tk += ", " + std::to_string(c.n_merges) + " merges";
  if (c.add_bos) tk += std::string(", add_bos ") + (*c.add_bos ? "yes" : "no");
  if (c.add_eos) tk += std::string(", add_eos ") + (*c.add_eos ? "yes" : "no");
  line("tokenizer", tk);
  for (const auto& t : c.special_tokens) {
    nlohmann::json text = t.text;  // JSON-escapes control characters and quotes
    line(t.role == "bos" ? "special" : "",
         t.role + " " + std::to_string(t.id) + " " + text.dump() +
             (t.source == "metadata" ? "" : " (" + t.source + ")"));
  }
  line("chat template",
       !c.has_chat_template
           ? "none (raw completion)"
           : c.chat_family + (c.chat_family == "unknown" ? " (not renderable)" : ""));
  for (const auto& w : c.warnings) line("warning", w);
  return s.str();
}

}  // namespace ragform::model

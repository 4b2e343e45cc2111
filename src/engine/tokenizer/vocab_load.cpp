// Builds a Vocab from GGUF metadata, following llama.cpp's llama_vocab::impl::load(): per-kind
// defaults, metadata overrides, and the text heuristics for end-of-generation and FIM tokens.
#include <algorithm>
#include <cstdlib>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/tokenizer/unicode_props.h"
#include "engine/tokenizer/vocab.h"

namespace ragform::tok {

std::string compute_piece(const Vocab& v, int32_t id);  // tokenizer.cpp

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& field, const std::string& why) {
  throw Error("tokenizer", path + ": " + field + ": " + why);
}

const gguf::Array* array_of(const gguf::File& f, const char* key) {
  const gguf::Value* val = f.find(key);
  if (!val) return nullptr;
  if (val->type != gguf::ValueType::ARRAY)
    fail(f.path(), key,
         std::string("expected an array, found ") + gguf::value_type_name(val->type));
  return &val->as_array();
}

// llama.cpp's token types (tokenizer.ggml.token_type) -> attributes.
uint32_t attr_of_type(int64_t t) {
  switch (t) {
    case 1:
      return kAttrNormal;
    case 2:
      return kAttrUnknown;
    case 3:
      return kAttrControl;
    case 4:
      return kAttrUserDefined;
    case 5:
      return kAttrUnused;
    case 6:
      return kAttrByte;
    default:
      return kAttrUndefined;
  }
}

void load_tokens(const gguf::File& f, Vocab& v) {
  const std::string& path = f.path();
  const gguf::Array* toks = array_of(f, "tokenizer.ggml.tokens");
  if (!toks) fail(path, "tokenizer.ggml.tokens", "missing (the file has no vocabulary)");
  if (toks->elem_type != gguf::ValueType::STRING)
    fail(path, "tokenizer.ggml.tokens", "expected an array of strings");
  const size_t n = toks->size();
  if (n == 0) fail(path, "tokenizer.ggml.tokens", "the vocabulary is empty");
  if (n > size_t(INT32_MAX)) fail(path, "tokenizer.ggml.tokens", "too many tokens");

  const gguf::Array* scores = array_of(f, "tokenizer.ggml.scores");
  if (scores) {
    if (scores->elem_type != gguf::ValueType::F32 && scores->elem_type != gguf::ValueType::I32)
      fail(path, "tokenizer.ggml.scores", "expected an array of f32 or i32");
    if (scores->size() != n)
      fail(path, "tokenizer.ggml.scores",
           std::to_string(scores->size()) + " scores for " + std::to_string(n) + " tokens");
  }
  const gguf::Array* types = array_of(f, "tokenizer.ggml.token_type");
  if (types) {
    if (types->elem_type != gguf::ValueType::I32)
      fail(path, "tokenizer.ggml.token_type", "expected an array of i32");
    if (types->size() != n)
      fail(path, "tokenizer.ggml.token_type",
           std::to_string(types->size()) + " types for " + std::to_string(n) + " tokens");
  }

  v.text.resize(n);
  v.score.assign(n, 0.0f);
  v.attr.assign(n, kAttrNormal);
  v.to_id.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string word(toks->string_at(i));
    if (word.empty()) word = "[EMPTY_" + std::to_string(i) + "]";  // as llama.cpp
    auto [it, inserted] = v.to_id.emplace(word, int32_t(i));
    if (!inserted)
      fail(path, "tokenizer.ggml.tokens",
           "duplicate token '" + word + "' at ids " + std::to_string(it->second) + " and " +
               std::to_string(i));
    v.max_token_len = std::max(v.max_token_len, int(word.size()));
    v.text[i] = std::move(word);
    if (scores) v.score[i] = float(scores->float_at(i));
    if (types) v.attr[i] = attr_of_type(types->int_at(i));
  }
}

void load_merges(const gguf::File& f, Vocab& v) {
  const std::string& path = f.path();
  const char* key = "tokenizer.ggml.merges";
  const gguf::Array* merges = array_of(f, key);
  if (!merges) fail(path, key, "missing (a gpt2 BPE vocabulary needs its merges)");
  if (merges->elem_type != gguf::ValueType::STRING) fail(path, key, "expected an array of strings");
  v.merges.reserve(merges->size());
  std::string joined;
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string_view m = merges->string_at(i);
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos)
      fail(path, key,
           "entry " + std::to_string(i) + " '" + std::string(m) + "' is not 'left right'");
    const std::string_view a = m.substr(0, sp), b = m.substr(sp + 1);
    const int32_t ia = v.find(a), ib = v.find(b);
    if (ia < 0 || ib < 0)
      fail(path, key,
           "entry " + std::to_string(i) + " '" + std::string(m) + "' references unknown token '" +
               std::string(ia < 0 ? a : b) + "'");
    joined.assign(a);
    joined += b;
    v.merges.insert_if_absent(pair_key(ia, ib), Vocab::Merge{int32_t(i), v.find(joined)});
  }
}

void index_spm_glue(Vocab& v) {
  const std::string space = "\xe2\x96\x81";
  v.spm_can_cut = true;
  for (const std::string& t : v.text) {
    for (size_t p = t.find(space, 1); p != std::string::npos; p = t.find(space, p + 1)) {
      size_t start = p - 1;
      while (start > 0 && (uint8_t(t[start]) & 0xC0) == 0x80) --start;
      const std::string prev = t.substr(start, p - start);
      size_t pos = 0;
      decode_cpt(prev, &pos);
      if (pos != prev.size()) v.spm_can_cut = false;  // not UTF-8: keep the whole text together
      v.spm_glue.insert(prev);
    }
  }
}

// Special token ids: metadata overrides the per-kind default; an out-of-range value keeps the
// default, and an out-of-range default is cleared (llama.cpp warns in both cases).
void load_special_ids(const gguf::File& f, Vocab& v) {
  const std::pair<const char*, int32_t*> keys[] = {
      {"tokenizer.ggml.bos_token_id", &v.bos},
      {"tokenizer.ggml.eos_token_id", &v.eos},
      {"tokenizer.ggml.eot_token_id", &v.eot},
      {"tokenizer.ggml.eom_token_id", &v.eom},
      {"tokenizer.ggml.unknown_token_id", &v.unk},
      {"tokenizer.ggml.seperator_token_id", &v.sep},
      {"tokenizer.ggml.padding_token_id", &v.pad},
      {"tokenizer.ggml.mask_token_id", &v.mask},
      {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre},
      {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf},
      {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid},
      {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad},
      {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep},
      {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep},
      {"tokenizer.ggml.prefix_token_id", &v.fim_pre},
      {"tokenizer.ggml.suffix_token_id", &v.fim_suf},
      {"tokenizer.ggml.middle_token_id", &v.fim_mid},
  };
  for (const auto& [key, id] : keys) {
    if (*id >= v.n()) *id = -1;
    const gguf::Value* val = f.find(key);
    if (!val) continue;
    if (!val->is_integer()) fail(f.path(), key, "expected an integer token id");
    const int64_t x = val->as_int();
    if (x >= 0 && x < v.n()) *id = int32_t(x);
  }
}

void mark_control(Vocab& v, int32_t id) { v.attr[id] |= kAttrControl; }

// EOT/EOM/FIM tokens found by their text when the file names none (marked control), and control
// tokens named "unused".
void detect_special_tokens(Vocab& v) {
  auto detect = [&](int32_t& slot, std::initializer_list<const char*> texts) {
    if (slot != -1) return;
    for (const char* t : texts) {
      const int32_t id = v.find(t);
      if (id >= 0 && slot == -1) {
        slot = id;
        mark_control(v, id);
      }
    }
  };
  detect(v.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                 "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                 "<\xef\xbd\x9c"
                 "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
                 "<end_of_utterance>"});
  detect(v.eom, {"<|eom_id|>"});
  detect(v.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81"
                     "begin\xef\xbd\x9c>",
                     "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"});
  detect(v.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81hole\xef\xbd\x9c>",
                     "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"});
  detect(v.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                     "<\xef\xbd\x9c"
                     "fim\xe2\x96\x81"
                     "end\xef\xbd\x9c>",
                     "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"});
  detect(v.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
  detect(v.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  detect(v.fim_sep, {"<|file_sep|>"});

  for (int32_t id = 0; id < v.n(); ++id) {  // control tokens named "unused" are unused
    if ((v.attr[id] & kAttrControl) && v.text[id].find("unused") != std::string::npos)
      v.attr[id] |= kAttrUnused;
  }
}

// The end-of-generation set: EOS/EOT/EOM, the FIM pad/repo/separator and the known end texts,
// less the exceptions of models that reuse an end text mid-turn.
void end_of_generation_set(Vocab& v) {
  for (int32_t id : {v.fim_pad, v.fim_rep, v.fim_sep})
    if (id != -1) v.eog.insert(id);
  // DeepSeek's end of sentence spells its 'e' as \x65, which ends the hex escape before it (a
  // literal split in two reads, to clang, as a missing comma).
  static const char* const kEog[] = {
      "<|eot_id|>",
      "<|im_end|>",
      "<|end|>",
      "<|return|>",
      "<|call|>",
      "<|flush|>",
      "<|calls|>",
      "<end_of_turn>",
      "<|endoftext|>",
      "</s>",
      "<|eom_id|>",
      "<EOT>",
      "_<EOT>",
      "[EOT]",
      "[EOS]",
      "<|end_of_text|>",
      "<end_of_utterance>",
      "<eos>",
      "<turn|>",
      "<|tool_response>",
      "<\xef\xbd\x9c\x65nd\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
      "[e~["};
  for (const char* t : kEog) {
    const int32_t id = v.find(t);
    if (id < 0) continue;
    v.eog.insert(id);
    mark_control(v, id);  // this is how Qwen's "</s>" becomes a special token
  }
  for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
    const int32_t id = v.find(t);
    if (id >= 0) v.attr[id] = kAttrUserDefined;  // gpt-oss: always rendered
  }
  for (int32_t id : {v.eos, v.eot, v.eom})
    if (id != -1) v.eog.insert(id);

  // gpt-oss / solar-open: "<|end|>" is not end-of-generation when "<|return|>" + "<|call|>"
  // (or "<|calls|>" + "<|flush|>") exist.
  auto in_eog = [&](const char* t) {
    const int32_t id = v.find(t);
    return id >= 0 && v.eog.count(id) > 0;
  };
  const bool has_call = in_eog("<|call|>") || in_eog("<|calls|>");
  if (in_eog("<|end|>") &&
      ((in_eog("<|return|>") && has_call) || (has_call && in_eog("<|flush|>")))) {
    const int32_t end_id = v.find("<|end|>");
    v.eog.erase(end_id);
    v.attr[end_id] = kAttrUserDefined;
  }
  if (in_eog("<|tool_response>") && in_eog("</s>")) {  // gemma4 / paddleocr
    const int32_t s_id = v.find("</s>");
    v.eog.erase(s_id);
    v.attr[s_id] = kAttrNormal;
  }
}

void build_caches(Vocab& v) {
  // Special-token cache: longest text first (same comparator and input order as llama.cpp).
  for (int32_t id = 0; id < v.n(); ++id)
    if (v.attr[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown))
      v.special_cache.push_back(id);
  std::sort(v.special_cache.begin(), v.special_cache.end(),
            [&](int32_t a, int32_t b) { return v.text[a].size() > v.text[b].size(); });

  v.piece_cache.resize(v.text.size());
  for (int32_t id = 0; id < v.n(); ++id) v.piece_cache[id] = compute_piece(v, id);
}

void strip_attributes(const gguf::File& f, Vocab& v) {
  // Per-model strip attributes (after the piece cache, as in llama.cpp).
  std::string name = f.get_string("general.name", "");
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return char(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); });
  const std::string arch = f.get_string("general.architecture", "");
  const std::string& pre = v.pre_name;
  auto set_attr = [&](const char* t, uint32_t a, bool on) {
    const int32_t id = v.find(t);
    if (id >= 0) v.attr[id] = on ? (v.attr[id] | a) : (v.attr[id] & ~a);
  };
  if (pre.find("jina-v2-de") != std::string::npos || pre.find("jina-v2-es") != std::string::npos ||
      pre.find("jina-v2-code") != std::string::npos ||
      arch.find("nomic-bert-moe") != std::string::npos ||
      arch.find("jina-bert-v3") != std::string::npos) {
    set_attr("<mask>", kAttrLstrip, true);
  } else if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : v.special_cache) v.attr[id] |= kAttrRstrip;
    set_attr("</s>", kAttrRstrip, true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_attr(t, kAttrRstrip, false);
  } else if (name.find("modern-bert") != std::string::npos) {
    set_attr("[MASK]", kAttrLstrip, true);
  }
}

// llama.cpp's text heuristics, in its order: EOT/EOM/FIM tokens, unused tokens, the
// end-of-generation set, the special-token and piece caches, then per-model strip attributes.
void apply_heuristics(const gguf::File& f, Vocab& v) {
  detect_special_tokens(v);
  end_of_generation_set(v);
  build_caches(v);
  strip_attributes(f, v);
}

}  // namespace

void load_vocab(const gguf::File& f, Vocab& v) {
  const std::string& path = f.path();
  const gguf::Value* model_val = f.find("tokenizer.ggml.model");
  if (!model_val) fail(path, "tokenizer.ggml.model", "missing (the file has no tokenizer)");
  if (model_val->type != gguf::ValueType::STRING)
    fail(path, "tokenizer.ggml.model", "expected a string");
  const std::string& model = model_val->as_string();
  const gguf::Value* pre_val = f.find("tokenizer.ggml.pre");
  if (pre_val && pre_val->type != gguf::ValueType::STRING)
    fail(path, "tokenizer.ggml.pre", "expected a string");
  v.pre_name = pre_val ? pre_val->as_string() : "default";

  std::optional<PreTokenizerSpec> spec;
  if (model == "llama") {
    v.kind = VocabKind::kSpm;
    v.bos = 1, v.eos = 2, v.unk = 0;
    v.add_space_prefix = true, v.clean_spaces = false, v.add_bos = true, v.add_eos = false;
  } else if (model == "bert") {
    v.kind = VocabKind::kWpm;
    v.bos = 101, v.unk = 100, v.sep = 102, v.pad = 0, v.mask = 103;
    v.add_space_prefix = false, v.clean_spaces = true, v.add_bos = true, v.add_eos = false;
    v.add_sep = true;
  } else if (model == "gpt2") {
    v.kind = VocabKind::kBpe;
    v.bos = 11, v.eos = 11;
    spec = find_pre_tokenizer(pre_val ? pre_val->as_string() : "");
    if (!spec) {
      std::string known;
      for (const auto& n : pre_tokenizer_names()) known += (known.empty() ? "" : ", ") + n;
      fail(path, "tokenizer.ggml.pre",
           "unknown pre-tokenizer '" + v.pre_name + "' (supported: " + known + ")");
    }
    v.add_space_prefix = false, v.clean_spaces = spec->clean_spaces;
    v.ignore_merges = spec->ignore_merges;
    v.add_bos = spec->add_bos.value_or(false);
    if (spec->no_bos) v.bos = -1;
  } else {
    fail(path, "tokenizer.ggml.model",
         "unknown tokenizer model '" + model + "' (supported: llama, gpt2, bert)");
  }
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);

  load_tokens(f, v);
  if (v.kind == VocabKind::kBpe) {
    load_merges(f, v);
    v.pre = std::make_unique<PreTokenizer>(spec->regexes);
  }
  if (v.kind == VocabKind::kSpm) index_spm_glue(v);
  load_special_ids(f, v);
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  v.add_sep = f.get_bool("tokenizer.ggml.add_sep_token", v.add_sep);
  if (v.add_bos && v.bos == -1)
    fail(path, "tokenizer.ggml.add_bos_token",
         "is true but tokenizer.ggml.bos_token_id is not set");
  if (v.add_eos && v.eos == -1)
    fail(path, "tokenizer.ggml.add_eos_token",
         "is true but tokenizer.ggml.eos_token_id is not set");
  if (v.add_sep && v.sep == -1)
    fail(path, "tokenizer.ggml.add_sep_token",
         "is true but tokenizer.ggml.seperator_token_id is not set");
  v.lowercase = f.get_bool("tokenizer.ggml.normalizer.lowercase", true);
  v.strip_accents = f.get_bool("tokenizer.ggml.normalizer.strip_accents", v.lowercase);
  apply_heuristics(f, v);
}

}  // namespace ragform::tok

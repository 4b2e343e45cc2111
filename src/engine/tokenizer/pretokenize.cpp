#include "engine/tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>

#include "base/error.h"
#include "engine/tokenizer/unicode_props.h"

namespace ragform::tok {
namespace {

// The regexes llama.cpp attaches to each pre-tokeniser (llama-vocab.cpp, llm_tokenizer_bpe).
const char* const kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|"
    "'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])(["
    "^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?"
    "="
    "[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
const char* const kCjk =
    "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+";
const char* const kBloom =
    " ?[^(\\s|.,!?\xe2\x80\xa6\xe3\x80\x82\xef\xbc\x8c\xe3\x80\x81\xe0\xa5\xa4\xdb\x94\xd8\x8c)]+";
// DeepSeek LLM's explicit letter ranges (its tokenizer.json, as llama.cpp lists them).
const char* const kDeepseekLetters =
    "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf\xc7"
    "\x84-\xca\x93\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf\xce"
    "\x86\xce\x88-\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-\xd2\x81\xd2\x8a-"
    "\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-\xe1\x8f\xb5\xe1\x8f\xb8-\xe1"
    "\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf\xe1\xb4\x80-\xe1\xb4\xab\xe1\xb5"
    "\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-\xe1\xbc\x95\xe1\xbc\x98-\xe1\xbc\x9d"
    "\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd\x90-\xe1\xbd\x97\xe1\xbd\x99\xe1"
    "\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xcf\x8e\xe1\xbe\x80-\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc"
    "\xce\xb9\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-\xe1\xbf\x8c\xe1\xbf\x90-\xce\x90\xe1\xbf\x96-"
    "\xce\x8a\xe1\xbf\xa0-\xe1\xbf\xac\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84"
    "\x82\xe2\x84\x87\xe2\x84\x8a-\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4"
    "\xce\xa9\xe2\x84\xa8K-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84"
    "\xbf\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1\xbb"
    "\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-\xea"
    "\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e\x87\xea\x9e"
    "\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac\x93-\xef\xac\x97"
    "\xef\xbc\xa1-\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91\x8f\xf0\x90"
    "\x92\xb0-\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90\xb2\x80-\xf0\x90\xb2\xb2"
    "\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-\xf0\x91\xa3\x9f\xf0\x9e\xa4\x80-\xf0\x9e"
    "\xa5\x83]+";
const char* const kDeepseekPunct =
    "\\s?[!-/"
    ":-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f\xe3\x80\x80-"
    "\xe3\x80\x82]+";

struct Entry {
  std::vector<std::string> names;  // first = canonical
  PreTokenizerSpec spec;
};

std::vector<Entry> make_table() {
  auto spec = [](std::vector<std::string> re, bool clean, bool ignore_merges = false,
                 std::optional<bool> add_bos = std::nullopt) {
    PreTokenizerSpec s;
    s.regexes = std::move(re);
    s.clean_spaces = clean;
    s.ignore_merges = ignore_merges;
    s.add_bos = add_bos;
    return s;
  };
  const std::vector<std::string> def = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+",
                                        "[0-9][0-9][0-9]"};
  const std::vector<std::string> starcoder = {"\\p{N}", kGpt2};
  std::vector<Entry> t = {
      {{"default"}, spec(def, true)},
      {{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       spec({kLlama3}, true, true, true)},
      {{"dbrx"}, spec({kLlama3}, true)},
      {{"smaug-bpe"}, spec({kLlama3}, true)},
      {{"deepseek-llm"},
       spec({"[\r\n]", kDeepseekLetters, kDeepseekPunct, "\\s+$", kCjk, "\\p{N}+"}, false)},
      {{"deepseek-coder"}, spec({"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}, false)},
      {{"falcon"}, spec({"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}, true)},
      {{"mpt"}, spec({kGpt2}, true)},
      {{"starcoder"}, spec(starcoder, true)},
      {{"refact"}, spec(starcoder, true)},
      {{"codeshell"}, spec(starcoder, true)},
      {{"exaone"}, spec(starcoder, true)},
      {{"minerva-7b"}, spec(starcoder, true)},
      {{"command-r"}, spec(starcoder, false)},
      {{"smollm"}, spec(starcoder, false)},
      {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
        "mellum", "modern-bert", "exaone4", "jina-v1-en", "jina-v2-code", "roberta-bpe"},
       spec({kGpt2}, true)},
      {{"olmo"}, spec({kGpt2}, true)},
      {{"jais"}, spec({kGpt2}, true)},
      {{"qwen2", "deepseek-r1-qwen"}, spec({kQwen2}, false)},
      {{"megrez"}, spec({kQwen2}, true)},
      {{"stablelm2"}, spec({kQwen2}, true)},
      {{"poro-chat"}, spec({kBloom}, false)},
      {{"bloom"}, spec({kBloom}, true)},
      {{"gpt3-finnish"}, spec({kBloom}, true)},
      {{"chatglm-bpe", "glm4"}, spec({kLlama3}, true)},
      {{"tekken"}, spec({kTekken}, false, true, true)},
      {{"gpt-4o", "llama4"}, spec({kGpt4o}, false)},
  };
  for (auto& e : t) {
    e.spec.name = e.names.front();
    if (e.spec.name == "chatglm-bpe") e.spec.no_bos = true;
  }
  return t;
}

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = make_table();
  return t;
}

// llama.cpp's collapsed representation: one byte per code point (unicode.cpp).
constexpr char kCollNumber = char(0xD1), kCollLetter = char(0xD2), kCollPunct = char(0xD3),
               kCollMark = char(0xD4), kCollSymbol = char(0xD5), kCollOther = char(0xD0);

struct Category {
  const char* pattern;
  char byte;
  const char* ascii;  // the ASCII members of the category, as a class body
};
const Category kCategories[] = {
    {"\\p{N}", kCollNumber, "0-9"},
    {"\\p{L}", kCollLetter, "A-Za-z"},
    {"\\p{P}", kCollPunct, "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"},
    {"\\p{M}", kCollMark, ""},
    {"\\p{S}", kCollSymbol, "\\$\\+<->^`\\|"},
    {"\\p{Lu}", kCollLetter, "A-Za-z"},
    {"\\p{Ll}", kCollLetter, "A-Za-z"},
    {"\\p{Lt}", kCollLetter, "A-Za-z"},
    {"\\p{Lm}", kCollLetter, "A-Za-z"},
    {"\\p{Lo}", kCollLetter, "A-Za-z"},
};

bool uses_categories(const std::string& re) {
  for (const auto& c : kCategories)
    if (re.find(c.pattern) != std::string::npos) return true;
  return false;
}

std::string collapse_regex(const std::string& re) {
  for (unsigned char c : re)
    if (c >= 0x80)
      throw Error("tokenizer",
                  "pre-tokenizer regex mixes \\p{..} classes and non-ASCII text: " + re);
  std::string out;
  bool inside = false;
  for (size_t i = 0; i < re.size(); ++i) {
    if (re[i] == '[' && (i == 0 || re[i - 1] != '\\')) {
      out += '[';
      inside = true;
      continue;
    }
    if (inside && re[i] == ']' && re[i - 1] != '\\') {
      out += ']';
      inside = false;
      continue;
    }
    if (re[i] == '\\' && i + 3 < re.size() && re[i + 1] == 'p' && re[i + 2] == '{') {
      const size_t close = re.find('}', i + 3);
      if (close != std::string::npos && close <= i + 10) {
        const std::string pat = re.substr(i, close - i + 1);
        const Category* cat = nullptr;
        for (const auto& c : kCategories)
          if (pat == c.pattern) cat = &c;
        if (cat) {
          if (!inside) out += '[';
          out += cat->byte;
          out += cat->ascii;
          if (!inside) out += ']';
          i = close;
          continue;
        }
      }
    }
    out += re[i];
  }
  return out;
}

char collapsed_byte(uint32_t cp, uint16_t flags) {
  if (cp < 128) return char(cp);
  if (flags & kWhitespace) return 0x0B;
  switch (flags & kCategoryMask) {
    case kNumber:
      return kCollNumber;
    case kLetter:
      return kCollLetter;
    case kPunctuation:
      return kCollPunct;
    case kMark:
      return kCollMark;
    case kSymbol:
      return kCollSymbol;
    default:
      return kCollOther;
  }
}

// The text being split: code points, their flags, and lazily built regex subjects.
struct Text {
  std::vector<uint32_t> cpts;
  std::vector<uint16_t> flags;
  std::string collapsed;             // one byte per code point
  std::string wide;                  // UTF-8 of the code points (whitespace folded)
  std::vector<uint32_t> wide_off;    // byte offset of each code point in `wide` (+ end)
  std::vector<uint32_t> byte_to_cp;  // inverse of wide_off

  void build_collapsed() {
    if (!collapsed.empty() || cpts.empty()) return;
    collapsed.resize(cpts.size());
    for (size_t i = 0; i < cpts.size(); ++i) collapsed[i] = collapsed_byte(cpts[i], flags[i]);
  }
  void build_wide() {
    if (!wide_off.empty()) return;
    wide_off.reserve(cpts.size() + 1);
    for (size_t i = 0; i < cpts.size(); ++i) {
      wide_off.push_back(uint32_t(wide.size()));
      uint32_t c = cpts[i];
      if (c > 0x7F && (flags[i] & kWhitespace)) c = 0x0B;
      if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;  // keep the subject valid UTF-8
      append_cpt(wide, c);
    }
    wide_off.push_back(uint32_t(wide.size()));
    byte_to_cp.assign(wide.size() + 1, 0);
    for (size_t i = 0; i + 1 < wide_off.size(); ++i)
      for (uint32_t b = wide_off[i]; b < wide_off[i + 1]; ++b) byte_to_cp[b] = uint32_t(i);
    byte_to_cp[wide.size()] = uint32_t(cpts.size());
  }
};

constexpr uint32_t kOutOfRange = 0xFFFFFFFF;

// Walks one piece [ini, end) of the text, emitting word lengths (llama.cpp's custom splitters).
class Scanner {
 public:
  Scanner(const Text& t, size_t ini, size_t end, std::vector<size_t>* out)
      : t_(t), ini_(ini), end_(end), prev_(ini), out_(out) {}
  uint32_t cpt(size_t p) const { return (p >= ini_ && p < end_) ? t_.cpts[p] : kOutOfRange; }
  uint16_t flags(size_t p) const { return (p >= ini_ && p < end_) ? t_.flags[p] : 0; }
  size_t add(size_t end) {
    const size_t len = end - prev_;
    if (len > 0) out_->push_back(len);
    prev_ = end;
    return len;
  }
  size_t end() const { return end_; }

  // 's|'t|'re|'ve|'m|'ll|'d (optionally case-insensitive): length matched at pos, or 0.
  size_t contraction(size_t pos, bool fold_case) const {
    if (cpt(pos) != '\'' || pos + 1 >= end_) return 0;
    auto low = [&](size_t p) { return fold_case ? cp_tolower(cpt(p)) : cpt(p); };
    const uint32_t a = low(pos + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 < end_) {
      const uint32_t b = low(pos + 2);
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
    return 0;
  }
  // \s+(?!\S) | \s+ (and, for llama3, \s*[\r\n]+ first). Returns false if pos is not space.
  bool whitespace(size_t& pos, bool newline_rule) {
    size_t n = 0, last_rn = 0;
    while (flags(pos + n) & kWhitespace) {
      const uint32_t c = cpt(pos + n);
      if (c == '\r' || c == '\n') last_rn = pos + n + 1;
      ++n;
    }
    if (newline_rule && last_rn > 0) {
      pos = last_rn;
      add(pos);
      return true;
    }
    if (n > 1 && cpt(pos + n) != kOutOfRange) {
      pos += n - 1;
      add(pos);
      return true;
    }
    if (n > 0) {
      pos += n;
      add(pos);
      return true;
    }
    return false;
  }

 private:
  const Text& t_;
  size_t ini_, end_, prev_;
  std::vector<size_t>* out_;
};

constexpr uint16_t kWLN = kWhitespace | kLetter | kNumber;

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(const Text& t, size_t ini, size_t end, std::vector<size_t>* out) {
  Scanner s(t, ini, end, out);
  for (size_t pos = ini; pos < end;) {
    const uint32_t c = s.cpt(pos);
    if (const size_t n = s.contraction(pos, false)) {
      pos += s.add(pos + n);
      continue;
    }
    uint16_t f2 = c == ' ' ? s.flags(pos + 1) : s.flags(pos);
    for (uint16_t cls : {uint16_t(kLetter), uint16_t(kNumber)}) {
      if (f2 & cls) {
        pos += (c == ' ');
        while (f2 & cls) f2 = s.flags(++pos);
        s.add(pos);
        goto next;
      }
    }
    if (!(f2 & kWLN) && f2) {
      pos += (c == ' ');
      while (!(f2 & kWLN) && f2) f2 = s.flags(++pos);
      s.add(pos);
      continue;
    }
    if (s.whitespace(pos, false)) continue;
    s.add(++pos);
  next:;
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+
void split_llama3(const Text& t, size_t ini, size_t end, std::vector<size_t>* out) {
  Scanner s(t, ini, end, out);
  for (size_t pos = ini; pos < end;) {
    const uint32_t c = s.cpt(pos);
    const uint16_t f = s.flags(pos);
    if (const size_t n = s.contraction(pos, true)) {
      pos += s.add(pos + n);
      continue;
    }
    if (!(c == '\r' || c == '\n' || (f & kNumber)) &&
        ((f & kLetter) || (s.flags(pos + 1) & kLetter))) {
      ++pos;
      while (s.flags(pos) & kLetter) ++pos;
      s.add(pos);
      continue;
    }
    if (f & kNumber) {
      size_t run = pos;
      while (s.flags(pos) & kNumber) {
        if (++pos - run >= 3) {
          s.add(pos);
          run = pos;
        }
      }
      s.add(pos);
      continue;
    }
    uint16_t f2 = c == ' ' ? s.flags(pos + 1) : f;
    if (!(f2 & kWLN) && f) {
      pos += (c == ' ');
      while (!(f2 & kWLN) && f2) f2 = s.flags(++pos);
      uint32_t c2 = s.cpt(pos);
      while (c2 == '\r' || c2 == '\n') c2 = s.cpt(++pos);
      s.add(pos);
      continue;
    }
    if (s.whitespace(pos, true)) continue;
    s.add(++pos);
  }
}

}  // namespace

struct PreTokenizer::Stage {
  enum Kind { kGpt2Scan, kLlama3Scan, kCollapsed, kWide } kind = kCollapsed;
  std::string source;
  pcre2_code* code = nullptr;
  ~Stage() {
    if (code) pcre2_code_free(code);
  }
};

std::optional<PreTokenizerSpec> find_pre_tokenizer(std::string_view name) {
  if (name.empty()) name = "default";
  for (const auto& e : table())
    for (const auto& n : e.names)
      if (n == name) return e.spec;
  return std::nullopt;
}

std::vector<std::string> pre_tokenizer_names() {
  std::vector<std::string> out;
  for (const auto& e : table()) out.insert(out.end(), e.names.begin(), e.names.end());
  return out;
}

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes) {
  for (const auto& re : regexes) {
    auto st = std::make_unique<Stage>();
    st->source = re;
    const std::string llama3_orig =
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    if (re == kGpt2) {
      st->kind = Stage::kGpt2Scan;
    } else if (re == kLlama3 || re == llama3_orig) {
      st->kind = Stage::kLlama3Scan;
    } else {
      std::string pattern;
      uint32_t options = PCRE2_DOLLAR_ENDONLY;  // ECMAScript '$' (std::regex semantics)
      if (uses_categories(re)) {
        st->kind = Stage::kCollapsed;
        pattern = collapse_regex(re);
      } else {
        st->kind = Stage::kWide;
        pattern = re;
        options |= PCRE2_UTF;
      }
      int err = 0;
      PCRE2_SIZE err_off = 0;
      st->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                               options, &err, &err_off, nullptr);
      if (!st->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        throw Error("tokenizer", "cannot compile pre-tokenizer regex '" + re + "' at offset " +
                                     std::to_string(err_off) + ": " +
                                     reinterpret_cast<const char*>(msg));
      }
      pcre2_jit_compile(st->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if absent
    }
    stages_.push_back(std::move(st));
  }
}

PreTokenizer::~PreTokenizer() = default;

namespace {

// Splits every piece by the regex matches (matches and gaps both become pieces).
void split_regex(pcre2_code* code, const std::string& subject_all,
                 const std::vector<uint32_t>* byte_off, const std::vector<uint32_t>* byte_to_cp,
                 const std::vector<size_t>& in, std::vector<size_t>* out, const std::string& src) {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
  struct Free {
    pcre2_match_data* m;
    ~Free() { pcre2_match_data_free(m); }
  } guard{md};
  size_t start_cp = 0;
  for (size_t piece : in) {
    const size_t b0 = byte_off ? (*byte_off)[start_cp] : start_cp;
    const size_t b1 = byte_off ? (*byte_off)[start_cp + piece] : start_cp + piece;
    const auto subj = reinterpret_cast<PCRE2_SPTR>(subject_all.data() + b0);
    const size_t len = b1 - b0;
    auto to_cp = [&](size_t b) { return byte_to_cp ? (*byte_to_cp)[b0 + b] - start_cp : b; };
    size_t pos = 0, prev = 0;
    while (pos <= len) {
      int rc = pcre2_match(code, subj, len, pos, PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(code, subj, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        throw Error("tokenizer", "pre-tokenizer regex '" + src +
                                     "' failed: " + reinterpret_cast<const char*>(msg));
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t ms = ov[0], me = ov[1];
      if (ms > prev) out->push_back(to_cp(ms) - to_cp(prev));
      if (me == ms) {  // empty match: split here and step one code point
        prev = ms;
        if (ms >= len) break;
        pos = ms + 1;
        if (byte_off)
          while (pos < len && (uint8_t(subj[pos]) & 0xC0) == 0x80) ++pos;
        continue;
      }
      out->push_back(to_cp(me) - to_cp(ms));
      prev = pos = me;
    }
    if (prev < len) out->push_back(to_cp(len) - to_cp(prev));
    start_cp += piece;
  }
}

}  // namespace

void PreTokenizer::split(std::string_view text, std::vector<std::string>* words) const {
  Text t;
  t.cpts = decode_cpts(text);
  t.flags.resize(t.cpts.size());
  for (size_t i = 0; i < t.cpts.size(); ++i) t.flags[i] = cp_flags(t.cpts[i]);

  std::vector<size_t> pieces = {t.cpts.size()}, next;
  for (const auto& st : stages_) {
    next.clear();
    next.reserve(pieces.size() + 16);
    if (st->kind == Stage::kGpt2Scan || st->kind == Stage::kLlama3Scan) {
      size_t start = 0;
      for (size_t p : pieces) {
        if (st->kind == Stage::kGpt2Scan)
          split_gpt2(t, start, start + p, &next);
        else
          split_llama3(t, start, start + p, &next);
        start += p;
      }
    } else if (st->kind == Stage::kCollapsed) {
      t.build_collapsed();
      split_regex(st->code, t.collapsed, nullptr, nullptr, pieces, &next, st->source);
    } else {
      t.build_wide();
      split_regex(st->code, t.wide, &t.wide_off, &t.byte_to_cp, pieces, &next, st->source);
    }
    pieces.swap(next);
  }

  size_t start = 0;
  for (size_t p : pieces) {
    if (p == 0) continue;
    std::string w;
    w.reserve(p);
    for (size_t i = start; i < start + p; ++i) append_cpt(w, t.cpts[i]);
    words->push_back(std::move(w));
    start += p;
  }
}

}  // namespace ragform::tok

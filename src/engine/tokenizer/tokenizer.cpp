#include "engine/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/tokenizer/unicode_props.h"
#include "engine/tokenizer/vocab.h"

namespace ragform::tok {

void load_vocab(const gguf::File& f, Vocab& v);  // vocab_load.cpp

namespace {

const std::string kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's escaped space

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out += to;
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

// Byte value of a <0xXX> token (strtol on the two hex digits, as llama.cpp).
char byte_of(const std::string& text) {
  if (text.size() < 3) return 0;
  const std::string hex = text.substr(3, 2);
  return char(std::strtol(hex.c_str(), nullptr, 16));
}

// GPT-2 printable code points back to bytes (llama_decode_text).
std::string decode_byte_level(const std::string& text) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const uint32_t cp = decode_cpt(text, &pos);
    const int b = unicode_to_byte(cp);
    if (b >= 0) {
      out += char(b);
      continue;
    }
    std::string utf8;
    append_cpt(utf8, cp);
    out += "[UNK_BYTE_0x";
    for (unsigned char c : utf8) {
      char buf[3];
      std::snprintf(buf, sizeof buf, "%02x", c);
      out += buf;
    }
    out += text + "]";
  }
  return out;
}

bool is_space_ascii(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

struct Fragment {
  int32_t token;  // -1: raw text [off, off + len)
  size_t off, len;
};

// Whether [at, at + len) lies wholly inside one of the sorted, disjoint `spans`.
bool inside_spans(const std::vector<TextSpan>& spans, size_t at, size_t len) {
  auto it = std::upper_bound(spans.begin(), spans.end(), at,
                             [](size_t x, const TextSpan& s) { return x < s.begin; });
  if (it == spans.begin()) return false;
  --it;
  return at >= it->begin && at + len <= it->end;
}

// llama.cpp's tokenizer_st_partition: split raw text around special-token occurrences, longest
// special tokens first. Control/unknown tokens only when parse_special, and then, if `spans` is
// given, only occurrences wholly inside one of them; user-defined always.
std::vector<Fragment> partition(const Vocab& v, std::string_view text, bool parse_special,
                                const std::vector<TextSpan>* spans = nullptr) {
  std::vector<Fragment> frags, next;
  if (text.empty()) return frags;
  frags.push_back({-1, 0, text.size()});
  for (int32_t id : v.special_cache) {
    const uint32_t attr = v.attr[id];
    const bool gated = (attr & (kAttrControl | kAttrUnknown)) != 0;
    if (!parse_special && gated) continue;
    const bool check_spans = gated && spans != nullptr;
    const std::string& tok = v.text[id];
    next.clear();
    for (const Fragment& fr : frags) {
      if (fr.token >= 0) {
        next.push_back(fr);
        continue;
      }
      size_t base = fr.off, len = fr.len, from = base;
      while (len > 0) {
        const size_t m = text.substr(0, base + len).find(tok, from);
        if (m == std::string_view::npos) {
          next.push_back({-1, base, len});
          break;
        }
        if (check_spans && !inside_spans(*spans, m, tok.size())) {
          from = m + 1;  // message text: not this token here; look further on
          continue;
        }
        size_t left = m - base;
        if (attr & kAttrLstrip)
          while (left > 0 && is_space_ascii(text[base + left - 1])) --left;
        if (left > 0) next.push_back({-1, base, left});
        next.push_back({id, 0, 0});
        size_t r_off = m + tok.size(), r_len = base + len - r_off;
        if (attr & kAttrRstrip)
          while (r_len > 0 && is_space_ascii(text[r_off])) ++r_off, --r_len;
        base = r_off;
        len = r_len;
        from = base;
      }
    }
    frags.swap(next);
  }
  return frags;
}

// The three clean-up passes of llama_detokenize for vocabularies with clean_spaces.
std::string clean_spaces(const std::string& in) {
  if (in.empty()) return in;
  auto pass = [](const std::string& s, auto&& rule) {
    std::string t = s, o;
    o.reserve(s.size());
    o += t[0];
    for (size_t i = 1; i < t.size(); ++i) rule(t, i, o);
    return o;
  };
  // " ?", " !", " .", " ,": drop the space.
  std::string a = pass(in, [](std::string& t, size_t& i, std::string& o) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) o.pop_back();
    o += x;
  });
  // " ' ": drop both spaces around a lone apostrophe.
  std::string b = pass(a, [](std::string& t, size_t& i, std::string& o) {
    const char x = t[i];
    if (x == '\'' && i + 1 < t.size() && t[i - 1] == ' ' && t[i + 1] == ' ') {
      o.pop_back();
      t[++i] = '\0';
    }
    o += x;
  });
  // " 's", " 'm", " 're", " 've": drop the space.
  return pass(b, [](std::string& t, size_t& i, std::string& o) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < t.size()) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        o.pop_back();
      } else if (x1 != 't' && x1 != 'd' && i + 2 < t.size()) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) o.pop_back();
      }
    }
    o += x;
  });
}

// Token ids of partitioned text: special tokens as they are, raw fragments by the vocabulary's
// algorithm, BOS/EOS around them when add_special.
std::vector<int32_t> encode_fragments(const Vocab& v, std::string_view text,
                                      const std::vector<Fragment>& frags, bool add_special) {
  std::vector<int32_t> out;
  switch (v.kind) {
    case VocabKind::kSpm: {
      bool prev_special = true;  // the first fragment gets the leading space
      if (add_special && v.add_bos) out.push_back(v.bos);
      for (const Fragment& fr : frags) {
        if (fr.token >= 0) {
          out.push_back(fr.token);
          prev_special = true;
          continue;
        }
        std::string s = (v.add_space_prefix && prev_special) ? " " : "";
        s.append(text.substr(fr.off, fr.len));
        replace_all(s, " ", kSpace);
        spm_tokenize(v, s, &out);
        prev_special = false;
      }
      if (add_special && v.add_eos) out.push_back(v.eos);
      break;
    }
    case VocabKind::kBpe: {
      BpeSession session(v);
      if (add_special && v.add_bos) out.push_back(v.bos);
      for (const Fragment& fr : frags) {
        if (fr.token >= 0)
          out.push_back(fr.token);
        else
          session.tokenize(text.substr(fr.off, fr.len), &out);
      }
      if (add_special && v.add_eos) out.push_back(v.eos);
      break;
    }
    case VocabKind::kWpm: {
      if (add_special && v.bos >= 0) out.push_back(v.bos);  // [CLS]
      for (const Fragment& fr : frags) {
        if (fr.token >= 0)
          out.push_back(fr.token);
        else
          wpm_tokenize(v, text.substr(fr.off, fr.len), &out);
      }
      if (add_special && v.sep >= 0) out.push_back(v.sep);  // [SEP]
      break;
    }
  }
  return out;
}

}  // namespace

// Piece of a token with special tokens rendered (llama.cpp's token_to_piece cache).
std::string compute_piece(const Vocab& v, int32_t id) {
  const uint32_t attr = v.attr[id];
  const std::string& text = v.text[id];
  if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
  if (attr & kAttrNormal) {
    if (v.kind == VocabKind::kBpe) return decode_byte_level(text);
    std::string s = text;
    replace_all(s, kSpace, " ");
    return s;
  }
  if ((attr & kAttrByte) && v.kind != VocabKind::kWpm) return std::string(1, byte_of(text));
  return "";  // undefined / unused tokens render as nothing
}

struct Tokenizer::Impl {
  Vocab v;
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::File& f) {
  auto impl = std::make_unique<Impl>();
  load_vocab(f, impl->v);
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  return encode_fragments(impl_->v, text, partition(impl_->v, text, parse_special), add_special);
}

std::vector<int32_t> Tokenizer::encode_with_special_spans(
    std::string_view text, const std::vector<TextSpan>& special_spans, bool add_special) const {
  return encode_fragments(impl_->v, text, partition(impl_->v, text, true, &special_spans),
                          add_special);
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  const Vocab& v = impl_->v;
  if (id < 0 || id >= v.n())
    throw Error("tokenizer", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                 std::to_string(v.n()) + ")");
  if (!render_special && (v.attr[id] & (kAttrUnknown | kAttrControl))) return "";
  return v.piece_cache[id];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  const Vocab& v = impl_->v;
  std::string out;
  bool remove_space = v.add_space_prefix;
  for (int32_t id : ids) {
    const std::string piece = token_to_piece(id, render_special);
    const bool strip = remove_space && !piece.empty() && piece[0] == ' ';
    out.append(piece, strip ? 1 : 0, std::string::npos);
    remove_space = false;
  }
  return v.clean_spaces ? clean_spaces(out) : out;
}

int32_t Tokenizer::n_vocab() const { return impl_->v.n(); }
int32_t Tokenizer::bos() const { return impl_->v.bos; }
int32_t Tokenizer::eos() const { return impl_->v.eos; }
bool Tokenizer::is_eog(int32_t id) const { return id >= 0 && impl_->v.eog.count(id) > 0; }
bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < impl_->v.n() && (impl_->v.attr[id] & kAttrControl);
}
bool Tokenizer::add_bos() const { return impl_->v.add_bos; }
bool Tokenizer::add_eos() const { return impl_->v.add_eos; }

size_t Tokenizer::max_piece_bytes() const { return size_t(std::max(impl_->v.max_token_len, 0)); }

std::string Tokenizer::kind() const {
  switch (impl_->v.kind) {
    case VocabKind::kSpm:
      return "spm";
    case VocabKind::kBpe:
      return "bpe";
    case VocabKind::kWpm:
      return "wpm";
  }
  return "";
}

std::string Tokenizer::pre() const { return impl_->v.pre_name; }

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = impl_->v.find(text);
  return id >= 0 ? std::optional<int32_t>(id) : std::nullopt;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  const Vocab& v = impl_->v;
  if (id < 0 || id >= v.n())
    throw Error("tokenizer", "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                 std::to_string(v.n()) + ")");
  return v.text[id];
}

}  // namespace ragform::tok

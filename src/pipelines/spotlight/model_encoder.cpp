#include "pipelines/spotlight/model_encoder.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>

#include "base/error.h"
#include "text/unicode_db.h"
#include "text/utf8.h"

namespace ragform::spotlight {

namespace {
bool is_special(const std::string& p) {
  return p.size() >= 3 && p.front() == '[' && p.back() == ']' && p.find(' ') == std::string::npos;
}

// Strips a word-start marker (U+2581 "▁" or a space); true when there was one.
bool strip_marker(std::string& p) {
  static const std::string kMarker = "\xE2\x96\x81";
  if (p.compare(0, kMarker.size(), kMarker) == 0) {
    p.erase(0, kMarker.size());
    return true;
  }
  if (!p.empty() && p[0] == ' ') {
    p.erase(0, 1);
    return true;
  }
  return false;
}

char lower(char c) { return char(std::tolower(static_cast<unsigned char>(c))); }

// Text as a WordPiece vocabulary spells it, for finding a word's pieces in it: every code point
// through BERT's lowercase + strip_accents (text::bert_fold, the tokenizer's own rule; a cased
// vocabulary's pieces fold the same way, so the match is only looser in case). at[i] is the byte
// offset in the original text of the code point folded byte i came from; at.back() is the text's
// size.
struct Folded {
  std::string text;
  std::vector<size_t> at;
};

Folded fold(std::string_view s) {
  Folded f;
  for (size_t i = 0; i < s.size();) {
    size_t len = 1;
    const uint32_t cp = text::decode_utf8_at(s, i, &len);
    const uint32_t folded = text::bert_fold(cp, /*lowercase=*/true, /*strip_accents=*/true);
    if (folded != text::kBertDropped) {
      const size_t before = f.text.size();
      text::append_utf8(f.text, folded);
      f.at.insert(f.at.end(), f.text.size() - before, i);
    }
    i += std::max<size_t>(len, 1);
  }
  f.at.push_back(s.size());
  return f;
}

bool cjk(uint32_t c) { return c >= 0x2E80 && c <= 0x2FA1F; }

// Whether a word may start at folded byte i: at the start, after a space, punctuation or a symbol,
// or beside a CJK character (each its own word). A word of letters or digits found inside another
// word ("ակիմ" inside "հովակիմ") is not that word: matching it there skipped every word between.
bool word_start(const std::string& t, size_t i) {
  if (i == 0) return true;
  size_t p = i - 1;
  while (p > 0 && (static_cast<unsigned char>(t[p]) & 0xC0) == 0x80) --p;
  size_t len = 1;
  const uint32_t prev = text::decode_utf8_at(t, p, &len);
  const uint32_t cur = text::decode_utf8_at(t, i, &len);
  const uint16_t f = text::cp_flags(prev);
  return (f & (text::kWhitespace | text::kPunctuation | text::kSymbol | text::kControl)) ||
         cjk(prev) || cjk(cur) || !(f & (text::kLetter | text::kNumber));
}

// First folded position >= from where `needle` (folded) occurs in `hay`, starting a word when
// the needle begins with a letter or digit; npos when none.
size_t find_word(const Folded& hay, const std::string& needle, size_t from) {
  if (needle.empty()) return std::string::npos;
  size_t len = 1;
  const uint32_t first = text::decode_utf8_at(needle, 0, &len);
  const bool wordlike = (text::cp_flags(first) & (text::kLetter | text::kNumber)) && !cjk(first);
  for (size_t at = hay.text.find(needle, from); at != std::string::npos;
       at = hay.text.find(needle, at + 1))
    if (!wordlike || word_start(hay.text, at)) return at;
  return std::string::npos;
}

bool has_word_char(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80 || std::isalnum(c)) return true;
  return false;
}
}  // namespace

std::vector<PieceWord> group_pieces(std::string_view text, const std::vector<std::string>& pieces) {
  std::vector<PieceWord> words;
  bool open = false;  // the last word can take continuation pieces
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string p = pieces[i];
    if (is_special(p)) {
      open = false;
      continue;
    }
    const bool start = strip_marker(p);
    if (start || !open) {
      words.push_back(PieceWord{});
      open = true;
    }
    words.back().text += p;
    words.back().pieces.push_back(int(i));
  }
  // Each word is found in the folded text after the previous one; its span is the original bytes
  // its folded bytes came from (so "Šešupė" is the span of the piece text "sesupe").
  const Folded hay = fold(text);
  size_t cursor = 0;  // in hay.text
  for (PieceWord& w : words) {
    const std::string needle = fold(w.text).text;
    const size_t at = find_word(hay, needle, cursor);
    if (at == std::string::npos) {
      w.span = {hay.at[cursor], hay.at[cursor]};
      continue;
    }
    const size_t end = at + needle.size();
    // The end: the start of the next original code point after the last folded byte's.
    size_t stop = end < hay.text.size() ? hay.at[end] : text.size();
    w.span = {hay.at[at], stop};
    cursor = end;
  }
  return words;
}

ModelEncoder::ModelEncoder(reader::Encoder& enc) : enc_(enc) {}

std::string ModelEncoder::describe() const { return "model(" + enc_.describe() + ")"; }

EncodedText ModelEncoder::encode(std::string_view text) {
  return std::move(encode_batch({text})[0]);
}

std::vector<EncodedText> ModelEncoder::encode_batch(const std::vector<std::string_view>& texts) {
  std::vector<std::string> owned(texts.begin(), texts.end());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<reader::Embedding> embs = enc_.embed(owned, reader::Pooling::None, false);
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<EncodedText> out(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const reader::Embedding& e = embs[i];
    const int E = e.n_embd;
    if (e.pieces.size() != size_t(e.n_tokens) ||
        e.token_vectors.size() != size_t(e.n_tokens) * size_t(E))
      throw Error("model encoder", enc_.describe() +
                                       " returned no word-pieces with its per-token vectors (it "
                                       "must be a ragform encoder or server)");
    pieces_ += size_t(e.n_tokens);
    truncated_ += e.truncated ? 1 : 0;
    EncodedText& o = out[i];
    o.dim = E;
    for (const PieceWord& w : group_pieces(texts[i], e.pieces)) {
      if (!has_word_char(w.text)) continue;  // punctuation
      ++o.words;
      if (w.span.size() == 0) {
        ++o.oov;
        continue;
      }
      std::vector<double> acc(size_t(E), 0.0);
      for (int p : w.pieces)
        for (int d = 0; d < E; ++d)
          acc[size_t(d)] += e.token_vectors[size_t(p) * size_t(E) + size_t(d)];
      double n2 = 0;
      for (double v : acc) n2 += v * v;
      const double inv = n2 > 0 ? 1.0 / std::sqrt(n2) : 0.0;
      const int row = int(o.vectors.size() / size_t(E));
      for (double v : acc) o.vectors.push_back(float(v * inv));
      std::string surface(texts[i].substr(w.span.begin, w.span.size()));
      std::string key = surface;
      for (char& c : key) c = lower(c);
      o.tokens.push_back(Token{std::move(surface), std::move(key), w.span, row});
    }
  }
  return out;
}

}  // namespace ragform::spotlight

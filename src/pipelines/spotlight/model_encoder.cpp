#include "pipelines/spotlight/model_encoder.h"

#include <cctype>
#include <chrono>
#include <cmath>

#include "base/error.h"

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

// First position >= from where `needle` occurs in `hay` ignoring ASCII case, or npos.
size_t find_nocase(std::string_view hay, std::string_view needle, size_t from) {
  if (needle.empty() || needle.size() > hay.size()) return std::string_view::npos;
  for (size_t i = from; i + needle.size() <= hay.size(); ++i) {
    size_t k = 0;
    while (k < needle.size() && lower(hay[i + k]) == lower(needle[k])) ++k;
    if (k == needle.size()) return i;
  }
  return std::string_view::npos;
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
  size_t cursor = 0;
  for (PieceWord& w : words) {
    const size_t at = find_nocase(text, w.text, cursor);
    if (at == std::string_view::npos) {
      w.span = {cursor, cursor};
      continue;
    }
    w.span = {at, at + w.text.size()};
    cursor = at + w.text.size();
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

// Token encoders for SpotlightRAG (see encoder.h for the OOV rule and the piece alignment).
#include "pipelines/spotlight/encoder.h"

#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_file.h"

namespace ragform::spotlight {
namespace {

bool is_punct_byte(unsigned char c) { return c < 0x80 && std::ispunct(c); }

std::string lower_ascii(std::string_view s) {
  std::string o(s);
  for (char& c : o)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return o;
}

void normalise_row(float* v, int dim) {
  double n = 0;
  for (int i = 0; i < dim; ++i) n += double(v[i]) * v[i];
  n = std::sqrt(n);
  if (n > 0)
    for (int i = 0; i < dim; ++i) v[i] = static_cast<float>(v[i] / n);
}

}  // namespace

std::vector<std::string> word_keys(std::string_view word) {
  size_t b = 0, e = word.size();
  while (b < e && is_punct_byte(static_cast<unsigned char>(word[b]))) ++b;
  while (e > b && is_punct_byte(static_cast<unsigned char>(word[e - 1]))) --e;
  if (b == e) return {};
  std::vector<std::string> keys{std::string(word), lower_ascii(word)};
  std::string stripped = lower_ascii(word.substr(b, e - b));
  if (stripped.size() > 2 && stripped.ends_with("'s")) {
    keys.push_back(stripped);
    stripped.resize(stripped.size() - 2);
  }
  keys.push_back(stripped);
  return keys;
}

WordVectors WordVectors::from_map(const std::unordered_map<std::string, std::vector<float>>& m) {
  // As load refuses an empty file: a table of no words is no encoder (WordVectors{} is "none").
  if (m.empty()) throw Error("word vectors", "expected a non-empty {word: [floats]}");
  WordVectors w;
  w.source_ = "<memory>";
  for (const auto& [word, vec] : m) {
    if (w.dim_ == 0) w.dim_ = static_cast<int>(vec.size());
    if (static_cast<int>(vec.size()) != w.dim_ || vec.empty())
      throw Error("word vectors", "word '" + word + "' has " + std::to_string(vec.size()) +
                                      " values, expected " + std::to_string(w.dim_));
    w.index_.emplace(word, static_cast<int>(w.index_.size()));
    w.data_.insert(w.data_.end(), vec.begin(), vec.end());
    normalise_row(w.data_.data() + w.data_.size() - w.dim_, w.dim_);
  }
  return w;
}

WordVectors WordVectors::load(const std::string& path) {
  // Word vectors may be far bigger than a profile (GloVe 300d is ~1 GB as JSON), so their bound is
  // kMaxWordVectorsBytes, not the 64 MiB of other JSON files; /dev/zero still ends.
  const nlohmann::json j = read_json_file(path, "word vectors", kMaxWordVectorsBytes);
  if (!j.is_object() || j.empty())
    throw Error("word vectors", path + ": expected a non-empty object {word: [floats]}");
  WordVectors w;
  w.source_ = path;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (!v.is_array() || v.empty())
      throw Error("word vectors",
                  path + ": word '" + it.key() + "': expected a non-empty array of numbers");
    if (w.dim_ == 0) w.dim_ = static_cast<int>(v.size());
    if (static_cast<int>(v.size()) != w.dim_)
      throw Error("word vectors", path + ": word '" + it.key() + "' has " +
                                      std::to_string(v.size()) + " values, expected " +
                                      std::to_string(w.dim_));
    for (const auto& x : v) {
      if (!x.is_number())
        throw Error("word vectors",
                    path + ": word '" + it.key() + "': non-numeric value " + json_excerpt(x));
      w.data_.push_back(x.get<float>());
    }
    normalise_row(w.data_.data() + w.data_.size() - w.dim_, w.dim_);
    w.index_.emplace(it.key(), static_cast<int>(w.index_.size()));
  }
  return w;
}

int WordVectors::find(const std::string& word) const {
  auto it = index_.find(word);
  return it == index_.end() ? -1 : it->second;
}

StaticEncoder::StaticEncoder(const WordVectors& vectors, OovPolicy oov) : v_(vectors), oov_(oov) {}

std::string StaticEncoder::describe() const {
  return "static:" + v_.source() + (oov_ == OovPolicy::Match ? "#oov=match" : "#oov=skip");
}

EncodedText StaticEncoder::encode(std::string_view text) {
  EncodedText out;
  out.dim = v_.dim();
  for (const text::TextSpan& sp : text::split_words(text)) {
    std::string_view w = text.substr(sp.begin, sp.size());
    std::vector<std::string> keys = word_keys(w);
    if (keys.empty()) continue;  // pure punctuation
    ++out.words;
    int row = -1;
    std::string key;
    for (const auto& k : keys)
      if ((row = v_.find(k)) >= 0) {
        key = k;
        break;
      }
    Token t{std::string(w), row >= 0 ? key : keys.back(), sp, -1};
    if (row >= 0) {
      t.vec = static_cast<int>(out.vectors.size() / out.dim);
      out.vectors.insert(out.vectors.end(), v_.row(row), v_.row(row) + out.dim);
    } else {
      ++out.oov;
      if (oov_ == OovPolicy::Skip) continue;
    }
    out.tokens.push_back(std::move(t));
  }
  return out;
}

std::vector<text::TextSpan> align_pieces(std::string_view text,
                                         const std::vector<std::string>& pieces) {
  std::vector<text::TextSpan> spans;
  size_t cur = 0;
  for (const std::string& p0 : pieces) {
    std::string_view p = p0;
    // Strip a leading space marker: ' ', "▁" (E2 96 81), "Ġ" (C4 A0).
    while (!p.empty()) {
      if (p[0] == ' ')
        p.remove_prefix(1);
      else if (p.starts_with("\xE2\x96\x81"))
        p.remove_prefix(3);
      else if (p.starts_with("\xC4\xA0"))
        p.remove_prefix(2);
      else
        break;
    }
    size_t at = p.empty() ? std::string_view::npos : text.find(p, cur);
    // Only accept a match that skips nothing but whitespace (a later occurrence is not this piece).
    if (at != std::string_view::npos) {
      for (size_t i = cur; i < at; ++i)
        if (!std::isspace(static_cast<unsigned char>(text[i]))) {
          at = std::string_view::npos;
          break;
        }
    }
    if (at == std::string_view::npos) {
      spans.push_back({cur, cur});
      continue;
    }
    spans.push_back({at, at + p.size()});
    cur = at + p.size();
  }
  return spans;
}

HiddenEncoder::HiddenEncoder(reader::Reader& r, int layer) : r_(r), layer_(layer) {}

std::string HiddenEncoder::describe() const {
  return "hidden:" + r_.describe() + "#layer=" + std::to_string(layer_);
}

EncodedText HiddenEncoder::encode(std::string_view text) {
  reader::HiddenResult h = r_.hidden(std::string(text), layer_);
  EncodedText out;
  out.dim = h.n_embd;
  if (h.states.size() != h.pieces.size() * static_cast<size_t>(h.n_embd))
    throw Error("hidden encoder", "reader returned " + std::to_string(h.states.size()) +
                                      " values for " + std::to_string(h.pieces.size()) +
                                      " tokens of width " + std::to_string(h.n_embd));
  std::vector<text::TextSpan> spans = align_pieces(text, h.pieces);
  for (size_t t = 0; t < spans.size(); ++t) {
    if (spans[t].size() == 0) continue;
    std::string_view s = text.substr(spans[t].begin, spans[t].size());
    bool word = false;
    for (unsigned char c : s) word |= !(std::isspace(c) || is_punct_byte(c));
    if (!word) continue;
    ++out.words;
    Token tok{std::string(s), lower_ascii(s), spans[t],
              static_cast<int>(out.vectors.size() / out.dim)};
    const float* src = h.states.data() + t * h.n_embd;
    out.vectors.insert(out.vectors.end(), src, src + h.n_embd);
    normalise_row(out.vectors.data() + out.vectors.size() - out.dim, out.dim);
    out.tokens.push_back(std::move(tok));
  }
  return out;
}

}  // namespace ragform::spotlight

// Token encoders for SpotlightRAG (see encoder.h for the OOV rule and the piece alignment).
#include "pipelines/spotlight/encoder.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/excerpt.h"
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
    for (float x : vec)
      if (!std::isfinite(x))
        throw Error("word vectors", "word '" + excerpt(word) + "' has a value that is not finite");
    w.index_.emplace(word, static_cast<int>(w.index_.size()));
    w.data_.insert(w.data_.end(), vec.begin(), vec.end());
    normalise_row(w.data_.data() + w.data_.size() - w.dim_, w.dim_);
  }
  return w;
}

namespace {

// Builds a table from `{word: [numbers], ...}` as the parser reads it, holding no tree: each row
// goes straight into the table's floats (a 100 MB file held 5.1 GB as a tree, issue 40 A5). A
// word given twice is refused by the parse, as a key twice in any JSON object (base/json_file.h).
class WordVectorsReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  WordVectorsReader(const std::string& path, std::vector<float>& data,
                    std::unordered_map<std::string, int>& index, int& dim)
      : path_(path), data_(data), index_(index), dim_(dim) {}
  bool null() override { return value("null"); }
  bool boolean(bool b) override { return value(b ? "true" : "false"); }
  bool number_integer(number_integer_t n) override { return number(static_cast<float>(n)); }
  bool number_unsigned(number_unsigned_t n) override { return number(static_cast<float>(n)); }
  bool number_float(number_float_t x, const string_t&) override {
    return number(static_cast<float>(x));
  }
  bool string(string_t& s) override { return value(json_excerpt(s)); }
  bool binary(binary_t&) override { return value("binary data"); }
  bool start_object(std::size_t) override {
    if (depth_ != 0) return value("an object");
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    word_ = std::move(k);
    return true;
  }
  bool end_object() override {
    if (--depth_ == 0 && index_.empty()) refuse("expected a non-empty object {word: [floats]}");
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) refuse("expected a non-empty object {word: [floats]}");
    if (depth_ != 1) return value("an array");
    ++depth_;
    row_start_ = data_.size();
    return true;
  }
  bool end_array() override {
    --depth_;
    const size_t n = data_.size() - row_start_;
    if (n == 0) refuse("word '" + excerpt(word_) + "': expected a non-empty array of numbers");
    if (dim_ == 0) dim_ = static_cast<int>(n);
    if (n != size_t(dim_))
      refuse("word '" + excerpt(word_) + "' has " + std::to_string(n) + " values, expected " +
             std::to_string(dim_));
    normalise_row(data_.data() + row_start_, dim_);
    const auto [it, added] = index_.emplace(word_, static_cast<int>(index_.size()));
    if (!added) {  // the last row of a repeated word wins; its first row's place takes it
      std::copy(data_.begin() + std::ptrdiff_t(row_start_), data_.end(),
                data_.begin() + std::ptrdiff_t(size_t(it->second) * size_t(dim_)));
      data_.resize(row_start_);
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;  // parse_json_text reports it, with its line and column
  }

 private:
  [[noreturn]] void refuse(const std::string& why) {
    throw Error("word vectors", path_ + ": " + why);
  }
  bool number(float x) {
    if (depth_ != 2) return value("a number");
    // A value beyond float's range (1e39) would be inf here and NaN in every similarity.
    if (!std::isfinite(x))
      refuse("word '" + excerpt(word_) + "': value out of float range (at most about 3.4e38)");
    data_.push_back(x);
    return true;
  }
  // Anything but a number inside a row, or anything but a row under a word.
  bool value(const std::string& what) {
    if (depth_ == 0) refuse("expected a non-empty object {word: [floats]}");
    if (depth_ == 1) refuse("word '" + excerpt(word_) + "': expected a non-empty array of numbers");
    refuse("word '" + excerpt(word_) + "': non-numeric value " + what);
  }
  const std::string& path_;
  std::vector<float>& data_;
  std::unordered_map<std::string, int>& index_;
  int& dim_;
  int depth_ = 0;
  std::string word_;
  size_t row_start_ = 0;
};

}  // namespace

WordVectors WordVectors::load(const std::string& path) {
  // Word vectors may be far bigger than a profile (GloVe 300d is ~1 GB as JSON), so their bound is
  // kMaxWordVectorsBytes, not the 64 MiB of other JSON files; /dev/zero still ends.
  WordVectors w;
  w.source_ = path;
  WordVectorsReader reader(path, w.data_, w.index_, w.dim_);
  read_json_file(path, "word vectors", reader, kMaxWordVectorsBytes);
  w.data_.shrink_to_fit();
  return w;
}

WordVectors WordVectors::parse(std::string_view json_text, const std::string& source) {
  WordVectors w;
  w.source_ = source;
  WordVectorsReader reader(source, w.data_, w.index_, w.dim_);
  try {
    parse_json_text(json_text, reader);
  } catch (const JsonTextError& e) {
    throw Error("word vectors", source + ": " + e.what());
  }
  w.data_.shrink_to_fit();
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

#include "pipelines/cnorm/format.h"

#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/options.h"
#include "text/sentences.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace ragform::cnorm {

Delimiter original_delimiter() { return {"original", "", true}; }

const std::vector<Delimiter>& default_delimiters() {
  static const std::vector<Delimiter> d = {
      original_delimiter(),     {"none", ""}, {"-", "-"}, {"_", "_"}, {":", ":"}, {".", "."},
      {"\xC2\xB7", "\xC2\xB7"}, {"~", "~"},   {"+", "+"}, {"/", "/"}, {"&", "&"}};
  return d;
}

std::string default_delimiter_list() {
  std::string s;
  for (const auto& d : default_delimiters()) s += (s.empty() ? "" : ",") + d.name;
  return s;
}

namespace {
// A text that is not UTF-8, quoted with its bytes past ASCII as \xNN (pass 19: the raw 0xFF was
// written to the terminal); controls escaped as every quote is (base/excerpt.h printable).
std::string bytes_escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x80) {
      out += printable(std::string_view(&c, 1));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", b);
      out += buf;
    }
  }
  return out;
}
}  // namespace

Delimiter parse_delimiter(std::string_view token) {
  if (token.empty())
    throw OptionError("delims", "empty delimiter (write 'none' for the empty delimiter)");
  if (token == "original") return original_delimiter();
  if (token == "none") return {"none", ""};
  if (token == "comma") return {",", ","};
  if (token.size() > kMaxDelimiterBytes)
    throw OptionError("delims", "delimiter '" + excerpt(token, 2 * kMaxDelimiterBytes) +
                                    "' is longer than " + std::to_string(kMaxDelimiterBytes) +
                                    " bytes");
  size_t bad = 0;
  if (!text::is_valid_utf8(token, &bad))
    throw OptionError("delims", "delimiter '" + bytes_escaped(token) + "' is not valid UTF-8");
  for (uint32_t cp : text::decode_utf8(token))
    if (text::is_space(cp))
      throw OptionError("delims", "delimiter '" + printable(token) + "' contains whitespace");
  return {std::string(token), std::string(token)};
}

std::vector<Delimiter> parse_delimiter_list(std::string_view list) {
  std::vector<Delimiter> out;
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    Delimiter d = parse_delimiter(list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (!seen.insert(d.name).second)
      throw OptionError("delims", "delimiter '" + d.name + "' given twice");
    out.push_back(std::move(d));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

uint64_t document_seed(uint64_t seed, std::string_view text) { return derive_seed(seed, text); }

std::vector<size_t> seeded_permutation(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (size_t i = n; i-- > 1;) std::swap(order[i], order[size_t(rng() % uint64_t(i + 1))]);
  return order;
}

void validate_p(double p, const std::string& name) {
  if (p >= 0.0 && p <= 1.0) return;
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", p);
  throw UsageError(name, std::string("must be in [0, 1], got ") + buf);
}

std::vector<size_t> choose_sentences(size_t n, double p, uint64_t doc_seed) {
  validate_p(p);
  size_t m = size_t(std::floor(p * double(n) + 0.5));
  if (m > n) m = n;
  std::vector<size_t> order = seeded_permutation(n, doc_seed);
  std::set<size_t> chosen(order.begin(), order.begin() + std::ptrdiff_t(m));
  return {chosen.begin(), chosen.end()};
}

std::string join_words(std::string_view text, std::string_view delim) {
  std::string out;
  bool first = true;
  for (const auto& w : text::split_words(text)) {
    if (!first) out += delim;
    out += text.substr(w.begin, w.size());
    first = false;
  }
  return out;
}

std::string format_document(std::string_view text, std::string_view delim, double p,
                            uint64_t seed) {
  auto sentences = text::split_sentences(text);
  auto chosen = choose_sentences(sentences.size(), p, document_seed(seed, text));
  std::string out;
  out.reserve(text.size());
  size_t pos = 0, c = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const auto& s = sentences[i];
    out += text.substr(pos, s.span.begin - pos);
    if (c < chosen.size() && chosen[c] == i) {
      out += join_words(s.text, delim);
      ++c;
    } else {
      out += s.text;
    }
    pos = s.span.end;
  }
  out += text.substr(pos);
  return out;
}

std::string format_uuid(std::string_view s, std::string_view delim) {
  std::string out;
  for (char ch : s) {
    if (ch == '-')
      out += delim;
    else
      out += ch;
  }
  return out;
}

}  // namespace ragform::cnorm

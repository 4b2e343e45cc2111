#include "text/sentences.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "text/unicode.h"
#include "text/utf8.h"

namespace ragform::text {

namespace {

struct Cp {
  uint32_t c;
  size_t pos;  // byte offset
  size_t len;  // byte length
};

std::vector<Cp> decode(std::string_view s) {
  std::vector<Cp> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    uint32_t c = decode_utf8_at(s, i, &len);
    out.push_back({c, i, len});
    i += len;
  }
  return out;
}

bool is_terminator(uint32_t c) { return c == '.' || c == '!' || c == '?' || c == 0x2026; }
bool is_cjk_stop(uint32_t c) { return c == 0x3002 || c == 0xFF01 || c == 0xFF1F; }
bool is_closer(uint32_t c) {
  return c == '"' || c == '\'' || c == ')' || c == ']' || c == '}' || c == 0x201D || c == 0x2019 ||
         c == 0xBB || c == 0x300D || c == 0x300F;
}
bool is_opener(uint32_t c) {
  return c == '"' || c == '\'' || c == '(' || c == '[' || c == '{' || c == 0x201C || c == 0x2018 ||
         c == 0xAB || c == 0x300C || c == 0x300E;
}
bool is_bullet_mark(uint32_t c) {
  return c == '-' || c == '*' || c == '+' || c == 0x2022 || c == 0x2023 || c == 0x25E6 ||
         c == 0x25AA || c == 0x2013;
}
bool is_ascii_letter(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Abbreviations after which a sentence never ends (rule 3, first class).
constexpr std::string_view kContinue[] = {
    "Mr",  "Mrs",  "Ms",   "Mx",   "Messrs", "Dr",   "Prof", "Rev",   "Revd", "Hon", "Gen",
    "Col", "Capt", "Cpt",  "Lt",   "Sgt",    "Maj",  "Adm",  "Cmdr",  "Cdr",  "Gov", "Sen",
    "Rep", "Pres", "Supt", "Insp", "Msgr",   "Atty", "vs",   "Vs",    "v",    "cf",  "Cf",
    "e.g", "i.e",  "E.g",  "I.e",  "viz",    "Drs",  "Det",  "a.k.a", "aka"};

// Abbreviations that may end a sentence (rule 3, second class).
constexpr std::string_view kMayEndAbbrev[] = {
    "Inc",  "Ltd",    "Co",     "Corp", "Bros", "Jr",    "Sr",   "St",   "Mt",  "Ft",   "Ave",
    "Blvd", "Rd",     "Esq",    "Univ", "Dept", "Assn",  "etc",  "al",   "Jan", "Feb",  "Mar",
    "Apr",  "Jun",    "Jul",    "Aug",  "Sep",  "Sept",  "Oct",  "Nov",  "Dec", "No",   "Nos",
    "no",   "nos",    "Vol",    "Vols", "vol",  "vols",  "Fig",  "Figs", "fig", "figs", "Eq",
    "Eqs",  "eq",     "pp",     "p",    "Ch",   "ch",    "Sec",  "sec",  "Art", "art",  "Op",
    "op",   "ca",     "approx", "est",  "c",    "b",     "d",    "fl",   "lit", "tr",   "translit",
    "Ste",  "colloq", "subsp",  "ed",   "eds",  "trans", "ibid", "cit",  "Pt",  "pt"};

// Capitalised words that commonly open an English sentence; after a "may end" abbreviation or
// an initial, only these make a boundary.
constexpr std::string_view kOpeners[] = {
    "The",         "A",         "An",           "This",      "That",
    "These",       "Those",     "There",        "Here",      "He",
    "She",         "It",        "They",         "We",        "You",
    "His",         "Her",       "Its",          "Their",     "Our",
    "My",          "Your",      "In",           "On",        "At",
    "As",          "By",        "For",          "From",      "With",
    "After",       "Before",    "During",       "Since",     "Until",
    "When",        "While",     "Where",        "What",      "Who",
    "Which",       "How",       "Why",          "Although",  "Though",
    "However",     "But",       "And",          "Or",        "So",
    "Yet",         "Then",      "Thus",         "Also",      "Many",
    "Most",        "Some",      "Several",      "Both",      "Each",
    "All",         "One",       "If",           "Because",   "To",
    "Of",          "Other",     "Such",         "Following", "Today",
    "Later",       "Despite",   "Under",        "Over",      "Between",
    "Among",       "According", "Unlike",       "Meanwhile", "Nevertheless",
    "Furthermore", "Moreover",  "Additionally", "Another",   "Currently",
    "Originally"};

template <size_t N>
bool contains(const std::string_view (&set)[N], std::string_view w) {
  return std::find(std::begin(set), std::end(set), w) != std::end(set);
}

enum class Kind { kNeverEnds, kMayEnd, kOrdinary };

// Dotted letter groups: two or more segments of 1-2 ASCII letters joined by '.', e.g. "U.S",
// "a.m", "Ph.D" (the final '.' is the candidate terminator and not part of the token).
bool is_dotted(std::string_view t) {
  size_t segs = 0, run = 0;
  for (char ch : t) {
    if (ch == '.') {
      if (run == 0 || run > 2) return false;
      ++segs;
      run = 0;
    } else if (is_ascii_letter(static_cast<unsigned char>(ch))) {
      ++run;
    } else {
      return false;
    }
  }
  return segs >= 1 && run >= 1 && run <= 2;
}

Kind classify(const std::vector<Cp>& cps, size_t t0, size_t t1, std::string_view src) {
  if (t0 >= t1) return Kind::kOrdinary;
  std::string_view tok = src.substr(cps[t0].pos, cps[t1 - 1].pos + cps[t1 - 1].len - cps[t0].pos);
  if (contains(kContinue, tok)) return Kind::kNeverEnds;
  if (contains(kMayEndAbbrev, tok)) return Kind::kMayEnd;
  if (t1 - t0 == 1 && is_upper(cps[t0].c)) return Kind::kMayEnd;  // an initial
  if (is_dotted(tok)) return Kind::kMayEnd;
  return Kind::kOrdinary;
}

class Splitter {
 public:
  Splitter(std::string_view src, std::vector<Sentence>* out)
      : src_(src), cps_(decode(src)), out_(out) {}

  void run() {
    enum class Prev { kBlank, kBullet, kNormal } prev = Prev::kBlank;
    size_t block = kNone, block_end = 0;
    auto close = [&] {
      if (block != kNone) split_block(block, block_end);
      block = kNone;
    };
    size_t n = cps_.size();
    for (size_t ls = 0; ls <= n;) {
      size_t le = ls;
      while (le < n && cps_[le].c != '\n') ++le;
      size_t first = ls;
      while (first < le && is_space(cps_[first].c)) ++first;
      size_t content;
      if (first == le) {
        close();
        prev = Prev::kBlank;
      } else if ((content = bullet_content(first, le)) != kNone) {
        close();
        block = content;
        block_end = le;
        prev = Prev::kBullet;
      } else {
        if (prev != Prev::kNormal) {
          close();
          block = first;
        }
        block_end = le;
        prev = Prev::kNormal;
      }
      if (le >= n) break;
      ls = le + 1;
    }
    close();
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  // Index where the item text of a bullet line starts, or kNone if [first, le) is no bullet line.
  size_t bullet_content(size_t first, size_t le) const {
    size_t m = first;
    if (is_bullet_mark(cps_[m].c)) {
      ++m;
    } else {
      while (m < le && m - first < 3 && is_ascii_digit(cps_[m].c)) ++m;
      if (m == first || m >= le || (cps_[m].c != '.' && cps_[m].c != ')')) return kNone;
      ++m;
    }
    if (m >= le || !is_space(cps_[m].c)) return kNone;
    while (m < le && is_space(cps_[m].c)) ++m;
    return m < le ? m : kNone;
  }

  void emit(size_t b, size_t e) {
    while (b < e && is_space(cps_[b].c)) ++b;
    while (e > b && is_space(cps_[e - 1].c)) --e;
    if (b == e) return;
    size_t begin = cps_[b].pos, end = cps_[e - 1].pos + cps_[e - 1].len;
    out_->push_back({std::string(src_.substr(begin, end - begin)), {begin, end}});
  }

  // Rule 3: does the terminator run [i, j), closed at k (whitespace follows), end a sentence?
  bool boundary(size_t b, size_t i, size_t j, size_t k, size_t e) const {
    size_t n = k;
    while (n < e && is_space(cps_[n].c)) ++n;
    bool bracket = n < e && (cps_[n].c == '(' || cps_[n].c == '[');
    while (n < e && is_opener(cps_[n].c)) ++n;
    if (n >= e) return true;
    uint32_t c = cps_[n].c;
    if (is_lower(c)) return false;
    // `"Moulin Rouge!" (2001)`: a bracket after ! ? or an ellipsis continues the sentence.
    if (!(j - i == 1 && cps_[i].c == '.')) return !bracket;
    switch (classify(cps_, token_start(b, i), i, src_)) {
      case Kind::kNeverEnds:
        return false;
      case Kind::kMayEnd: {
        if (is_ascii_digit(c)) return false;
        size_t w = n;
        while (w < e && is_ascii_letter(cps_[w].c)) ++w;
        if (w == n) return false;
        if (w - n == 1 && w < e && cps_[w].c == '.') return false;  // another initial
        std::string_view word = src_.substr(cps_[n].pos, cps_[w - 1].pos + 1 - cps_[n].pos);
        return contains(kOpeners, word);
      }
      case Kind::kOrdinary:
        break;
    }
    return true;
  }

  // First index of the whitespace-delimited token ending at i, without opening quotes/brackets.
  size_t token_start(size_t b, size_t i) const {
    size_t t0 = i;
    while (t0 > b && !is_space(cps_[t0 - 1].c)) --t0;
    while (t0 < i && is_opener(cps_[t0].c)) ++t0;
    return t0;
  }

  // Rule 5: a '.' at i glued to a capitalised word ("Africanism.The first"). The token before
  // must be an ordinary word of 3+ characters without other dots ending in a lowercase letter or
  // digit, and the word after a capital then a lowercase letter, with no further dot in it
  // (so "ASP.NET", "e.g.For" and "www.Google.com" do not split).
  bool glued_boundary(size_t b, size_t i, size_t e) const {
    size_t k = i + 1;
    if (k + 1 >= e || !is_upper(cps_[k].c) || !is_lower(cps_[k + 1].c)) return false;
    if (i == b || !(is_lower(cps_[i - 1].c) || is_ascii_digit(cps_[i - 1].c))) return false;
    size_t t0 = token_start(b, i);
    if (i - t0 < 3) return false;
    for (size_t t = t0; t < i; ++t)
      if (cps_[t].c == '.') return false;
    for (size_t t = k; t < e && !is_space(cps_[t].c); ++t)
      if (cps_[t].c == '.' && t + 1 < e && !is_space(cps_[t + 1].c)) return false;
    return classify(cps_, t0, i, src_) == Kind::kOrdinary;
  }

  void split_block(size_t b, size_t e) {
    size_t sent = b;
    for (size_t i = b; i < e;) {
      uint32_t c = cps_[i].c;
      if (is_cjk_stop(c)) {
        size_t k = i + 1;
        while (k < e && is_closer(cps_[k].c)) ++k;
        emit(sent, k);
        sent = i = k;
      } else if (is_terminator(c)) {
        size_t j = i;
        while (j < e && is_terminator(cps_[j].c)) ++j;
        // A spaced ellipsis ". . ." is one terminator run.
        while (c == '.' && j + 1 < e && cps_[j - 1].c == '.' && cps_[j].c == ' ' &&
               cps_[j + 1].c == '.') {
          j += 2;
        }
        size_t k = j;
        while (k < e && is_closer(cps_[k].c)) ++k;
        bool glued = j == i + 1 && k == j && c == '.' && glued_boundary(b, i, e);
        if (k == e || glued || (is_space(cps_[k].c) && boundary(b, i, j, k, e))) {
          emit(sent, k);
          sent = k;
        }
        i = k;
      } else {
        ++i;
      }
    }
    emit(sent, e);
  }

  std::string_view src_;
  std::vector<Cp> cps_;
  std::vector<Sentence>* out_;
};

}  // namespace

std::vector<Sentence> split_sentences(std::string_view passage) {
  std::vector<Sentence> out;
  Splitter(passage, &out).run();
  return out;
}

std::vector<TextSpan> split_words(std::string_view text) {
  std::vector<TextSpan> out;
  size_t start = 0;
  bool in_word = false;
  for (size_t i = 0; i < text.size();) {
    size_t len;
    uint32_t c = decode_utf8_at(text, i, &len);
    if (is_space(c)) {
      if (in_word) out.push_back({start, i});
      in_word = false;
    } else if (!in_word) {
      start = i;
      in_word = true;
    }
    i += len;
  }
  if (in_word) out.push_back({start, text.size()});
  return out;
}

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  for (const TextSpan& s : split_words(text)) out.emplace_back(text.substr(s.begin, s.size()));
  return out;
}

}  // namespace ragform::text

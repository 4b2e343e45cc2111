#include "text/unicode.h"

#include "text/unicode_db.h"

#include "text/utf8.h"

namespace ragform::text {

namespace {
// Base letters of U+00C0..U+017F (derived from the Unicode canonical decompositions, plus the
// expansions documented in unicode.h); nullptr where the code point is not a letter.
constexpr const char* kLatinFold[0x180 - 0xC0] = {
    "A", "A", "A",  "A",  "A", "A", "AE", "C",     "E", "E", "E", "E", "I", "I", "I",  "I",
    "D", "N", "O",  "O",  "O", "O", "O",  nullptr, "O", "U", "U", "U", "U", "Y", "TH", "ss",
    "a", "a", "a",  "a",  "a", "a", "ae", "c",     "e", "e", "e", "e", "i", "i", "i",  "i",
    "d", "n", "o",  "o",  "o", "o", "o",  nullptr, "o", "u", "u", "u", "u", "y", "th", "y",
    "A", "a", "A",  "a",  "A", "a", "C",  "c",     "C", "c", "C", "c", "C", "c", "D",  "d",
    "D", "d", "E",  "e",  "E", "e", "E",  "e",     "E", "e", "E", "e", "G", "g", "G",  "g",
    "G", "g", "G",  "g",  "H", "h", "H",  "h",     "I", "i", "I", "i", "I", "i", "I",  "i",
    "I", "i", "IJ", "ij", "J", "j", "K",  "k",     "k", "L", "l", "L", "l", "L", "l",  "L",
    "l", "L", "l",  "N",  "n", "N", "n",  "N",     "n", "n", "N", "n", "O", "o", "O",  "o",
    "O", "o", "OE", "oe", "R", "r", "R",  "r",     "R", "r", "S", "s", "S", "s", "S",  "s",
    "S", "s", "T",  "t",  "T", "t", "T",  "t",     "U", "u", "U", "u", "U", "u", "U",  "u",
    "U", "u", "U",  "u",  "W", "w", "Y",  "y",     "Y", "Z", "z", "Z", "z", "Z", "z",  "s"};

// U+01CD..U+01DC: A a I i O o U u, then U-with-diaeresis variants (all fold to U u).
constexpr const char* kPinyinFold[0x1DD - 0x1CD] = {"A", "a", "I", "i", "O", "o", "U", "u",
                                                    "U", "u", "U", "u", "U", "u", "U", "u"};

}  // namespace

bool is_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_default_ignorable(uint32_t cp) {
  // The property's ranges, in order.
  static constexpr uint32_t kRanges[][2] = {
      {0x00AD, 0x00AD},   {0x034F, 0x034F},  {0x061C, 0x061C}, {0x115F, 0x1160}, {0x17B4, 0x17B5},
      {0x180B, 0x180F},   {0x200B, 0x200F},  {0x202A, 0x202E}, {0x2060, 0x206F}, {0x3164, 0x3164},
      {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},  {0xFFA0, 0xFFA0}, {0xFFF0, 0xFFF8}, {0x1BCA0, 0x1BCA3},
      {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF}};
  if (cp < 0xAD) return false;
  for (const auto& r : kRanges) {
    if (cp < r[0]) return false;
    if (cp <= r[1]) return true;
  }
  return false;
}

bool is_combining_mark(uint32_t cp) { return cp >= 0x300 && cp <= 0x36F; }

uint32_t to_lower(uint32_t cp) {
  // Unicode's simple lowercase mapping (text/unicode_db.h), except U+0130 (I with dot above),
  // whose full lowercase is "i" + U+0307: answer matching wants the plain 'i'.
  if (cp == 0x130) return 'i';
  return cp_tolower(cp);
}

bool is_lower(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  if (cp < 0x100) return cp == 0xB5 || (cp >= 0xDF && cp != 0xF7);
  if (cp < 0x250) return to_lower(cp) == cp;  // Latin Extended-A/B: every code point a letter
  if (cp == 0x390 || (cp >= 0x3AC && cp <= 0x3CE)) return true;
  if (cp >= 0x430 && cp <= 0x45F) return true;
  if (cp >= 0x1E00 && cp <= 0x1EFF) return to_lower(cp) == cp;
  return cp >= 0xFF41 && cp <= 0xFF5A;
}

void append_fold_accent(std::string& out, uint32_t cp) {
  const char* f = nullptr;
  if (cp >= 0xC0 && cp < 0x180)
    f = kLatinFold[cp - 0xC0];
  else if (cp >= 0x1CD && cp <= 0x1DC)
    f = kPinyinFold[cp - 0x1CD];
  else if (cp == 0x1A0 || cp == 0x1A1)
    f = cp == 0x1A0 ? "O" : "o";
  else if (cp == 0x1AF || cp == 0x1B0)
    f = cp == 0x1AF ? "U" : "u";
  else if (cp >= 0x218 && cp <= 0x21B)
    f = cp == 0x218 ? "S" : cp == 0x219 ? "s" : cp == 0x21A ? "T" : "t";
  if (f)
    out += f;
  else
    append_utf8(out, cp);
}

void append_fold_compat(std::u32string& out, uint32_t cp) {
  if (cp >= 0xFF01 && cp <= 0xFF5E) {
    out += char32_t(cp - 0xFEE0);
  } else if (cp >= 0xFB00 && cp <= 0xFB06) {
    static constexpr const char* kLig[] = {"ff", "fi", "fl", "ffi", "ffl", "st", "st"};
    for (const char* p = kLig[cp - 0xFB00]; *p; ++p) out += char32_t(*p);
  } else if (cp == 0xB9 || cp == 0xB2 || cp == 0xB3) {
    out += char32_t(cp == 0xB9 ? '1' : cp == 0xB2 ? '2' : '3');
  } else if (cp == 0x2026) {
    out += U"...";
  } else {
    out += char32_t(cp);
  }
}

}  // namespace ragform::text

// Answer normalisation for QA metrics, after the SQuAD v1.1 evaluation script's
// normalize_answer (also used verbatim by lost-in-the-middle's metrics.py):
//   lower(s) -> remove punctuation -> replace the articles a/an/the by a space -> collapse
//   whitespace to single spaces (and trim).
// Precisely, normalize_answer(s, options) does, in this order:
//  0. Invalid UTF-8 is repaired first (text/utf8.h rule: each maximal invalid subpart -> U+FFFD).
//  1. fold_compat (default on): "NFKC-ish" compatibility folding of unicode.h (fullwidth ASCII,
//     Latin ligatures, superscript 1/2/3, U+2026 -> "..."), and removal of invisible format
//     characters (soft hyphen, zero-width space/joiners, word joiner, BOM).
//  2. Lowercase with the unicode.h table (ASCII, Latin-1, Latin Extended-A and common
//     Extended-B/Additional letters, Greek, Cyrillic). Python's str.lower() covers all of Unicode;
//     outside these scripts ours leaves letters unchanged (documented difference).
//  3. fold_accents (default on): combining marks U+0300..036F are dropped and precomposed Latin
//     letters map to base letters (é -> e, ß -> ss, æ -> ae, ł -> l; table in unicode.h).
//  4. Punctuation is deleted (not replaced by a space, as in SQuAD: "U.S." -> "us",
//     "don't" -> "dont"): always Python's string.punctuation (ASCII
//     !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~, which includes the ASCII symbols $+<=>^`|~); with
//     unicode_punctuation (default on) also every code point of general category P* (PCRE2 \p{P}: “
//     ” ‘ ’ « » – — … ¿ ¡ · 、 。 ...). Non-ASCII symbols (€, °, ©, ½) are kept, as in SQuAD.
//  5. Whole words "a", "an", "the" (Unicode word boundaries, PCRE2 UCP \b like Python's regex
//     module) are replaced by a space.
//  6. Runs of whitespace (Python str.isspace set, see unicode.h) become one space; leading and
//     trailing whitespace is removed.
// kSquadReference turns 1, 3 and the Unicode part of 4 off: it then equals the Python function
// on every input whose letters lie in the covered scripts.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ragform::text {

struct NormalizeOptions {
  bool fold_compat = true;          // step 1
  bool fold_accents = true;         // step 3
  bool unicode_punctuation = true;  // step 4, Unicode part
};
inline constexpr NormalizeOptions kSquadReference{false, false, false};

std::string normalize_answer(std::string_view s, const NormalizeOptions& options = {});
// normalize_answer(s) split on its single spaces (SQuAD's get_tokens); empty for empty input.
std::vector<std::string> normalized_tokens(std::string_view s,
                                           const NormalizeOptions& options = {});

}  // namespace ragform::text

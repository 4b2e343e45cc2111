// Small, table-driven Unicode character properties for the text layer: whitespace, case mapping
// and accent folding for the scripts ragform's data actually contains. Full Unicode case mapping
// and normalisation need ICU, which is not a dependency; instead every table below is explicit
// and its coverage is documented, so a result never depends on the process locale.
//
// Coverage:
//  - is_space: exactly Python's str.isspace() set (the SQuAD/lost-in-the-middle scripts split on
//    it): U+0009..000D, U+001C..001F, U+0020, U+0085, U+00A0, U+1680, U+2000..200A, U+2028,
//    U+2029, U+202F, U+205F, U+3000.
//  - to_lower: Unicode's simple lowercase mapping for every code point (the generated database
//    of text/unicode_db.h, Unicode 14). U+0130 (I with dot) lowercases to plain 'i'.
//  - fold_accent: precomposed Latin letters of Latin-1, Latin Extended-A, U+01A0/01A1/01AF/01B0,
//    U+01CD..01DC, U+0218..021B map to their base letters, case preserved; ligatures and special
//    letters expand (AE/ae, OE/oe, IJ/ij, ss for U+00DF, TH/th for thorn, D/d for eth and
//    D-stroke, L/l for L-stroke, k for kra, s for long s). Combining marks (U+0300..036F) are
//    folded to nothing by the caller (is_combining_mark).
//  - fold_compat: the "NFKC-ish" part: fullwidth ASCII U+FF01..FF5E to ASCII, Latin ligatures
//    U+FB00..FB06 to letters, superscript digits 1/2/3 to digits, U+2026 to "...".
#pragma once
#include <cstdint>
#include <string>

namespace ragform::text {

bool is_space(uint32_t cp);
// Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15): code points a
// renderer shows as nothing when it does not support them — soft hyphen, zero-width space and
// joiners, direction marks and embeddings, word joiner and invisible operators, variation
// selectors, Hangul fillers, the BOM, tag characters and the reserved ranges beside them.
// Text compared for sameness drops them (a question with an added U+200E is the same question).
bool is_default_ignorable(uint32_t cp);
bool is_combining_mark(uint32_t cp);  // U+0300..036F

uint32_t to_lower(uint32_t cp);
// True for letters whose to_lower differs from themselves (within the coverage above).
inline bool is_upper(uint32_t cp) { return to_lower(cp) != cp; }
// True for lowercase letters of the covered scripts (a-z, Latin-1/Extended lowercase, Greek and
// Cyrillic small letters, U+00DF).
bool is_lower(uint32_t cp);
inline bool is_ascii_digit(uint32_t cp) { return cp >= '0' && cp <= '9'; }

// Appends the accent-folded form of cp to out (cp itself when the table has no entry).
void append_fold_accent(std::string& out, uint32_t cp);
// Appends the compatibility-folded form of cp to out as code points (cp itself when none).
void append_fold_compat(std::u32string& out, uint32_t cp);

}  // namespace ragform::text

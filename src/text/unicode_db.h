// The Unicode character database ragform needs, generated from Python's unicodedata (Unicode 14)
// by gen_unicode_tables.py so that nothing is downloaded: one general-category flag per code
// point plus the White_Space property, the simple lowercase mapping, and the first code point of
// each canonical decomposition. Used by the tokenizers (pre-tokenisation must split exactly where
// llama.cpp's unicode.cpp does) and by text/ (case folding for answer normalisation).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ragform::text {

enum CpFlag : uint16_t {
  kUndefined = 0x01,    // Cn (and anything above U+10FFFF)
  kNumber = 0x02,       // \p{N}
  kLetter = 0x04,       // \p{L}
  kSeparator = 0x08,    // \p{Z}
  kMark = 0x10,         // \p{M}
  kPunctuation = 0x20,  // \p{P}
  kSymbol = 0x40,       // \p{S}
  kControl = 0x80,      // \p{C} except Cn
  kWhitespace = 0x100,  // White_Space property
  kCategoryMask = 0xFF,
};

uint16_t cp_flags(uint32_t cp);
uint32_t cp_tolower(uint32_t cp);
// First code point of the canonical decomposition (cp itself when it has none).
uint32_t cp_nfd_first(uint32_t cp);

// One code point through BERT's normaliser as llama.cpp's WordPiece applies it: with
// strip_accents, the first code point of its canonical decomposition, and kBertDropped for a
// combining mark (dropped); with lowercase, then its simple lowercase. The tokenizer's words and
// Spotlight's search for a word's pieces in the text (pipelines/spotlight/model_encoder.cpp) fold
// by this one rule, so a word the tokenizer spelled is found where it came from.
inline constexpr uint32_t kBertDropped = 0xFFFFFFFFu;
uint32_t bert_fold(uint32_t cp, bool lowercase, bool strip_accents);

namespace unicode_data {
struct FlagRun {
  uint32_t first;
  uint16_t flags;
};
struct CodepointPair {
  uint32_t from, to;
};
extern const FlagRun kFlagRuns[];
extern const size_t kFlagRunsSize;
extern const CodepointPair kLowercase[];
extern const size_t kLowercaseSize;
extern const CodepointPair kNfdFirst[];
extern const size_t kNfdFirstSize;
}  // namespace unicode_data

}  // namespace ragform::text

// Code point properties and UTF-8 handling for the tokenizers, matching what llama.cpp's
// `unicode.cpp` computes so that pre-tokenisation splits text exactly where llama.cpp does:
//  - the code point database of text/unicode_db.h (category flags, White_Space, simple
//    lowercase, first code point of the NFD decomposition for WordPiece), re-exported here;
//  - llama.cpp's lenient UTF-8 decoder: an invalid lead or truncated sequence becomes U+FFFD and
//    consumes one byte; overlong forms and surrogates are decoded as-is (and re-encode to their
//    shortest form), so tokenisation never throws on arbitrary bytes;
//  - GPT-2's byte <-> printable-code-point mapping used by byte-level BPE vocabularies.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/unicode_db.h"

namespace ragform::tok {

// The code point database lives in text/unicode_db.h (shared with the text layer).
using text::cp_flags;
using text::cp_nfd_first;
using text::cp_tolower;
using text::CpFlag;
using text::kCategoryMask;
using text::kControl;
using text::kLetter;
using text::kMark;
using text::kNumber;
using text::kPunctuation;
using text::kSeparator;
using text::kSymbol;
using text::kUndefined;
using text::kWhitespace;

// Length of the UTF-8 sequence announced by lead byte c (1 for continuation/invalid bytes), as
// llama.cpp's unicode_len_utf8.
inline size_t utf8_len_from_lead(uint8_t c) {
  static const uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[c >> 4];
}

// Decodes one code point at s[*pos] leniently (see header comment) and advances *pos.
uint32_t decode_cpt(std::string_view s, size_t* pos);
std::vector<uint32_t> decode_cpts(std::string_view s);
// Encodes any code point <= 0x10FFFF (surrogates included, as llama.cpp does).
void append_cpt(std::string& out, uint32_t cp);

// GPT-2 byte-level mapping: every byte is shown as one printable code point (UTF-8 encoded).
const std::string& byte_to_unicode(uint8_t b);
// Inverse: the byte a code point stands for, or -1 when cp is not in the mapping.
int unicode_to_byte(uint32_t cp);

}  // namespace ragform::tok

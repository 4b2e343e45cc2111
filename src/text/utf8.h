// UTF-8 validation and repair. The documented rule for invalid input (used everywhere text enters
// ragform): each maximal invalid subsequence is replaced by U+FFFD, as in Unicode's "substitution
// of maximal subparts" (Unicode 15, section 3.9, U+FFFD practice), which is also what Python's
// bytes.decode(errors="replace") does. Overlong forms, surrogates (U+D800..DFFF) and code points
// above U+10FFFF are invalid.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ragform::text {

// True when `s` is valid UTF-8. On false, *bad_offset (if given) is the byte offset of the first
// invalid sequence.
bool is_valid_utf8(std::string_view s, size_t* bad_offset = nullptr);

// Why `line` is not UTF-8, its first invalid byte being at offset `bad`, in the words every
// reader of text files uses: "invalid UTF-8 at byte offset N of the line (byte 0xXX)", or, for a
// line that starts with a UTF-16 or UTF-32 byte-order mark, that the file is in that encoding.
std::string describe_invalid_utf8(std::string_view line, size_t bad);

// `s` with every maximal invalid subsequence replaced by U+FFFD (EF BF BD).
std::string repair_utf8(std::string_view s);

// Length in bytes of the valid UTF-8 sequence starting at s[i], or 0 if invalid / truncated.
size_t utf8_seq_len(std::string_view s, size_t i);

// Decodes valid UTF-8 into code points (invalid bytes decode as U+FFFD, one per maximal subpart).
std::vector<uint32_t> decode_utf8(std::string_view s);
// Decodes the code point starting at byte i (i < s.size()) and stores its length in *len. An
// invalid sequence decodes as U+FFFD with *len = the length of its maximal subpart (at least 1), so
// stepping by *len walks any byte string exactly as decode_utf8 does.
uint32_t decode_utf8_at(std::string_view s, size_t i, size_t* len);
// Appends the UTF-8 encoding of code point `cp` (cp must be <= 0x10FFFF and not a surrogate).
void append_utf8(std::string& out, uint32_t cp);
std::string encode_utf8(const std::vector<uint32_t>& cps);

}  // namespace ragform::text

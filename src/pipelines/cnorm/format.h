// C-NORM candidate formatting (cnorm-surface-formatting.txt, section 4.1): a candidate format is a
// delimiter f and a ratio p in [0, 1]; a fraction p of a document's sentences is reformatted by
// replacing the whitespace inside them with f, everything else (the other sentences and the text
// between sentences) is kept byte for byte.
//
// The paper does not say which sentences form "a fraction p"; this module's rule, exactly:
//  1. Sentences come from text::split_sentences (text/sentences.h); n = their number.
//  2. m = floor(p * n + 0.5) sentences are reformatted (round half up; p = 0 -> none, p = 1 ->
//  all).
//  3. The document seed is splitmix64(seed XOR fnv1a64(document bytes)) (document_seed()), so a
//     document is formatted the same way wherever it appears (calibration, deployment, every
//     position of an evaluation) and whatever documents come before it.
//  4. A std::mt19937_64 seeded with the document seed drives a Fisher-Yates shuffle of 0..n-1:
//     for i = n-1 down to 1: j = rng() % (i + 1); swap(order[i], order[j]). (Written out rather
//     than std::shuffle, whose use of the generator is library-specific.) The first m entries of
//     the shuffled order are the chosen sentences.
//  5. Inside a chosen sentence every maximal run of whitespace (Unicode White_Space, as
//     text::split_words) becomes one copy of f; sentence text has no leading/trailing whitespace.
// The delimiter "none" is the empty string: the words of a chosen sentence are concatenated (the
// paper's "Plain Text" for UUIDs).
//
// The candidate "original" (beyond the paper's F) is no delimiter at all: the document as it came,
// whatever p says, so calibration can only deploy a format that balances attention better than
// the unformatted text (format_text and longbench_prompt return the text unchanged for it).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/stable_hash.h"

namespace ragform::cnorm {

struct Delimiter {
  std::string name;       // as printed in profiles: "original", "none", "-", "_", ":", ".", ...
  std::string text;       // what replaces whitespace ("" for none and original)
  bool original = false;  // the unformatted document (name "original")
  bool operator==(const Delimiter&) const = default;
};

// The unformatted candidate.
Delimiter original_delimiter();

// The default candidate set: original, then the paper's F (section 4.1: none, -, _, :, \cdot, ~,
// +, /, &) with \cdot read both ways: '.' (5.3 reports LLaMA-2-7B preferring it) and '·'
// (U+00B7, the typeset middle dot): original, none, -, _, :, ., ·, ~, +, /, &.
const std::vector<Delimiter>& default_delimiters();
// The same as a --delims list ("original,none,-,...").
std::string default_delimiter_list();

// The longest delimiter accepted, in bytes. Every whitespace run of a chosen sentence becomes one
// copy, so a document's size grows by up to this factor over two: a 100 KB delimiter in a 240 KB
// /v1/rag/normalize or /v1/rag/present request built 7 GB (issue 40, second pass). The paper's
// delimiters are one character; 16 bytes leaves room for "<sep>", "[SEP]" or four CJK characters.
inline constexpr size_t kMaxDelimiterBytes = 16;

// One delimiter from the command line: "original" -> the unformatted candidate, "none" -> "",
// "comma" -> ",", anything else literally.
// Throws UsageError for an empty token, one longer than kMaxDelimiterBytes, invalid UTF-8 or a
// delimiter holding whitespace.
Delimiter parse_delimiter(std::string_view token);
// A comma-separated list ("none,-,&,comma,||"); duplicates (by name) are an error.
std::vector<Delimiter> parse_delimiter_list(std::string_view list);

// FNV-1a 64 and SplitMix64's finaliser: the project's stable hashes (base/stable_hash.h).
using ::ragform::fnv1a64;
using ::ragform::splitmix64_mix;
// Step 3 of the rule above.
uint64_t document_seed(uint64_t seed, std::string_view text);

// Step 4's seeded Fisher-Yates permutation of 0..n-1 (also used to sample prompts and distractors).
std::vector<size_t> seeded_permutation(size_t n, uint64_t seed);
// The one check of a ratio p (the share of sentences reformatted): a number in [0, 1], NaN not.
// UsageError "<name>: must be in [0, 1], got <p>" otherwise.
void validate_p(double p, const std::string& name = "cnorm: ratio p");

// Steps 2 and 4: the indices (ascending) of the sentences to reformat among n. Throws UsageError
// when p is outside [0, 1] or not a number (validate_p).
std::vector<size_t> choose_sentences(size_t n, double p, uint64_t doc_seed);

// Step 5 for one piece of text: every maximal whitespace run -> delim, leading/trailing
// whitespace dropped.
std::string join_words(std::string_view text, std::string_view delim);

// The whole rule: `text` with round(p * n) of its sentences reformatted with `delim`.
std::string format_document(std::string_view text, std::string_view delim, double p, uint64_t seed);

// Key-value extraction (Appendix B "Modified UUID"): every '-' of a UUID-like key or value
// becomes delim ("none" gives the paper's "Plain Text"). Sentence structure does not apply to a
// UUID, so p is not used for this task.
std::string format_uuid(std::string_view s, std::string_view delim);

}  // namespace ragform::cnorm

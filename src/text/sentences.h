// Rule-based sentence splitting and whitespace tokenisation. C-NORM (formats applied to a fraction
// of a document's sentences) and SpotlightRAG (sentence scores, annotated top-K sentences) both
// need sentences with exact byte spans into the original passage, so that a document can be
// rebuilt from its sentences and the text between them.
//
// Rules (applied to UTF-8 text; invalid bytes are kept as opaque non-space characters):
//  1. Lines. A line holding only whitespace is a blank line: it always ends the sentence before
//     it (paragraph break). A *bullet line* starts with optional spaces, a marker and a space:
//     `-`, `*`, `+`, `•` (U+2022), `‣` (U+2023), `◦` (U+25E6), `▪` (U+25AA), `–` (U+2013), or
//     1-3 digits followed by `.` or `)`. A bullet line always starts a new sentence, the marker is
//     left outside the sentence span, and the item ends at the end of its line (a following
//     line, bullet or not, starts a new sentence). A single newline between two ordinary lines
//     is a soft wrap: it counts as a space, so one sentence may span several lines (hard-wrapped
//     and PDF-extracted text breaks lines mid-sentence). Lines end at '\n' only; '\r' and the
//     Unicode line/paragraph separators count as whitespace.
//  2. Terminators. A run of `.`, `!`, `?`, `…` (U+2026) (a spaced ". . ." counts as one run),
//     followed by any closing quotes or brackets (" ' ” ’ » ) ] }), ends a sentence only if it is
//     followed by whitespace or the end of the text (so `3.14`, `$1.5`, `U.S.A.` inside a token
//     never split). The CJK stops `。！？` end a sentence with or without following whitespace.
//  3. The next word decides (skipping opening quotes/brackets): a lowercase letter never starts a
//     sentence (`Wait... what`, `"Stop!" he said`, `e.g. this`). Otherwise, after `!`, `?`, an
//     ellipsis or `..`, the sentence ends, unless an opening bracket follows
//     (`"Moulin Rouge!" (2001)`). After a single `.` it depends on the word before it:
//      - a title or connective abbreviation, always followed by more of the sentence (Mr, Mrs,
//        Ms, Mx, Messrs, Dr, Drs, Prof, Rev, Revd, Hon, Gen, Col, Capt, Lt, Sgt, Maj, Adm, Cmdr,
//        Gov, Sen, Rep, Pres, Supt, Insp, Msgr, Atty, Det, vs, v, cf, e.g, i.e, viz, a.k.a):
//        never a boundary;
//      - an abbreviation that may also end a sentence (Inc, Ltd, Co, Corp, Bros, Jr, Sr, St, Ste,
//        Mt, Ft, Ave, Blvd, Rd, etc, al, months Jan..Dec; numbered references No, Vol, Fig, Eq,
//        pp, p, Ch, Sec, Art, Op, Pt; c, ca, b, d, fl, approx, est, lit, tr, ed, ...; dotted
//        letter groups such as U.S, a.m, Ph.D) or a single capital initial (J. R. R. Tolkien):
//        never a boundary before a digit ("No. 5", "c. 1500"); otherwise a boundary only if the
//        next word is a common sentence opener (The, He, It, In, This, However, ...) that is not
//        itself an initial ("J. A. Smith");
//      - any other word: a boundary before an uppercase letter, a digit or any other character.
//  4. Glued full stop: a '.' directly followed by a capitalised word ("Africanism.The first")
//     ends a sentence when the token before is an ordinary word of 3+ characters without other
//     dots ending in a lowercase letter or digit, and the word after has no inner dot (so
//     "ASP.NET", "e.g.For", "www.Google.com" stay whole).
//  5. Each sentence is trimmed of surrounding whitespace; empty sentences are dropped. Spans are
//     byte offsets [begin, end) into the input, in order and non-overlapping.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ragform::text {

struct TextSpan {
  size_t begin = 0;  // byte offset of the first byte
  size_t end = 0;    // byte offset one past the last byte
  size_t size() const { return end - begin; }
  bool operator==(const TextSpan&) const = default;
};

struct Sentence {
  std::string text;  // == passage.substr(span.begin, span.size())
  TextSpan span;
};

// Splits `passage` into sentences by the rules above.
std::vector<Sentence> split_sentences(std::string_view passage);

// Maximal runs of non-whitespace (whitespace = is_space in unicode.h, i.e. Unicode spaces too).
std::vector<TextSpan> split_words(std::string_view text);
// The words of split_words as strings.
std::vector<std::string> words(std::string_view text);

}  // namespace ragform::text

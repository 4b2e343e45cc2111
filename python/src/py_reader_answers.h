// The checks and conversions of a Python reader's answers (py_reader_answers.cpp), for the
// PyReader of py_reader.cpp: every function refuses an answer that breaks the reader protocol with
// a UsageError (ValueError in Python) naming what is wrong; PyReader prefixes the reader and
// method.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.h"
#include "reader/reader.h"

namespace ragform::py::answer {

// A protocol violation: the object answered, but not with what the protocol asks for.
[[noreturn]] void bad(const std::string& what);
// The longest text field of an answer but a generation's text (a piece, a finish reason, a
// reader's description): longer is no token's or name's text, and is refused before it is copied.
inline constexpr size_t kMaxFieldBytes = size_t(64) << 10;
// A str answer as UTF-8 text (bytes or a bytearray as they are), of at most `at_most` bytes.
std::string text_of(const pyb::handle& h, const std::string& what, size_t at_most = kMaxFieldBytes);
// The items of a sequence or iterator, reading at most at_most + 1 (a longer answer is refused
// before the rest is read).
std::vector<pyb::object> items_of(const pyb::handle& h, const std::string& what,
                                  size_t at_most = SIZE_MAX);
// The most tokens a prompt of `bytes` bytes can be, for readers without tokenize.
size_t token_bound(size_t bytes);
// len() of a sized answer (numpy's first dimension), -1 when it has none.
long long length_of(const pyb::handle& h);
// tokenize()'s answer: a flat list of ids (0..2^31-1) or token strings, at most `bound` long, and
// not empty for a text that is not blank (whitespace alone may be no tokens).
int token_count_of(const pyb::handle& h, size_t bound, bool text_blank);
pyb::dict params_dict(const reader::GenerateParams& p, size_t n_prompts);
reader::Generation generation_of(const pyb::handle& h, const std::string& what);
// What a generation must keep of the request `p` (issue 40, M7): its text ends before its first
// stop string (the native reader's rule; the adapters cut there), and its ids, when given, are
// at most max_tokens.
void check_generation(const reader::Generation& g, const reader::GenerateParams& p,
                      const std::string& what);
// `at_least`: a lower bound on the log-probs of a non-empty continuation (1 without tokenize;
// with it, the tokens the continuation adds to the prompt less one, for a merge at the seam).
reader::ScoreResult score_of(const pyb::handle& h, int want, int at_most, int at_least,
                             size_t bound);
reader::AttentionResult attention_of(const pyb::handle& h, const std::vector<int>& layers,
                                     const std::vector<int>& positions,
                                     const std::vector<int>& heads, int n_tokens, size_t bound);
reader::HiddenResult hidden_of(const pyb::handle& h, int layer, int n_tokens, size_t bound);

}  // namespace ragform::py::answer

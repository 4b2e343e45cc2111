// Reading a Python reader's answers (py_reader.cpp): each method's result checked where it
// crosses into C++ -- types, lengths and shapes against what was asked (before any value is
// converted), finite numbers, log-probs <= 0, attention rows that sum to 1, valid UTF-8 -- and
// converted to the reader protocol's types. A failure is a UsageError naming what is wrong.
#include "py_reader_answers.h"

#include <pybind11/stl.h>
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/excerpt.h"
#include "reader/generate_params.h"
#include "reader/reader.h"
#include "text/utf8.h"

namespace ragform::py::answer {

using reader::AttentionQuery;
using reader::AttentionResult;
using reader::AttentionRows;
using reader::GenerateParams;
using reader::Generation;
using reader::HiddenResult;
using reader::ScoreResult;

// A log-prob may round above 0 by this much (float32 log-softmax of a near-certain token).
constexpr double kLogprobSlack = 1e-4;
// An attention weight may round outside [0, 1] by this much, a row's sum away from 1 by this much
// (weights stored in bfloat16 are within 2^-8 of their value, so their sum within 0.4% of 1).
constexpr double kWeightSlack = 1e-4;
constexpr double kRowSumSlack = 1e-2;

// A protocol violation: the object answered, but not with what the protocol asks for.
[[noreturn]] void bad(const std::string& what) { throw UsageError(what); }

std::string type_name(const pyb::handle& h) {
  return pyb::str(pyb::type::of(h).attr("__name__")).cast<std::string>();
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A bool: Python's, or numpy's (np.bool_ has __index__ and __float__, so it passed as the integer
// or number 0 or 1 where a Python bool is refused: issue 40, fifth pass).
bool is_bool(const pyb::handle& h) {
  if (PyBool_Check(h.ptr())) return true;
  const char* t = Py_TYPE(h.ptr())->tp_name;
  return std::strcmp(t, "numpy.bool_") == 0 || std::strcmp(t, "numpy.bool") == 0;
}

// Bytes as text: bytes (np.bytes_ is bytes) or a bytearray, which is the same bytes (a bytearray
// from generate() was refused as "result 0 has no 'text'": issue 40, fifth pass).
bool is_bytes(const pyb::handle& h) {
  return pyb::isinstance<pyb::bytes>(h) || PyByteArray_Check(h.ptr());
}

// `name` of a dict (its key) or of any other object (its attribute); None when absent.
pyb::object field(const pyb::handle& h, const char* name) {
  if (pyb::isinstance<pyb::dict>(h)) {
    auto d = pyb::reinterpret_borrow<pyb::dict>(h);
    return d.contains(name) ? pyb::object(d[name]) : pyb::none();
  }
  return pyb::getattr(h, name, pyb::none());
}

// Text from Python: str as UTF-8, bytes (or a bytearray) as they are; anything else, or a str
// holding a lone surrogate (which has no UTF-8 form), is refused naming `what`, in the words of the
// arguments' check (python/ragform/_text.py).
std::string text_of(const pyb::handle& h, const std::string& what, size_t at_most) {
  if (!is_bytes(h) && !pyb::isinstance<pyb::str>(h))
    bad(what + ": expected a str, got " + type_name(h));
  // Its size before it is copied (a str's UTF-8 is at least one byte per character).
  if (const size_t n = pyb::len(h); n > at_most)
    bad(what + ": " + std::to_string(n) +
        (pyb::isinstance<pyb::str>(h) ? " characters" : " bytes") + ", more than the limit of " +
        std::to_string(at_most) + " bytes");
  if (pyb::isinstance<pyb::bytes>(h)) return h.cast<std::string>();
  if (PyByteArray_Check(h.ptr()))
    return std::string(PyByteArray_AsString(h.ptr()), size_t(PyByteArray_Size(h.ptr())));
  Py_ssize_t n = 0;
  if (const char* s = PyUnicode_AsUTF8AndSize(h.ptr(), &n)) return std::string(s, size_t(n));
  PyErr_Clear();
  const Py_ssize_t len = PyUnicode_GetLength(h.ptr());
  for (Py_ssize_t i = 0; i < len; ++i) {
    const Py_UCS4 c = PyUnicode_ReadChar(h.ptr(), i);
    if (c >= 0xD800 && c <= 0xDFFF) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "%04X", unsigned(c));
      bad(what + ": not valid UTF-8 text: a lone surrogate U+" + hex + " at index " +
          std::to_string(i));
    }
  }
  PyErr_Clear();
  bad(what + ": not valid UTF-8 text");
}

// An integer (a Python int or anything with __index__, such as numpy's; not a bool, Python's or
// numpy's, nor a float) in [lo, hi].
long long int_of(const pyb::handle& h, const std::string& what, long long lo, long long hi) {
  if (is_bool(h) || !PyIndex_Check(h.ptr()))
    bad(what + ": expected an integer, got " + type_name(h));
  auto i = pyb::reinterpret_steal<pyb::object>(PyNumber_Index(h.ptr()));
  if (!i) throw pyb::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0 || v < lo || v > hi)
    bad(what + ": " + pyb::str(i).cast<std::string>() + " is out of range (" + std::to_string(lo) +
        ".." + std::to_string(hi) + ")");
  return v;
}

// A finite number (a Python or numpy float or int; not a bool, Python's or numpy's).
double number_of(const pyb::handle& h, const std::string& what) {
  if (is_bool(h) ||
      (!PyFloat_Check(h.ptr()) && !PyIndex_Check(h.ptr()) && !pyb::hasattr(h, "__float__")))
    bad(what + ": expected a number, got " + type_name(h));
  const double v = pyb::float_(pyb::reinterpret_borrow<pyb::object>(h)).cast<double>();
  if (!std::isfinite(v)) bad(what + ": " + num(v) + " is not finite");
  return v;
}

// The items of a flat sequence: a list, a tuple, a 1-D array or any other iterable but a str,
// bytes, a bytearray or a dict (whose iteration is not a list of results).
// At most `at_most` of them: an iterator without a length is read no further than one past it.
std::vector<pyb::object> items_of(const pyb::handle& h, const std::string& what, size_t at_most) {
  if (pyb::isinstance<pyb::str>(h) || is_bytes(h) || pyb::isinstance<pyb::dict>(h) ||
      !pyb::isinstance<pyb::iterable>(h))
    bad(what + ": expected a list, got " + type_name(h));
  if (pyb::isinstance<pyb::array>(h) && pyb::reinterpret_borrow<pyb::array>(h).ndim() != 1)
    bad(what + ": expected a list (a 1-D array), got a " +
        std::to_string(pyb::reinterpret_borrow<pyb::array>(h).ndim()) + "-D array");
  std::vector<pyb::object> out;
  for (pyb::handle it : h) {
    if (out.size() == at_most)
      bad(what + ": more than " + std::to_string(at_most) + " items where at most " +
          std::to_string(at_most) + " can be");
    out.push_back(pyb::reinterpret_borrow<pyb::object>(it));
  }
  return out;
}

// The most tokens a text of `bytes` bytes can hold: one per byte (byte-level BPE, byte fallback),
// three when an invalid byte became U+FFFD on its way to Python, and 16 special tokens (BOS, EOS, a
// dummy prefix). An answer longer than this for its prompt cannot be about that prompt's tokens:
// it is refused at its length, before any of it is converted (issue 40: a reader's 50,000,000
// log-probs were converted, 400 MB, before their number was compared with what was asked).
size_t token_bound(size_t bytes) { return 3 * bytes + 16; }
// A reader's hidden-state width and head count beyond which an answer is refused unread (the
// largest models have 16,384 and 128).
constexpr size_t kMaxHiddenWidth = size_t(1) << 16;
constexpr size_t kMaxHeads = 4096;
// A generation's text (as the remote reader's answer cap, reader::kMaxAnswerBytes).
constexpr size_t kMaxGenerationBytes = size_t(64) << 20;

// The shape of an answer before anything in it is read: a numpy array's own, else the len() of a
// list, tuple or other sized sequence at each level, going down through first items, at most
// `max_ndim` + 1 levels (enough to tell a wrong count of dimensions). Empty when `h` has no length
// (an iterator, a scalar): the conversion that follows refuses it or reads it with a bound.
std::vector<size_t> shape_of(const pyb::handle& h, int max_ndim) {
  if (pyb::isinstance<pyb::array>(h)) {
    const auto a = pyb::reinterpret_borrow<pyb::array>(h);
    std::vector<size_t> shape;
    for (pyb::ssize_t d = 0; d < a.ndim(); ++d) shape.push_back(size_t(a.shape(d)));
    return shape;
  }
  std::vector<size_t> shape;
  pyb::object at = pyb::reinterpret_borrow<pyb::object>(h);
  while (int(shape.size()) <= max_ndim) {
    if (pyb::isinstance<pyb::str>(at) || is_bytes(at) || pyb::isinstance<pyb::dict>(at) ||
        !PySequence_Check(at.ptr()))
      break;
    if (pyb::isinstance<pyb::array>(at)) {
      for (size_t d : shape_of(at, max_ndim)) shape.push_back(d);
      break;
    }
    const Py_ssize_t n = PyObject_Length(at.ptr());
    if (n < 0) {
      PyErr_Clear();
      break;
    }
    shape.push_back(size_t(n));
    if (n == 0) break;
    pyb::object first = pyb::reinterpret_steal<pyb::object>(PySequence_GetItem(at.ptr(), 0));
    if (!first) {
      PyErr_Clear();
      break;
    }
    at = first;
  }
  return shape;
}

// The number of items of a sized answer (its first dimension), -1 when it has no length.
long long length_of(const pyb::handle& h) {
  if (pyb::isinstance<pyb::array>(h)) {
    const auto a = pyb::reinterpret_borrow<pyb::array>(h);
    return a.ndim() == 0 ? -1 : (long long)a.shape(0);
  }
  if (pyb::isinstance<pyb::str>(h) || is_bytes(h) || pyb::isinstance<pyb::dict>(h) ||
      !PySequence_Check(h.ptr()))
    return -1;
  const Py_ssize_t n = PyObject_Length(h.ptr());
  if (n < 0) PyErr_Clear();
  return n;
}

// At most `at_most` ids: an endless iterator is refused one past it, not read until memory ends.
std::vector<int32_t> ids_of(const pyb::handle& h, const std::string& what, size_t at_most) {
  std::vector<int32_t> out;
  for (const pyb::object& it : items_of(h, what, at_most))
    out.push_back(int32_t(int_of(it, what + "[" + std::to_string(out.size()) + "]", 0, INT32_MAX)));
  return out;
}

std::vector<std::string> texts_of(const pyb::handle& h, const std::string& what, size_t at_most) {
  std::vector<std::string> out;
  for (const pyb::object& it : items_of(h, what, at_most))
    out.push_back(text_of(it, what + "[" + std::to_string(out.size()) + "]"));
  return out;
}

namespace {
// A bool among the items of a list or tuple of numbers (or of lists of them, `depth` levels down):
// numpy casts [False, -2.25] to [0.0, -2.25] without a word, so the array's dtype does not show it
// (pass 7: a log-prob of 0.0, a hidden state or attention weight of 1). Each item is looked at
// once; numpy arrays among them are judged by their dtype (check_numeric).
void refuse_bools(const pyb::handle& h, const std::string& what, int depth) {
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr())) return;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(h.ptr());
  PyObject** items = PySequence_Fast_ITEMS(h.ptr());
  for (Py_ssize_t i = 0; i < n; ++i) {
    const pyb::handle it(items[i]);
    if (is_bool(it))
      bad(what + "[" + std::to_string(i) + "]: expected a number, got " + type_name(it));
    if (depth > 1 && (PyList_Check(it.ptr()) || PyTuple_Check(it.ptr())))
      refuse_bools(it, what + "[" + std::to_string(i) + "]", depth - 1);
    else if (depth > 1 && pyb::isinstance<pyb::array>(it) &&
             pyb::reinterpret_borrow<pyb::array>(it).dtype().kind() == 'b')
      bad(what + "[" + std::to_string(i) + "]: expected numbers, got an array of bools");
  }
}
}  // namespace

// Numbers only: numpy's cast would read ["-0.5"] as -0.5 and [True] as 1 (issue 40, fourth pass:
// a score of strings or bools was accepted as log-probs), nor a bool among numbers (pass 7).
// Integers and floats of any width pass.
void check_numeric(const pyb::handle& h, const std::string& what) {
  // A masked array's numbers are read without its mask (its hidden values counted as weights:
  // pass 8): refused, unless nothing is masked.
  if (pyb::object mask = pyb::getattr(h, "mask", pyb::none());
      !mask.is_none() && pyb::hasattr(h, "filled")) {
    const pyb::object any = pyb::module_::import("numpy").attr("any")(mask);
    if (any.cast<bool>())
      bad(what + ": a masked array with masked values (pass .filled(x) to say what they are)");
  }
  const pyb::array raw = pyb::array::ensure(h);
  if (!raw) return;  // not an array at all: the caller's cast refuses it with its own words
  const char kind = raw.dtype().kind();
  if (kind == 'i' || kind == 'u' || kind == 'f') {
    // Numbers, as numpy reads them: a list may still hold a bool it cast (all bools: kind 'b').
    if (!pyb::isinstance<pyb::array>(h)) refuse_bools(h, what, 2);
    return;
  }
  const char* of = kind == 'b'                  ? "bools"
                   : kind == 'U' || kind == 'S' ? "strings"
                   : kind == 'c'                ? "complex numbers"
                                                : "objects";
  bad(what + ": expected numbers, got an array of " + of);
}

// A C-contiguous float array of `ndim` dimensions from a list or array of numbers.
template <typename T>
pyb::array_t<T, pyb::array::c_style | pyb::array::forcecast> array_of(const pyb::handle& h,
                                                                      const std::string& what,
                                                                      int ndim) {
  check_numeric(h, what);
  auto a = pyb::array_t<T, pyb::array::c_style | pyb::array::forcecast>::ensure(h);
  if (!a) bad(what + ": expected an array of numbers, got " + type_name(h));
  if (a.ndim() != ndim)
    bad(what + ": expected " + std::to_string(ndim) + " dimensions, got " +
        std::to_string(a.ndim()));
  return a;
}

// The number of tokens tokenize() returned: a flat list of ids (or of token strings), never a
// str (whose length counts characters) nor a batch of one row ([1, n] from return_tensors).
// At most `bound` tokens (token_bound of the text), counted before any is read.
int token_count_of(const pyb::handle& h, size_t bound, bool text_blank) {
  if (const long long n = length_of(h); n >= 0 && size_t(n) > bound)
    bad(std::to_string(n) + " tokens for a text of which at most " + std::to_string(bound) +
        " can be (3 per byte and 16 special tokens)");
  const std::vector<pyb::object> toks = items_of(h, "the result", bound);
  for (size_t i = 0; i < toks.size(); ++i) {
    // Not a bool, Python's or numpy's (an np.array of bools was counted as ids: issue 40, fifth
    // pass).
    if (is_bool(toks[i]) || (!PyIndex_Check(toks[i].ptr()) && !pyb::isinstance<pyb::str>(toks[i])))
      bad("token " + std::to_string(i) + " is a " + type_name(toks[i]) +
          ", expected an integer id (a flat list of the prompt's tokens)");
    // An id is an index into a vocabulary (issue 40, fourth pass: -5 and 2^70 were counted).
    if (PyIndex_Check(toks[i].ptr())) int_of(toks[i], "token " + std::to_string(i), 0, INT32_MAX);
  }
  // Text is at least one token (a count of 0 made every row length check pass vacuously);
  // whitespace alone may be none (SentencePiece drops it).
  if (toks.empty() && !text_blank) bad("no tokens for a text that is not blank");
  if (toks.size() > size_t(INT_MAX)) bad("more than " + std::to_string(INT_MAX) + " tokens");
  return int(toks.size());
}

pyb::dict params_dict(const GenerateParams& p, size_t n_prompts) {
  pyb::dict d;
  d["max_tokens"] = p.max_tokens;
  d["temperature"] = p.temperature;
  d["top_k"] = p.top_k;
  d["top_p"] = p.top_p;
  d["seed"] = p.seed;
  // One seed per prompt, always: the rule of Reader::generate_batch (seeds[i], else seed + i).
  std::vector<uint64_t> seeds = p.seeds;
  if (seeds.empty())
    for (size_t i = 0; i < n_prompts; ++i) seeds.push_back(p.seed + i);
  d["seeds"] = seeds;
  d["stop"] = p.stop;
  d["ignore_eos"] = p.ignore_eos;
  return d;
}

namespace {
// Generated text given as bytes must be UTF-8 as a str is (a piece may be part of a character;
// an answer may not): b"\xff" was stored as U+FFFD with status ok.
std::string whole_text_of(const pyb::handle& h, const std::string& what) {
  std::string t = text_of(h, what, kMaxGenerationBytes);
  if (size_t bad_at = 0; !text::is_valid_utf8(t, &bad_at))
    bad(what + ": not valid UTF-8 text: " + text::describe_invalid_utf8(t, bad_at));
  return t;
}
}  // namespace

Generation generation_of(const pyb::handle& h, const std::string& what) {
  Generation g;
  if (pyb::isinstance<pyb::str>(h) || is_bytes(h)) {
    g.text = whole_text_of(h, what);
    g.finish_reason = "length";
    return g;
  }
  if (h.is_none()) bad(what + " is None");
  pyb::object text = field(h, "text");
  if (text.is_none()) bad(what + " has no 'text'");
  g.text = whole_text_of(text, what + "'s text");
  if (g.text.size() > kMaxGenerationBytes)
    bad(what + "'s text: " + std::to_string(g.text.size()) + " bytes, more than the limit of " +
        std::to_string(kMaxGenerationBytes));
  // The tokens of the text: at most token_bound of its bytes.
  if (pyb::object ids = field(h, "ids"); !ids.is_none())
    g.ids = ids_of(ids, what + "'s ids", token_bound(g.text.size()));
  pyb::object fin = field(h, "finish_reason");
  g.finish_reason = fin.is_none() ? "length" : text_of(fin, what + "'s finish_reason");
  // The reasons every reader gives (reader.h); another was stored as it came ("banana": pass 13).
  if (g.finish_reason != "eos" && g.finish_reason != "stop" && g.finish_reason != "length")
    bad(what + "'s finish_reason: expected 'eos', 'stop' or 'length', got '" +
        excerpt(g.finish_reason) + "'");
  if (pyb::object n = field(h, "prompt_tokens"); !n.is_none())
    g.prompt_tokens = int(int_of(n, what + "'s prompt_tokens", 0, INT_MAX));
  return g;
}

void check_generation(const Generation& g, const reader::GenerateParams& p,
                      const std::string& what) {
  if (p.max_tokens == 0 && !g.text.empty())  // pass 16: a reader that ignored max_tokens
    bad(what + ": text of " + std::to_string(g.text.size()) + " bytes for max_tokens = 0");
  if (!g.ids.empty() && p.max_tokens >= 0 && g.ids.size() > size_t(p.max_tokens))
    bad(what + ": " + std::to_string(g.ids.size()) +
        " ids, more than max_tokens = " + std::to_string(p.max_tokens));
  for (const std::string& s : p.stop)
    if (!s.empty() && g.text.find(s) != std::string::npos)
      bad(what + "'s text holds the stop string '" + excerpt(s) +
          "': a generation ends before its first stop string, which is not part of it");
}

// A log-prob: finite and at most 0 (within kLogprobSlack).
double logprob_of(double v, const std::string& what) {
  if (!std::isfinite(v)) bad(what + ": " + num(v) + " is not a finite log-probability");
  if (v > kLogprobSlack) bad(what + ": " + num(v) + " is positive: not a log-probability");
  return v;
}

// Log-probs as a sequence or array, or Model.score_details' dict; a dict's sum and prompt_tokens
// are kept, a sequence's sum is added up in order (as the native reader sums). `want` is the
// number of tokens the answer must hold, `at_most` a bound on it (-1: unknown), `bound` the
// token_bound of the prompt and continuation. The answer's length is compared with them before
// any of it is converted.
ScoreResult score_of(const pyb::handle& h, int want, int at_most, int at_least, size_t bound) {
  auto check_count = [&](size_t n) {
    if (want >= 0 && n != size_t(want))
      bad("an empty continuation scores the prompt's tokens after the first: [n_tokens - 1] = " +
          std::to_string(want) + " log-probs, got " + std::to_string(n));
    if (at_least > 0 && n < size_t(at_least))
      bad(std::to_string(n) + " log-probs for a continuation of at least " +
          std::to_string(at_least) + " token" + (at_least == 1 ? "" : "s") +
          " (one log-prob per continuation token)");
    if (at_most >= 0 && n > size_t(at_most))
      bad(std::to_string(n) + " log-probs, more than the " + std::to_string(at_most) +
          " tokens of the prompt and continuation");
    if (n > bound)
      bad(std::to_string(n) + " log-probs, more than the " + std::to_string(bound) +
          " tokens the prompt and continuation can hold (3 per byte and 16 special tokens)");
  };
  ScoreResult r;
  const pyb::object tokens = pyb::isinstance<pyb::array>(h) ? pyb::none() : field(h, "tokens");
  if (pyb::isinstance<pyb::dict>(h) && tokens.is_none()) bad("a score dict needs 'tokens'");
  if (tokens.is_none()) {
    if (h.is_none() || pyb::isinstance<pyb::str>(h) || is_bytes(h))
      bad("expected the log-probs (a list or 1-D array) or a dict with 'tokens', got " +
          type_name(h));
    const std::vector<size_t> shape = shape_of(h, 1);
    if (shape.size() > 1)
      bad("the log-probs: expected 1 dimensions, got " + std::to_string(shape.size()));
    if (!shape.empty()) check_count(shape[0]);
    auto a = array_of<double>(h, "the log-probs", 1);
    for (pyb::ssize_t i = 0; i < a.shape(0); ++i) {
      reader::TokenLogprob tl;
      tl.logprob = logprob_of(a.at(i), "log-prob " + std::to_string(i));
      r.sum += tl.logprob;
      r.tokens.push_back(std::move(tl));
    }
  } else {
    if (const long long n = length_of(tokens); n >= 0) check_count(size_t(n));
    const size_t most = std::min(bound, want >= 0      ? size_t(want)
                                        : at_most >= 0 ? size_t(at_most)
                                                       : bound);
    for (const pyb::object& t : items_of(tokens, "tokens", most)) {
      const std::string what = "tokens[" + std::to_string(r.tokens.size()) + "]";
      reader::TokenLogprob tl;
      if (pyb::object id = field(t, "id"); !id.is_none())
        tl.id = int32_t(int_of(id, what + "'s id", -1, INT32_MAX));
      if (pyb::object piece = field(t, "piece"); !piece.is_none())
        tl.piece = text_of(piece, what + "'s piece");
      pyb::object lp = field(t, "logprob");
      if (lp.is_none()) bad(what + " has no 'logprob'");
      tl.logprob = logprob_of(number_of(lp, what + "'s logprob"), what + "'s logprob");
      r.tokens.push_back(std::move(tl));
    }
    double total = 0;
    for (const auto& t : r.tokens) total += t.logprob;
    r.sum = total;
    if (pyb::object sum = field(h, "sum"); !sum.is_none()) {
      r.sum = logprob_of(number_of(sum, "sum"), "sum");
      if (std::fabs(r.sum - total) > 1e-4 * std::max(1.0, std::fabs(total)))
        bad("sum " + num(r.sum) + " is not the sum of the tokens' log-probs (" + num(total) + ")");
    }
    // At most as many as the prompt and continuation can hold (10**6 for an 11-token prompt was
    // taken: pass 13).
    if (pyb::object n = field(h, "prompt_tokens"); !n.is_none())
      r.prompt_tokens =
          int(int_of(n, "prompt_tokens", 0, (long long)std::min<size_t>(bound, INT_MAX)));
  }
  check_count(r.tokens.size());
  return r;
}

// Attention weights of one head (or the head mean): finite, in [0, 1], summing to 1.
void check_weights(const float* w, size_t n, const std::string& what) {
  double sum = 0;
  for (size_t j = 0; j < n; ++j) {
    const float v = w[j];
    if (!std::isfinite(v))
      bad(what + ": weight " + num(v) + " at key " + std::to_string(j) + " is not finite");
    if (v < -kWeightSlack || v > 1 + kWeightSlack)
      bad(what + ": weight " + num(v) + " at key " + std::to_string(j) + " is outside [0, 1]");
    sum += v;
  }
  if (std::fabs(sum - 1.0) > kRowSumSlack)
    bad(what + ": weights sum to " + num(sum) +
        ", not 1 (a row is the softmax over keys 0..query position)");
}

std::string list_text(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// One attention row: `heads` [heads, keys] (or [keys]: one head), the rest optional. The head
// mean is computed as the native reader computes it (float sums over heads, then one division),
// so a row from ragform.Model gives the same floats either way. `n_tokens` is the prompt's token
// count when known (-1 otherwise); `where` names the row in messages ("" when it is the only one).
AttentionRows row_of(const pyb::handle& h, int layer, int position, const std::vector<int>& heads,
                     int n_tokens, size_t bound, const std::string& where) {
  const std::string at = where.empty() ? "" : where + ": ";
  const bool bare = pyb::isinstance<pyb::array>(h);
  pyb::object hv = bare ? pyb::reinterpret_borrow<pyb::object>(h) : field(h, "heads");
  if (hv.is_none()) bad(at + "a row has no 'heads'");
  // Its length first: a row of another length answers another query (or another prompt). Checked
  // on the answer's shape before the weights are converted, then on the array.
  auto check_keys = [&](size_t n_keys) {
    const std::string got = ", got " + std::to_string(n_keys);
    if (n_tokens >= 0) {
      const long long q = position >= 0 ? position : (long long)n_tokens + position;
      if (q < 0 || q >= n_tokens)
        bad(at + "asked for query position " + std::to_string(position) + " of a prompt of " +
            std::to_string(n_tokens) + " tokens, got a row of " + std::to_string(n_keys) + " keys");
      if (n_keys != size_t(q + 1)) {
        if (position == -1)
          bad(at + "rows must be [n_tokens] = " + std::to_string(n_tokens) + " long" + got);
        bad(at + "the row of query position " + std::to_string(position) + " must be [" +
            (position >= 0 ? std::to_string(position) + " + 1"
                           : "n_tokens - " + std::to_string(-(long long)position - 1)) +
            "] = " + std::to_string(q + 1) + " long" + got);
      }
    } else if (position >= 0 && n_keys != size_t(position) + 1) {
      bad(at + "asked for query position " + std::to_string(position) + ", got a row of " +
          std::to_string(n_keys) + " keys");
    } else if (n_keys > bound) {
      bad(at + "a row of " + std::to_string(n_keys) + " keys, more than the " +
          std::to_string(bound) + " tokens the prompt can hold (3 per byte and 16 special tokens)");
    }
  };
  if (const std::vector<size_t> shape = shape_of(hv, 2); !shape.empty() && shape.size() <= 2) {
    const size_t n_heads = shape.size() == 2 ? shape[0] : 1;
    if (n_heads > std::max(kMaxHeads, heads.size()))
      bad(at + std::to_string(n_heads) + " heads in a row, more than the limit of " +
          std::to_string(kMaxHeads));
    if (shape.back() > 0) check_keys(shape.back());
  }
  check_numeric(hv, at + "a row's heads");
  auto a = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>::ensure(hv);
  if (!a) bad(at + "a row's heads must be a [heads, keys] array of numbers, got " + type_name(hv));
  if (a.ndim() != 1 && a.ndim() != 2)
    bad(at + "a row's heads must be a [heads, keys] array, got a " + std::to_string(a.ndim()) +
        "-D array");
  const pyb::ssize_t n_heads = a.ndim() == 2 ? a.shape(0) : 1;
  const pyb::ssize_t n_keys = a.shape(a.ndim() - 1);
  if (n_heads < 1 || n_keys < 1) bad(at + "an empty attention row");
  check_keys(size_t(n_keys));
  AttentionRows row;
  const float* data = a.data();
  for (pyb::ssize_t i = 0; i < n_heads; ++i)
    row.heads.emplace_back(data + i * n_keys, data + (i + 1) * n_keys);
  auto opt_int = [&](const char* name, int dflt) {
    if (bare) return dflt;
    pyb::object v = field(h, name);
    return v.is_none() ? dflt : int(int_of(v, at + name, INT_MIN, INT_MAX));
  };
  row.layer = opt_int("layer", layer);
  if (layer >= 0 && row.layer != layer)
    bad(at + "asked for layer " + std::to_string(layer) + ", got a row of layer " +
        std::to_string(row.layer));
  row.query_position = opt_int("query_position", int(n_keys) - 1);
  // Labelled as asked (-1, counting from the end, as a layer may be: pass 17) is the row's own.
  if (position < 0 && row.query_position == position) row.query_position = int(n_keys) - 1;
  if (row.query_position != int(n_keys) - 1)
    bad(at + "query position " + std::to_string(row.query_position) + " with " +
        std::to_string(n_keys) + " keys (expected keys 0..query)");
  pyb::object ids = bare ? pyb::none() : field(h, "head_ids");
  if (!ids.is_none()) {
    for (int32_t id : ids_of(ids, at + "head_ids", kMaxHeads)) row.head_ids.push_back(int(id));
  } else if (heads.size() == size_t(n_heads)) {
    row.head_ids = heads;
  } else {
    for (int i = 0; i < int(n_heads); ++i) row.head_ids.push_back(i);
  }
  if (row.head_ids.size() != size_t(n_heads))
    bad(at + "head_ids does not name every returned head");
  {
    std::vector<int> sorted = row.head_ids;
    std::sort(sorted.begin(), sorted.end());
    if (auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
      bad(at + "head_ids names head " + std::to_string(*twice) + " twice");
  }
  if (!heads.empty() && row.head_ids != heads)
    bad(at + "asked for heads " + list_text(heads) + ", got " + std::to_string(n_heads) +
        " heads " + list_text(row.head_ids));
  for (size_t i = 0; i < row.heads.size(); ++i)
    check_weights(row.heads[i].data(), row.heads[i].size(),
                  at + "head " + std::to_string(row.head_ids[i]));
  // The mean over the returned heads, as the native reader computes it.
  std::vector<float> computed(size_t(n_keys), 0.0f);
  for (const auto& hr : row.heads)
    for (size_t j = 0; j < computed.size(); ++j) computed[j] += hr[j];
  for (auto& v : computed) v /= float(row.heads.size());
  pyb::object mean = bare ? pyb::none() : field(h, "mean");
  if (!mean.is_none()) {
    if (const long long n = length_of(mean); n >= 0 && n != (long long)n_keys)
      bad(at + "mean and heads differ in length");
    auto m = array_of<float>(mean, at + "mean", 1);
    if (m.shape(0) != n_keys) bad(at + "mean and heads differ in length");
    row.mean.assign(m.data(), m.data() + n_keys);
    check_weights(row.mean.data(), row.mean.size(), at + "mean");
    // A mean that is not the heads' (ABS reads the mean, the documents' mass the heads) would
    // give two different answers from one row.
    for (size_t j = 0; j < computed.size(); ++j)
      if (std::fabs(row.mean[j] - computed[j]) > 1e-3f)
        bad(at + "mean is not the mean of the returned heads: " + num(row.mean[j]) + " at key " +
            std::to_string(j) + ", the heads give " + num(computed[j]));
  } else {
    row.mean = std::move(computed);
  }
  return row;
}

// `n_tokens`: tokenize()'s count of the prompt, -1 when the object has no tokenize.
// `bound`: the token_bound of the prompt.
AttentionResult attention_of(const pyb::handle& h, const std::vector<int>& layers,
                             const std::vector<int>& positions, const std::vector<int>& heads,
                             int n_tokens, size_t bound) {
  // One row may come alone (a 2-D array or a single Attention); a 3-D array is rows of one
  // length; anything else iterable is the list of rows. Their number is compared with the rows
  // asked for before any is read.
  const size_t want = layers.size() * positions.size();
  auto check_rows = [&](size_t n) {
    if (n != want)
      bad("expected " + std::to_string(want) + " rows (layers x positions), got " +
          std::to_string(n));
  };
  std::vector<pyb::object> items;
  const bool is_array = pyb::isinstance<pyb::array>(h);
  if (h.is_none()) bad("expected attention rows, got None");
  if (is_array && pyb::reinterpret_borrow<pyb::array>(h).ndim() == 3) {
    check_rows(size_t(pyb::reinterpret_borrow<pyb::array>(h).shape(0)));
    for (pyb::handle it : h) items.push_back(pyb::reinterpret_borrow<pyb::object>(it));
  } else if (is_array || pyb::isinstance<pyb::dict>(h) || !pyb::isinstance<pyb::sequence>(h) ||
             pyb::isinstance<pyb::str>(h)) {
    items.push_back(pyb::reinterpret_borrow<pyb::object>(h));
  } else {
    if (const long long n = length_of(h); n >= 0) check_rows(size_t(n));
    for (pyb::handle it : h) {
      if (items.size() > want) break;
      items.push_back(pyb::reinterpret_borrow<pyb::object>(it));
    }
  }
  if (items.size() != want)
    bad("expected " + std::to_string(want) + " rows (layers x positions), got " +
        std::to_string(items.size()));
  AttentionResult r;
  if (!pyb::isinstance<pyb::array>(items[0])) {
    if (pyb::object ids = field(items[0], "ids"); !ids.is_none()) r.ids = ids_of(ids, "ids", bound);
    if (pyb::object pieces = field(items[0], "pieces"); !pieces.is_none())
      r.pieces = texts_of(pieces, "pieces", bound);
  }
  // The prompt's tokens: tokenize's count, else as many as the ids or pieces returned.
  auto agree = [&](size_t n, const char* what) {
    if (n_tokens >= 0 && n != size_t(n_tokens))
      bad(std::string(what) + " hold " + std::to_string(n) + " tokens, tokenize gives " +
          std::to_string(n_tokens));
    n_tokens = int(n);
  };
  if (!r.ids.empty()) agree(r.ids.size(), "ids");
  if (!r.pieces.empty()) agree(r.pieces.size(), "pieces");
  for (size_t i = 0; i < items.size(); ++i) {
    const int layer = layers[i / positions.size()], position = positions[i % positions.size()];
    const std::string where = items.size() == 1 ? ""
                                                : "row " + std::to_string(i) + " (layer " +
                                                      std::to_string(layer) + ", position " +
                                                      std::to_string(position) + ")";
    r.rows.push_back(row_of(items[i], layer, position, heads, n_tokens, bound, where));
  }
  // A negative layer counts from the end: every row asked for one implies the reader's layer
  // count (its label minus the asked layer), and they must all imply the same one, above every
  // layer asked by index (issue 40, M7: a row of layer 7 for -1 beside one of 9 for -2 was kept).
  // A lone -1 cannot be checked without the reader's layer count.
  long long n_layer = -1;
  size_t first = 0;
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const int asked = layers[i / positions.size()];
    if (asked >= 0 || r.rows[i].layer == asked) continue;  // unlabelled, or labelled as asked
    const long long implied = (long long)r.rows[i].layer - asked;
    const std::string at = "row " + std::to_string(i) + " (layer " + std::to_string(asked) + ")";
    if (r.rows[i].layer < 0)
      bad(at + " is labelled layer " + std::to_string(r.rows[i].layer) +
          ": a negative layer counts from the end, so its label is the layer's index");
    if (n_layer < 0) {
      n_layer = implied;
      first = i;
    } else if (implied != n_layer) {
      bad(at + " is labelled layer " + std::to_string(r.rows[i].layer) + " and row " +
          std::to_string(first) + " (layer " + std::to_string(layers[first / positions.size()]) +
          ") layer " + std::to_string(r.rows[first].layer) + ": they imply " +
          std::to_string(implied) + " and " + std::to_string(n_layer) +
          " layers (a negative layer counts from the end)");
    }
  }
  if (n_layer > 0)
    for (int asked : layers)
      if (asked >= n_layer)
        bad("layer " + std::to_string(asked) + " was answered, but the rows of negative layers " +
            "imply " + std::to_string(n_layer) + " layers");
  return r;
}

// `n_tokens`: tokenize()'s count of the prompt, -1 when the object has no tokenize.
// `bound`: the token_bound of the prompt.
HiddenResult hidden_of(const pyb::handle& h, int layer, int n_tokens, size_t bound) {
  pyb::object states, pieces, ids = pyb::none();
  if (pyb::isinstance<pyb::tuple>(h) && pyb::len(h) == 2) {
    auto t = pyb::reinterpret_borrow<pyb::tuple>(h);
    states = t[0];
    pieces = t[1];
  } else if (!h.is_none()) {
    states = field(h, "states");
    pieces = field(h, "pieces");
    ids = field(h, "ids");
  }
  if (!states || !pieces || states.is_none() || pieces.is_none())
    bad("expected {'states': [tokens, n_embd], 'pieces': [...]} or a tuple (states, pieces)");
  // The shape before the states are converted: rows within the prompt's tokens, a bounded width.
  if (const std::vector<size_t> shape = shape_of(states, 2); shape.size() == 2) {
    const size_t most_rows = n_tokens >= 0 ? size_t(n_tokens) : bound;
    if (shape[0] > most_rows)
      bad("states must be [n_tokens, n_embd], got " + std::to_string(shape[0]) +
          " rows, more than the " + std::to_string(most_rows) +
          (n_tokens >= 0 ? " tokens of the prompt"
                         : " tokens the prompt can hold (3 per byte and 16 special tokens)"));
    if (shape[1] > kMaxHiddenWidth)
      bad("states must be [n_tokens, n_embd], got " + std::to_string(shape[1]) +
          " columns, more than the limit of " + std::to_string(kMaxHiddenWidth));
  }
  auto a = array_of<float>(states, "states", 2);
  HiddenResult r;
  r.layer = layer;
  r.n_embd = int(a.shape(1));
  if (r.n_embd < 1) bad("states must be [n_tokens, n_embd] with n_embd >= 1, got 0 columns");
  if (n_tokens >= 0 && a.shape(0) != n_tokens)
    bad("states must be [n_tokens, n_embd] = [" + std::to_string(n_tokens) + ", " +
        std::to_string(r.n_embd) + "], got " + std::to_string(a.shape(0)) + " rows");
  r.states.assign(a.data(), a.data() + a.size());
  for (size_t i = 0; i < r.states.size(); ++i)
    if (!std::isfinite(r.states[i]))
      bad("states[" + std::to_string(i / size_t(r.n_embd)) + ", " +
          std::to_string(i % size_t(r.n_embd)) + "] = " + num(r.states[i]) + " is not finite");
  if (const long long n = length_of(pieces); n >= 0 && n != (long long)a.shape(0))
    bad(std::to_string(a.shape(0)) + " rows of states for " + std::to_string(n) + " pieces");
  r.pieces = texts_of(pieces, "pieces", size_t(a.shape(0)));
  if (r.pieces.size() != size_t(a.shape(0)))
    bad(std::to_string(a.shape(0)) + " rows of states for " + std::to_string(r.pieces.size()) +
        " pieces");
  if (!ids.is_none()) {
    r.ids = ids_of(ids, "ids", size_t(a.shape(0)));
    if (r.ids.size() != size_t(a.shape(0)))
      bad(std::to_string(a.shape(0)) + " rows of states for " + std::to_string(r.ids.size()) +
          " ids");
  }
  return r;
}

// "ValueError: the message" (the exception's type and str, one line).

}  // namespace ragform::py::answer

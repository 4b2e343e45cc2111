// Any Python object as the reader (docs/python.md, "Your own reader"): PyReader is a
// reader::Reader whose four questions are answered by a Python object's methods, so every
// pipeline runs on an engine the user already has (transformers on a GPU, vLLM's offline LLM, a
// numpy double in a test). The protocol:
//   generate(prompts, params) -> list of dicts {text, ids?, finish_reason?, prompt_tokens?}
//                                (or of strings), one per prompt: a batch is one call
//   score(prompt, continuation) -> log-probs (a sequence / numpy array), or the dict of
//                                Model.score_details {tokens: [{id, piece, logprob}], sum, ...}
//   attention(prompt, layers, heads, positions) -> one row per (layer, position), layer-major:
//                                a numpy [heads, keys] array, or an object / dict with `heads`
//                                and optionally layer, query_position, head_ids, mean, ids,
//                                pieces (a ragform.Attention is one)
//   hidden(prompt, layer) -> {states: [tokens, n_embd], pieces, ids?} or (states, pieces)
//   tokenize(text) -> the token ids the reader would feed (count_tokens is their number)
//   describe() -> the reader's identity in run stores (default "python:<ClassName>")
//   chat_mode (attribute) -> "raw" (default) or the chat family the object applies
// Only generate is required; asking for a missing method throws NotSupported, worded as the
// OpenAI reader's, and a verb that needs more than generate checks the whole need before it
// starts (require_methods). The pipelines run with the GIL released; each call here takes it for
// the length of the Python call only, from whatever thread the pipeline calls on. A Python
// exception becomes ragform::Error (a failed prompt: an unmeasured row with the exception's
// message), except KeyboardInterrupt and the other BaseExceptions that are not Exceptions
// (SystemExit), which propagate as they are, so Ctrl-C stops the run.
//
// Every answer is checked where it crosses into C++, before a pipeline sees it: its types, its
// lengths against the prompt's tokens (tokenize's count when the object has tokenize, else the
// ids or pieces it returns), finite numbers, log-probs <= 0 (kLogprobSlack), attention weights in
// [0, 1] with each row summing to 1 (kRowSumSlack), text that is valid UTF-8. An answer that fails
// is a UsageError (ValueError in Python) naming the reader, the method and what is wrong:
// "python reader: MyReader.attention: rows must be [n_tokens] = 150 long, got 3".
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "bindings.h"
#include "reader/generate_params.h"
#include "reader/reader.h"

namespace ragform::py {

namespace {

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

// `name` of a dict (its key) or of any other object (its attribute); None when absent.
pyb::object field(const pyb::handle& h, const char* name) {
  if (pyb::isinstance<pyb::dict>(h)) {
    auto d = pyb::reinterpret_borrow<pyb::dict>(h);
    return d.contains(name) ? pyb::object(d[name]) : pyb::none();
  }
  return pyb::getattr(h, name, pyb::none());
}

// Text from Python: str as UTF-8, bytes as they are; anything else, or a str holding a lone
// surrogate (which has no UTF-8 form), is refused naming `what`, in the words of the arguments'
// check (python/ragform/_text.py).
std::string text_of(const pyb::handle& h, const std::string& what) {
  if (pyb::isinstance<pyb::bytes>(h)) return h.cast<std::string>();
  if (!pyb::isinstance<pyb::str>(h)) bad(what + ": expected a str, got " + type_name(h));
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

// An integer (a Python int or anything with __index__, such as numpy's; not a bool or a float)
// in [lo, hi].
long long int_of(const pyb::handle& h, const std::string& what, long long lo, long long hi) {
  if (PyBool_Check(h.ptr()) || !PyIndex_Check(h.ptr()))
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

// A finite number (a Python or numpy float or int; not a bool).
double number_of(const pyb::handle& h, const std::string& what) {
  if (PyBool_Check(h.ptr()) ||
      (!PyFloat_Check(h.ptr()) && !PyIndex_Check(h.ptr()) && !pyb::hasattr(h, "__float__")))
    bad(what + ": expected a number, got " + type_name(h));
  const double v = pyb::float_(pyb::reinterpret_borrow<pyb::object>(h)).cast<double>();
  if (!std::isfinite(v)) bad(what + ": " + num(v) + " is not finite");
  return v;
}

// The items of a flat sequence: a list, a tuple, a 1-D array or any other iterable but a str,
// bytes or a dict (whose iteration is not a list of results).
// At most `at_most` of them: an iterator without a length is read no further than one past it.
std::vector<pyb::object> items_of(const pyb::handle& h, const std::string& what,
                                  size_t at_most = SIZE_MAX) {
  if (pyb::isinstance<pyb::str>(h) || pyb::isinstance<pyb::bytes>(h) ||
      pyb::isinstance<pyb::dict>(h) || !pyb::isinstance<pyb::iterable>(h))
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
    if (pyb::isinstance<pyb::str>(at) || pyb::isinstance<pyb::bytes>(at) ||
        pyb::isinstance<pyb::dict>(at) || !PySequence_Check(at.ptr()))
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
  if (pyb::isinstance<pyb::str>(h) || pyb::isinstance<pyb::bytes>(h) ||
      pyb::isinstance<pyb::dict>(h) || !PySequence_Check(h.ptr()))
    return -1;
  const Py_ssize_t n = PyObject_Length(h.ptr());
  if (n < 0) PyErr_Clear();
  return n;
}

std::vector<int32_t> ids_of(const pyb::handle& h, const std::string& what) {
  std::vector<int32_t> out;
  for (const pyb::object& it : items_of(h, what))
    out.push_back(int32_t(int_of(it, what + "[" + std::to_string(out.size()) + "]", 0, INT32_MAX)));
  return out;
}

std::vector<std::string> texts_of(const pyb::handle& h, const std::string& what,
                                  size_t at_most = SIZE_MAX) {
  std::vector<std::string> out;
  for (const pyb::object& it : items_of(h, what, at_most))
    out.push_back(text_of(it, what + "[" + std::to_string(out.size()) + "]"));
  return out;
}

// Numbers only: numpy's cast would read ["-0.5"] as -0.5 and [True] as 1 (issue 40, fourth pass:
// a score of strings or bools was accepted as log-probs). Integers and floats of any width pass.
void check_numeric(const pyb::handle& h, const std::string& what) {
  const pyb::array raw = pyb::array::ensure(h);
  if (!raw) return;  // not an array at all: the caller's cast refuses it with its own words
  const char kind = raw.dtype().kind();
  if (kind == 'i' || kind == 'u' || kind == 'f') return;
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
int token_count_of(const pyb::handle& h, size_t bound) {
  if (const long long n = length_of(h); n >= 0 && size_t(n) > bound)
    bad(std::to_string(n) + " tokens for a text of which at most " + std::to_string(bound) +
        " can be (3 per byte and 16 special tokens)");
  const std::vector<pyb::object> toks = items_of(h, "the result", bound);
  for (size_t i = 0; i < toks.size(); ++i)
    if (PyBool_Check(toks[i].ptr()) ||
        (!PyIndex_Check(toks[i].ptr()) && !pyb::isinstance<pyb::str>(toks[i])))
      bad("token " + std::to_string(i) + " is a " + type_name(toks[i]) +
          ", expected an integer id (a flat list of the prompt's tokens)");
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

Generation generation_of(const pyb::handle& h, const std::string& what) {
  Generation g;
  if (pyb::isinstance<pyb::str>(h) || pyb::isinstance<pyb::bytes>(h)) {
    if (const size_t n = pyb::len(h); n > kMaxGenerationBytes)
      bad(what + ": " + std::to_string(n) + " characters, more than the limit of " +
          std::to_string(kMaxGenerationBytes) + " bytes");
    g.text = text_of(h, what);
    g.finish_reason = "length";
    return g;
  }
  if (h.is_none()) bad(what + " is None");
  pyb::object text = field(h, "text");
  if (text.is_none()) bad(what + " has no 'text'");
  // Its size before it is copied (a str's UTF-8 is at least one byte per character).
  if (pyb::isinstance<pyb::str>(text) || pyb::isinstance<pyb::bytes>(text))
    if (const size_t n = pyb::len(text); n > kMaxGenerationBytes)
      bad(what + "'s text: " + std::to_string(n) + " characters, more than the limit of " +
          std::to_string(kMaxGenerationBytes) + " bytes");
  g.text = text_of(text, what + "'s text");
  if (g.text.size() > kMaxGenerationBytes)
    bad(what + "'s text: " + std::to_string(g.text.size()) + " bytes, more than the limit of " +
        std::to_string(kMaxGenerationBytes));
  if (pyb::object ids = field(h, "ids"); !ids.is_none()) g.ids = ids_of(ids, what + "'s ids");
  pyb::object fin = field(h, "finish_reason");
  g.finish_reason = fin.is_none() ? "length" : text_of(fin, what + "'s finish_reason");
  if (pyb::object n = field(h, "prompt_tokens"); !n.is_none())
    g.prompt_tokens = int(int_of(n, what + "'s prompt_tokens", 0, INT_MAX));
  return g;
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
ScoreResult score_of(const pyb::handle& h, int want, int at_most, size_t bound) {
  auto check_count = [&](size_t n) {
    if (want >= 0 && n != size_t(want))
      bad("an empty continuation scores the prompt's tokens after the first: [n_tokens - 1] = " +
          std::to_string(want) + " log-probs, got " + std::to_string(n));
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
    if (h.is_none() || pyb::isinstance<pyb::str>(h) || pyb::isinstance<pyb::bytes>(h))
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
    if (pyb::object n = field(h, "prompt_tokens"); !n.is_none())
      r.prompt_tokens = int(int_of(n, "prompt_tokens", 0, INT_MAX));
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
  if (row.query_position != int(n_keys) - 1)
    bad(at + "query position " + std::to_string(row.query_position) + " with " +
        std::to_string(n_keys) + " keys (expected keys 0..query)");
  pyb::object ids = bare ? pyb::none() : field(h, "head_ids");
  if (!ids.is_none()) {
    for (int32_t id : ids_of(ids, at + "head_ids")) row.head_ids.push_back(int(id));
  } else if (heads.size() == size_t(n_heads)) {
    row.head_ids = heads;
  } else {
    for (int i = 0; i < int(n_heads); ++i) row.head_ids.push_back(i);
  }
  if (row.head_ids.size() != size_t(n_heads))
    bad(at + "head_ids does not name every returned head");
  if (!heads.empty() && row.head_ids != heads)
    bad(at + "asked for heads " + list_text(heads) + ", got " + std::to_string(n_heads) +
        " heads " + list_text(row.head_ids));
  for (size_t i = 0; i < row.heads.size(); ++i)
    check_weights(row.heads[i].data(), row.heads[i].size(),
                  at + "head " + std::to_string(row.head_ids[i]));
  pyb::object mean = bare ? pyb::none() : field(h, "mean");
  if (!mean.is_none()) {
    if (const long long n = length_of(mean); n >= 0 && n != (long long)n_keys)
      bad(at + "mean and heads differ in length");
    auto m = array_of<float>(mean, at + "mean", 1);
    if (m.shape(0) != n_keys) bad(at + "mean and heads differ in length");
    row.mean.assign(m.data(), m.data() + n_keys);
    check_weights(row.mean.data(), row.mean.size(), at + "mean");
  } else {
    row.mean.assign(size_t(n_keys), 0.0f);
    for (const auto& hr : row.heads)
      for (size_t j = 0; j < row.mean.size(); ++j) row.mean[j] += hr[j];
    for (auto& v : row.mean) v /= float(row.heads.size());
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
    if (pyb::object ids = field(items[0], "ids"); !ids.is_none()) r.ids = ids_of(ids, "ids");
    if (pyb::object pieces = field(items[0], "pieces"); !pieces.is_none())
      r.pieces = texts_of(pieces, "pieces");
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
    r.ids = ids_of(ids, "ids");
    if (r.ids.size() != size_t(a.shape(0)))
      bad(std::to_string(a.shape(0)) + " rows of states for " + std::to_string(r.ids.size()) +
          " ids");
  }
  return r;
}

// "ValueError: the message" (the exception's type and str, one line).
std::string exception_text(const pyb::error_already_set& e) {
  std::string type = pyb::str(e.type().attr("__name__"));
  std::string msg = pyb::str(e.value());
  std::string out = msg.empty() ? type : type + ": " + msg;
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
  return s;
}

class PyReader : public reader::Reader {
 public:
  // With the GIL held (the binding that received the object).
  explicit PyReader(pyb::object obj) : obj_(std::move(obj)) {
    class_name_ = pyb::str(pyb::type::of(obj_).attr("__name__"));
    describe_ = "python:" + class_name_;
    if (has("describe"))
      describe_ = call("describe", [&] { return text_of(obj_.attr("describe")(), "the result"); });
    chat_mode_ = call("chat_mode", [&] {
      pyb::object chat = pyb::getattr(obj_, "chat_mode", pyb::none());
      return chat.is_none() ? std::string("raw") : text_of(chat, "the attribute");
    });
    caps_.generate = true;
    caps_.score = has("score");
    caps_.attention = has("attention");
    caps_.hidden = has("hidden");
    has_tokenize_ = has("tokenize");
  }
  // The object's reference is dropped with the GIL, whichever thread releases the reader.
  ~PyReader() override {
    pyb::gil_scoped_acquire gil;
    obj_ = pyb::object();
  }

  reader::Capabilities capabilities() const override { return caps_; }
  std::string describe() const override { return describe_; }
  std::string chat_mode() const override { return chat_mode_; }

  Generation generate(const std::string& prompt, const GenerateParams& p) override {
    GenerateParams one = p;
    one.seeds = {p.seeds.empty() ? p.seed : p.seeds.at(0)};
    return generate_batch({prompt}, one).at(0);
  }

  std::vector<Generation> generate_batch(const std::vector<std::string>& prompts,
                                         const GenerateParams& p) override {
    if (!p.seeds.empty() && p.seeds.size() != prompts.size())
      throw Error("generate", "one seed per prompt expected");
    return call("generate", [&] {
      pyb::object res = obj_.attr("generate")(prompts, params_dict(p, prompts.size()));
      if (const long long n = length_of(res); n >= 0 && size_t(n) != prompts.size())
        bad(std::to_string(n) + " results for " + std::to_string(prompts.size()) + " prompts");
      const std::vector<pyb::object> items = items_of(res, "the result", prompts.size());
      if (items.size() != prompts.size())
        bad(std::to_string(items.size()) + " results for " + std::to_string(prompts.size()) +
            " prompts");
      std::vector<Generation> out;
      for (const pyb::object& g : items) {
        out.push_back(generation_of(g, "result " + std::to_string(out.size())));
        cut_after_line(out.back(), p);  // the object is not asked to stop there
      }
      return out;
    });
  }

  ScoreResult score(const std::string& prompt, const std::string& continuation) override {
    need(caps_.score, "score", "score is not supported by this reader");
    // With tokenize, the lengths the answer must have: the prompt's tokens after the first for
    // an empty continuation, at most the tokens of both for another.
    int want = -1, at_most = -1;
    if (has_tokenize_) {
      if (continuation.empty())
        want = std::max(count_tokens(prompt) - 1, 0);
      else
        at_most = count_tokens(prompt + continuation);
    }
    return call("score", [&] {
      return score_of(obj_.attr("score")(bytes_str(prompt), bytes_str(continuation)), want, at_most,
                      token_bound(prompt.size() + continuation.size()));
    });
  }

  AttentionResult attention(const std::string& prompt, const AttentionQuery& q) override {
    need(caps_.attention, "attention", "attention is not supported by this reader");
    // The defaults spelled out (last layer, final token), so the object needs no rules of its own.
    const std::vector<int> layers = q.layers.empty() ? std::vector<int>{-1} : q.layers;
    const std::vector<int> positions =
        q.query_positions.empty() ? std::vector<int>{-1} : q.query_positions;
    const int n_tokens = has_tokenize_ ? count_tokens(prompt) : -1;
    return call("attention", [&] {
      pyb::object res = obj_.attr("attention")(bytes_str(prompt), layers, q.heads, positions);
      return attention_of(res, layers, positions, q.heads, n_tokens, token_bound(prompt.size()));
    });
  }

  HiddenResult hidden(const std::string& prompt, int layer) override {
    need(caps_.hidden, "hidden", "hidden states are not supported by this reader");
    const int n_tokens = has_tokenize_ ? count_tokens(prompt) : -1;
    return call("hidden", [&] {
      return hidden_of(obj_.attr("hidden")(bytes_str(prompt), layer), layer, n_tokens,
                       token_bound(prompt.size()));
    });
  }

  int count_tokens(const std::string& prompt) override {
    need(has_tokenize_, "tokenize", "count_tokens is not supported by this reader");
    return call("tokenize", [&] {
      return token_count_of(obj_.attr("tokenize")(bytes_str(prompt)), token_bound(prompt.size()));
    });
  }

  // The methods of `methods` the object lacks (with the GIL held).
  std::vector<std::string> missing(const std::vector<std::string>& methods) const {
    std::vector<std::string> out;
    for (const std::string& m : methods)
      if (!has(m.c_str())) out.push_back(m);
    return out;
  }
  const std::string& class_name() const { return class_name_; }

 private:
  bool has(const char* name) const {
    pyb::object m = pyb::getattr(obj_, name, pyb::none());
    return !m.is_none() && PyCallable_Check(m.ptr());
  }

  void need(bool present, const char* method, const std::string& what) const {
    if (!present)
      throw NotSupported("python reader",
                         what + " (" + class_name_ + " has no " + method + " method)");
  }

  // A prompt as a Python str (invalid UTF-8 replaced: prompts are built from user text).
  static pyb::str bytes_str(const std::string& s) {
    return pyb::bytes(s).attr("decode")("utf-8", "replace");
  }

  // Runs f with the GIL held; Python's exceptions become the reader errors the pipelines handle,
  // an answer that breaks the protocol a UsageError; both name the object's class and `method`.
  template <typename F>
  auto call(const char* method, F&& f) const -> decltype(f()) {
    // Steering acts inside the engine's attention, which a Python object's model is beyond:
    // refuse rather than answer unsteered, as the OpenAI reader does.
    if (steering.active())
      throw NotSupported("python reader", "attention steering (" + steering.describe() +
                                              ") needs the native engine (ragform.Model)");
    pyb::gil_scoped_acquire gil;
    const std::string who = class_name_ + "." + method + ": ";
    try {
      return f();
    } catch (pyb::error_already_set& e) {
      // KeyboardInterrupt, SystemExit: not a failed prompt but the user stopping the run.
      if (!e.matches(PyExc_Exception)) throw;
      const std::string why = who + exception_text(e);
      if (e.matches(PyExc_NotImplementedError)) throw NotSupported("python reader", why);
      throw Error("python reader", why);
    } catch (const pyb::cast_error& e) {
      throw UsageError("python reader", who + "unexpected result (" + e.what() + ")");
    } catch (const NotSupported&) {
      throw;
    } catch (const UsageError& e) {
      throw UsageError("python reader", who + e.what());
    } catch (const Error& e) {
      throw Error("python reader", who + e.what());
    }
  }

  pyb::object obj_;
  std::string class_name_, describe_, chat_mode_;
  reader::Capabilities caps_;
  bool has_tokenize_ = false;
};

}  // namespace

std::shared_ptr<reader::Reader> reader_arg(const pyb::handle& obj, const char* arg) {
  if (pyb::isinstance<reader::Reader>(obj)) return obj.cast<std::shared_ptr<reader::Reader>>();
  pyb::object gen = pyb::getattr(obj, "generate", pyb::none());
  if (obj.is_none() || gen.is_none() || !PyCallable_Check(gen.ptr()))
    throw UsageError(arg,
                     "expected a ragform.Model, a ragform.OpenAIReader or an object with "
                     "generate(prompts, params) (docs/python.md, 'Your own reader')");
  return std::make_shared<PyReader>(pyb::reinterpret_borrow<pyb::object>(obj));
}

void require_methods(const reader::Reader& r, const std::vector<std::string>& methods,
                     const std::string& verb) {
  const auto* py = dynamic_cast<const PyReader*>(&r);
  if (!py) return;
  const std::vector<std::string> gone = py->missing(methods);
  if (gone.empty()) return;
  std::string has;
  if (gone.size() < methods.size())
    has = "it has no " + and_list(gone);
  else if (methods.size() == 1)
    has = "it has no " + methods[0] + " method";
  else
    has = methods.size() == 2 ? "it has neither" : "it has none of them";
  throw NotSupported(verb + " needs " + and_list(methods) + " from the reader " + py->class_name() +
                     "; " + has +
                     " (docs/python.md, 'Your own reader': the methods each verb uses)");
}

void bind_py_reader(pyb::module_& m) {
  // The same conversion the pipelines apply, as a ragform.Reader: the protocol object's answers
  // as the engine's methods give them (Reader.score, .attention, .hidden), for tests and users.
  m.def(
      "_as_reader", [](const pyb::handle& obj) { return reader_arg(obj, "reader"); },
      pyb::arg("reader"),
      "A ragform.Reader over any object with generate(prompts, params) (the Python reader "
      "protocol); a ragform.Reader is returned as it is.");
}

}  // namespace ragform::py

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
//   describe() -> the reader's identity in run stores (default "python:<ClassName>"; or a str)
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
// [0, 1] with each row summing to 1 (kRowSumSlack), text that is valid UTF-8, hidden states as
// wide as the first hidden() answer's. An answer that fails is a UsageError (ValueError in
// Python) naming the reader, the method and what is wrong:
// "python reader: MyReader.attention: rows must be [n_tokens] = 150 long, got 3".
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/excerpt.h"
#include "bindings.h"
#include "py_reader_answers.h"
#include "reader/generate_params.h"
#include "reader/reader.h"

namespace ragform::py {

namespace {

using answer::attention_of;
using answer::bad;
using answer::check_generation;
using answer::generation_of;
using answer::hidden_of;
using answer::items_of;
using answer::length_of;
using answer::params_dict;
using answer::score_of;
using answer::text_of;
using answer::token_bound;
using answer::token_count_of;
using reader::AttentionQuery;
using reader::AttentionResult;
using reader::AttentionRows;
using reader::GenerateParams;
using reader::Generation;
using reader::HiddenResult;
using reader::ScoreResult;

// str(h) as UTF-8 that cannot fail: lone surrogates (text decoded with 'surrogateescape') are
// backslash-escaped ("caf\udce9"); nullopt when str() itself raises (or is not a str), the
// error cleared. With the GIL held.
std::optional<std::string> utf8_str(const pyb::handle& h) {
  PyObject* s = PyObject_Str(h.ptr());
  if (!s) {
    PyErr_Clear();
    return std::nullopt;
  }
  PyObject* b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
  Py_DECREF(s);
  if (!b) {
    PyErr_Clear();
    return std::nullopt;
  }
  std::string out(PyBytes_AS_STRING(b), size_t(PyBytes_GET_SIZE(b)));
  Py_DECREF(b);
  return out;
}

// A type's __name__, never failing ("object" when it cannot be read).
std::string type_name(const pyb::handle& type) {
  PyObject* n = PyObject_GetAttrString(type.ptr(), "__name__");
  if (!n) {
    PyErr_Clear();
    return "object";
  }
  std::optional<std::string> s = utf8_str(n);
  Py_DECREF(n);
  return s && !s->empty() ? excerpt(*s, kMessageBytes) : "object";
}

// "ValueError: message", never failing (pass 6, E1: a message holding a lone surrogate, or an
// exception whose __str__ raises, escaped as a bare RuntimeError naming neither reader nor method,
// and ended the study instead of leaving the row unmeasured).
std::string exception_text(const pyb::error_already_set& e) {
  const std::string type = type_name(e.type());
  std::optional<std::string> text = utf8_str(e.value());
  // Cut to a message's size: it is stored in every unmeasured row the failure leaves (a 20 MB
  // message in six rows made a 120 MB store).
  std::string out = !text           ? type + " (its message could not be read)"
                    : text->empty() ? type
                                    : type + ": " + excerpt(*text, kMessageBytes);
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

// obj.name, or None when the object has no such attribute (an AttributeError). Any other
// exception raised reading it (a property whose model is not loaded) is not "absent": it is
// refused at once, naming the reader, the attribute and the exception (pass 6, E6: it was taken
// as "no score method" and the study ran without it). KeyboardInterrupt and the other
// BaseExceptions propagate as they are. With the GIL held.
pyb::object attribute_or_none(const pyb::handle& obj, const char* name, const std::string& cls) {
  PyObject* a = PyObject_GetAttrString(obj.ptr(), name);
  if (a) return pyb::reinterpret_steal<pyb::object>(a);
  if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();
    return pyb::none();
  }
  pyb::error_already_set e;
  if (!e.matches(PyExc_Exception)) throw e;
  throw UsageError("python reader", cls + "." + name + ": " + exception_text(e));
}

// "a", "a and b", "a, b and c".
std::string and_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
  return s;
}

// A reader's identity in run stores: a non-empty line of printable text of at most 1 KiB ("" and
// control characters were accepted: pass 8).
std::string identity_of(const pyb::handle& h, const std::string& what) {
  std::string s = text_of(h, what, 1024);
  if (s.empty()) bad(what + ": an empty str (the reader's identity in run stores)");
  for (size_t i = 0; i < s.size(); ++i)
    if (const unsigned char c = static_cast<unsigned char>(s[i]); c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", unsigned(c));
      bad(what + ": a control character (" + hex + " at byte " + std::to_string(i) +
          ") in the reader's identity");
    }
  return s;
}

class PyReader : public reader::Reader {
 public:
  // With the GIL held (the binding that received the object).
  explicit PyReader(pyb::object obj) : obj_(std::move(obj)) {
    class_name_ = type_name(pyb::type::of(obj_));
    describe_ = "python:" + class_name_;
    // A method, or a str attribute (a str was ignored: pass 8); the identity run stores compare
    // and reports print, so a line of text.
    if (pyb::object d = attribute_or_none(obj_, "describe", class_name_); !d.is_none())
      describe_ = call("describe", [&] {
        const bool method = PyCallable_Check(d.ptr()) != 0;
        return identity_of(method ? d() : d, method ? "the result" : "the attribute");
      });
    pyb::object chat = attribute_or_none(obj_, "chat_mode", class_name_);
    chat_mode_ = chat.is_none() ? std::string("raw")
                                : call("chat_mode", [&] { return text_of(chat, "the attribute"); });
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
        const std::string what = "result " + std::to_string(out.size());
        out.push_back(generation_of(g, what));
        check_generation(out.back(), p, what);
        cut_after_line(out.back(), p);  // the object is not asked to stop there
      }
      return out;
    });
  }

  ScoreResult score(const std::string& prompt, const std::string& continuation) override {
    need(caps_.score, "score", "score is not supported by this reader");
    // With tokenize, the lengths the answer must have: the prompt's tokens after the first for
    // an empty continuation, at most the tokens of both for another.
    // A non-empty continuation has at least one token (and about the tokens it adds to the
    // prompt's: one fewer allowed, for a merge across the seam); an answer of none, a
    // probability of 1, was accepted.
    int want = -1, at_most = -1, at_least = continuation.empty() ? 0 : 1;
    if (has_tokenize_) {
      if (continuation.empty()) {
        want = std::max(count_tokens(prompt) - 1, 0);
      } else {
        at_most = count_tokens(prompt + continuation);
        at_least = std::max(at_least, at_most - prompt_tokens_counted(prompt) - 1);
      }
    }
    return call("score", [&] {
      return score_of(obj_.attr("score")(bytes_str(prompt), bytes_str(continuation)), want, at_most,
                      at_least, token_bound(prompt.size() + continuation.size()));
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
      HiddenResult r = hidden_of(obj_.attr("hidden")(bytes_str(prompt), layer), layer, n_tokens,
                                 token_bound(prompt.size()));
      // One model, one width: states of another width than an earlier call's are another model's
      // (or a slice of them), and the encoder's similarities across them mean nothing.
      int first = 0;
      if (!hidden_width_.compare_exchange_strong(first, r.n_embd) && first != r.n_embd)
        bad("states are " + std::to_string(r.n_embd) + " wide, an earlier call gave " +
            std::to_string(first));
      return r;
    });
  }

  int count_tokens(const std::string& prompt) override {
    need(has_tokenize_, "tokenize", "count_tokens is not supported by this reader");
    return call("tokenize", [&] {
      return token_count_of(obj_.attr("tokenize")(bytes_str(prompt)), token_bound(prompt.size()),
                            prompt.find_first_not_of(" \t\r\n") == std::string::npos);
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
    pyb::object m = attribute_or_none(obj_, name, class_name_);
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
  // The width (n_embd) of the first hidden() answer accepted, 0 before it; every later answer
  // must have it (issue 40, fifth pass: widths 8 then 4 gave spotlight silently wrong scores).
  std::atomic<int> hidden_width_{0};
  // The last prompt score() counted: its continuations (an oracle's candidate answers, a sweep's
  // variants) share it, so the object is asked once, not once per continuation.
  std::mutex counted_mu_;
  std::string counted_prompt_;
  int counted_ = -1;
  int prompt_tokens_counted(const std::string& prompt) {
    {
      std::lock_guard<std::mutex> lock(counted_mu_);
      if (counted_ >= 0 && counted_prompt_ == prompt) return counted_;
    }
    const int n = count_tokens(prompt);
    std::lock_guard<std::mutex> lock(counted_mu_);
    counted_prompt_ = prompt;
    counted_ = n;
    return n;
  }
};

}  // namespace

std::shared_ptr<reader::Reader> reader_arg(const pyb::handle& obj, const char* arg) {
  if (pyb::isinstance<reader::Reader>(obj)) return obj.cast<std::shared_ptr<reader::Reader>>();
  pyb::object gen = obj.is_none()
                        ? pyb::none()
                        : attribute_or_none(obj, "generate", type_name(pyb::type::of(obj)));
  if (gen.is_none() || !PyCallable_Check(gen.ptr()))
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

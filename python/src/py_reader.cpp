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
// OpenAI reader's. The pipelines run with the GIL released; each call here takes it for the
// length of the Python call only, from whatever thread the pipeline calls on. A Python exception
// becomes ragform::Error (a failed prompt: an unmeasured row with the exception's message),
// except KeyboardInterrupt and the other BaseExceptions that are not Exceptions (SystemExit),
// which propagate as they are, so Ctrl-C stops the run.
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "bindings.h"
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

// `name` of a dict (its key) or of any other object (its attribute); None when absent.
pyb::object field(const pyb::handle& h, const char* name) {
  if (pyb::isinstance<pyb::dict>(h)) {
    auto d = pyb::reinterpret_borrow<pyb::dict>(h);
    return d.contains(name) ? pyb::object(d[name]) : pyb::none();
  }
  return pyb::getattr(h, name, pyb::none());
}

// Text from Python: str as UTF-8, bytes as they are.
std::string text_of(const pyb::handle& h) {
  if (pyb::isinstance<pyb::bytes>(h)) return h.cast<std::string>();
  return pyb::str(h).cast<std::string>();
}

// A C-contiguous float array of `ndim` dimensions from anything numpy converts.
template <typename T>
pyb::array_t<T, pyb::array::c_style | pyb::array::forcecast> array_of(const pyb::handle& h,
                                                                      const char* what, int ndim) {
  auto a = pyb::array_t<T, pyb::array::c_style | pyb::array::forcecast>::ensure(h);
  if (!a) throw Error(what, "expected an array of numbers");
  if (a.ndim() != ndim)
    throw Error(
        what, "expected " + std::to_string(ndim) + " dimensions, got " + std::to_string(a.ndim()));
  return a;
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

Generation generation_of(const pyb::handle& h) {
  Generation g;
  if (pyb::isinstance<pyb::str>(h) || pyb::isinstance<pyb::bytes>(h)) {
    g.text = text_of(h);
    g.finish_reason = "length";
    return g;
  }
  pyb::object text = field(h, "text");
  if (text.is_none()) throw Error("generate", "a result has no 'text'");
  g.text = text_of(text);
  if (pyb::object ids = field(h, "ids"); !ids.is_none()) g.ids = ids.cast<std::vector<int32_t>>();
  pyb::object fin = field(h, "finish_reason");
  g.finish_reason = fin.is_none() ? "length" : text_of(fin);
  if (pyb::object n = field(h, "prompt_tokens"); !n.is_none()) g.prompt_tokens = n.cast<int>();
  return g;
}

// Log-probs as a sequence or array, or Model.score_details' dict; a dict's sum and prompt_tokens
// are kept, a sequence's sum is added up in order (as the native reader sums).
ScoreResult score_of(const pyb::handle& h) {
  ScoreResult r;
  const pyb::object tokens = pyb::isinstance<pyb::array>(h) ? pyb::none() : field(h, "tokens");
  if (pyb::isinstance<pyb::dict>(h) && tokens.is_none())
    throw Error("score", "a score dict needs 'tokens'");
  if (tokens.is_none()) {
    auto a = array_of<double>(h, "score", 1);
    for (pyb::ssize_t i = 0; i < a.shape(0); ++i) {
      reader::TokenLogprob tl;
      tl.logprob = a.at(i);
      r.sum += tl.logprob;
      r.tokens.push_back(std::move(tl));
    }
    return r;
  }
  for (pyb::handle t : tokens) {
    reader::TokenLogprob tl;
    if (pyb::object id = field(t, "id"); !id.is_none()) tl.id = id.cast<int32_t>();
    if (pyb::object piece = field(t, "piece"); !piece.is_none()) tl.piece = text_of(piece);
    tl.logprob = field(t, "logprob").cast<double>();
    r.tokens.push_back(std::move(tl));
  }
  if (pyb::object sum = field(h, "sum"); !sum.is_none()) {
    r.sum = sum.cast<double>();
  } else {
    for (const auto& t : r.tokens) r.sum += t.logprob;
  }
  if (pyb::object n = field(h, "prompt_tokens"); !n.is_none()) r.prompt_tokens = n.cast<int>();
  return r;
}

// One attention row: `heads` [heads, keys] (or [keys]: one head), the rest optional. The head
// mean is computed as the native reader computes it (float sums over heads, then one division),
// so a row from ragform.Model gives the same floats either way.
AttentionRows row_of(const pyb::handle& h, int layer, int position, const std::vector<int>& heads) {
  const bool bare = pyb::isinstance<pyb::array>(h);
  pyb::object hv = bare ? pyb::reinterpret_borrow<pyb::object>(h) : field(h, "heads");
  if (hv.is_none()) throw Error("attention", "a row has no 'heads'");
  auto a = pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>::ensure(hv);
  if (!a || (a.ndim() != 1 && a.ndim() != 2))
    throw Error("attention", "a row's heads must be a [heads, keys] array");
  const pyb::ssize_t n_heads = a.ndim() == 2 ? a.shape(0) : 1;
  const pyb::ssize_t n_keys = a.shape(a.ndim() - 1);
  if (n_heads < 1 || n_keys < 1) throw Error("attention", "an empty attention row");
  AttentionRows row;
  const float* data = a.data();
  for (pyb::ssize_t i = 0; i < n_heads; ++i)
    row.heads.emplace_back(data + i * n_keys, data + (i + 1) * n_keys);
  auto opt_int = [&](const char* name, int dflt) {
    if (bare) return dflt;
    pyb::object v = field(h, name);
    return v.is_none() ? dflt : v.cast<int>();
  };
  row.layer = opt_int("layer", layer);
  row.query_position = opt_int("query_position", int(n_keys) - 1);
  if (row.query_position != int(n_keys) - 1)
    throw Error("attention", "query position " + std::to_string(row.query_position) + " with " +
                                 std::to_string(n_keys) + " keys (expected keys 0..query)");
  pyb::object ids = bare ? pyb::none() : field(h, "head_ids");
  if (!ids.is_none()) {
    row.head_ids = ids.cast<std::vector<int>>();
  } else if (heads.size() == size_t(n_heads)) {
    row.head_ids = heads;
  } else {
    for (int i = 0; i < int(n_heads); ++i) row.head_ids.push_back(i);
  }
  if (row.head_ids.size() != size_t(n_heads))
    throw Error("attention", "head_ids does not name every returned head");
  pyb::object mean = bare ? pyb::none() : field(h, "mean");
  if (!mean.is_none()) {
    auto m = array_of<float>(mean, "attention mean", 1);
    if (m.shape(0) != n_keys) throw Error("attention", "mean and heads differ in length");
    row.mean.assign(m.data(), m.data() + n_keys);
  } else {
    row.mean.assign(size_t(n_keys), 0.0f);
    for (const auto& hr : row.heads)
      for (size_t j = 0; j < row.mean.size(); ++j) row.mean[j] += hr[j];
    for (auto& v : row.mean) v /= float(row.heads.size());
  }
  // A position asked from the start is checked: a row of another length answers another query.
  if (position >= 0 && position != row.query_position)
    throw Error("attention", "asked for query position " + std::to_string(position) +
                                 ", got a row of " + std::to_string(n_keys) + " keys");
  return row;
}

AttentionResult attention_of(const pyb::handle& h, const std::vector<int>& layers,
                             const std::vector<int>& positions, const std::vector<int>& heads) {
  // One row may come alone (a 2-D array or a single Attention); a 3-D array is rows of one
  // length; anything else iterable is the list of rows.
  std::vector<pyb::object> items;
  const bool is_array = pyb::isinstance<pyb::array>(h);
  if (is_array && pyb::reinterpret_borrow<pyb::array>(h).ndim() == 3) {
    for (pyb::handle it : h) items.push_back(pyb::reinterpret_borrow<pyb::object>(it));
  } else if (is_array || pyb::isinstance<pyb::dict>(h) || !pyb::isinstance<pyb::sequence>(h) ||
             pyb::isinstance<pyb::str>(h)) {
    items.push_back(pyb::reinterpret_borrow<pyb::object>(h));
  } else {
    for (pyb::handle it : h) items.push_back(pyb::reinterpret_borrow<pyb::object>(it));
  }
  const size_t want = layers.size() * positions.size();
  if (items.size() != want)
    throw Error("attention", "expected " + std::to_string(want) +
                                 " rows (layers x positions), got " + std::to_string(items.size()));
  AttentionResult r;
  for (size_t i = 0; i < items.size(); ++i)
    r.rows.push_back(
        row_of(items[i], layers[i / positions.size()], positions[i % positions.size()], heads));
  if (!pyb::isinstance<pyb::array>(items[0])) {
    if (pyb::object ids = field(items[0], "ids"); !ids.is_none())
      r.ids = ids.cast<std::vector<int32_t>>();
    if (pyb::object pieces = field(items[0], "pieces"); !pieces.is_none())
      for (pyb::handle p : pieces) r.pieces.push_back(text_of(p));
  }
  return r;
}

HiddenResult hidden_of(const pyb::handle& h, int layer) {
  pyb::object states, pieces, ids = pyb::none();
  if (pyb::isinstance<pyb::tuple>(h) && pyb::len(h) == 2) {
    auto t = pyb::reinterpret_borrow<pyb::tuple>(h);
    states = t[0];
    pieces = t[1];
  } else {
    states = field(h, "states");
    pieces = field(h, "pieces");
    ids = field(h, "ids");
  }
  if (states.is_none() || pieces.is_none())
    throw Error("hidden",
                "expected {'states': [tokens, n_embd], 'pieces': [...]} or a tuple "
                "(states, pieces)");
  auto a = array_of<float>(states, "hidden states", 2);
  HiddenResult r;
  r.layer = layer;
  r.n_embd = int(a.shape(1));
  r.states.assign(a.data(), a.data() + a.size());
  for (pyb::handle p : pieces) r.pieces.push_back(text_of(p));
  if (r.pieces.size() != size_t(a.shape(0)))
    throw Error("hidden", std::to_string(a.shape(0)) + " rows of states for " +
                              std::to_string(r.pieces.size()) + " pieces");
  if (!ids.is_none()) r.ids = ids.cast<std::vector<int32_t>>();
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

class PyReader : public reader::Reader {
 public:
  // With the GIL held (the binding that received the object).
  explicit PyReader(pyb::object obj) : obj_(std::move(obj)) {
    class_name_ = pyb::str(pyb::type::of(obj_).attr("__name__"));
    describe_ = "python:" + class_name_;
    if (has("describe"))
      describe_ = call("describe", [&] { return text_of(obj_.attr("describe")()); });
    pyb::object chat = pyb::getattr(obj_, "chat_mode", pyb::none());
    chat_mode_ = chat.is_none() ? "raw" : text_of(chat);
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
      std::vector<Generation> out;
      for (pyb::handle g : res) out.push_back(generation_of(g));
      if (out.size() != prompts.size())
        throw Error("generate", std::to_string(out.size()) + " results for " +
                                    std::to_string(prompts.size()) + " prompts");
      return out;
    });
  }

  ScoreResult score(const std::string& prompt, const std::string& continuation) override {
    need(caps_.score, "score", "score is not supported by this reader");
    return call("score", [&] {
      return score_of(obj_.attr("score")(bytes_str(prompt), bytes_str(continuation)));
    });
  }

  AttentionResult attention(const std::string& prompt, const AttentionQuery& q) override {
    need(caps_.attention, "attention", "attention is not supported by this reader");
    // The defaults spelled out (last layer, final token), so the object needs no rules of its own.
    const std::vector<int> layers = q.layers.empty() ? std::vector<int>{-1} : q.layers;
    const std::vector<int> positions =
        q.query_positions.empty() ? std::vector<int>{-1} : q.query_positions;
    return call("attention", [&] {
      pyb::object res = obj_.attr("attention")(bytes_str(prompt), layers, q.heads, positions);
      return attention_of(res, layers, positions, q.heads);
    });
  }

  HiddenResult hidden(const std::string& prompt, int layer) override {
    need(caps_.hidden, "hidden", "hidden states are not supported by this reader");
    return call("hidden",
                [&] { return hidden_of(obj_.attr("hidden")(bytes_str(prompt), layer), layer); });
  }

  int count_tokens(const std::string& prompt) override {
    need(has_tokenize_, "tokenize", "count_tokens is not supported by this reader");
    return call("tokenize",
                [&] { return int(pyb::len(obj_.attr("tokenize")(bytes_str(prompt)))); });
  }

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

  // Runs f with the GIL held; Python's exceptions become the reader errors the pipelines handle.
  template <typename F>
  auto call(const char* method, F&& f) const -> decltype(f()) {
    // Steering acts inside the engine's attention, which a Python object's model is beyond:
    // refuse rather than answer unsteered, as the OpenAI reader does.
    if (steering.active())
      throw NotSupported("python reader", "attention steering (" + steering.describe() +
                                              ") needs the native engine (ragform.Model)");
    pyb::gil_scoped_acquire gil;
    try {
      return f();
    } catch (pyb::error_already_set& e) {
      // KeyboardInterrupt, SystemExit: not a failed prompt but the user stopping the run.
      if (!e.matches(PyExc_Exception)) throw;
      const std::string why = class_name_ + "." + method + ": " + exception_text(e);
      if (e.matches(PyExc_NotImplementedError)) throw NotSupported("python reader", why);
      throw Error("python reader", why);
    } catch (const pyb::cast_error& e) {
      throw Error("python reader",
                  class_name_ + "." + method + ": unexpected result (" + e.what() + ")");
    } catch (const NotSupported&) {
      throw;
    } catch (const Error& e) {
      throw Error("python reader", class_name_ + "." + method + ": " + e.what());
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

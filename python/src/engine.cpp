// The engine side of the Python module: Reader (the interface of reader/reader.h), Model (a
// NativeReader over a GGUF file, plus the tokenizer and raw logits), OpenAIReader and Encoder.
// Every method computes what the matching CLI command computes (src/cli/cmd_generate.cpp,
// cmd_score.cpp, cmd_attention.cpp, cmd_logits.cpp, cmd_tokenize.cpp, cmd_embed.cpp) through the
// same library calls; the GIL is released for the length of each forward pass, so models in
// different Python threads run at the same time.
#include <algorithm>
#include <optional>

#include <pybind11/stl.h>

#include "base/error.h"
#include "base/json_file.h"
#include "bindings.h"
#include "engine/model/model.h"
#include "engine/model/model_card.h"
#include "engine/runtime/context.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/tokenizer/tokenizer.h"
#include "options.h"
#include "pipelines/cnorm/cnorm.h"
#include "reader/encoder_settings.h"
#include "reader/engine_settings.h"
#include "reader/generate_params.h"
#include "reader/native_encoder.h"
#include "reader/native_reader.h"
#include "reader/openai_reader.h"
#include "reader/prompt_logits.h"
#include "reader/steering_object.h"

namespace ragform::py {

namespace {

using reader::Reader;

using model::training_context;

void check_token_id(const char* where, int32_t id, int32_t n_vocab) {
  if (id < 0 || id >= n_vocab)
    throw UsageError(where, "token id " + std::to_string(id) + " out of range 0.." +
                                std::to_string(n_vocab - 1));
}

// ragform.Model's keyword arguments: the reader and engine settings declared once
// (reader/engine_settings.h; ragform._ragform.options("model") gives the wrapper its signature),
// bound with their declared kinds (options.h: a wrong type is a TypeError naming the keyword) and
// checked by the library as the CLI's flags are (reader::native_options: the thread bound, so a
// typo of 100000 is a ValueError before any thread starts; an error names the keyword).
std::shared_ptr<reader::NativeReader> open_model(const std::string& path, const pyb::kwargs& kw) {
  reader::EngineSettings s;
  bind_keywords(s, kw, "Model");
  const reader::NativeOptions o = reader::native_options(s, s.ctx ? 0 : training_context(path));
  pyb::gil_scoped_release nogil;
  return std::make_shared<reader::NativeReader>(path, o);
}

// ragform.Encoder's keyword arguments: the encoder settings declared once
// (reader/encoder_settings.h; ragform._ragform.options("encoder")), bound and checked as Model's
// are (an error names the keyword).
std::shared_ptr<reader::NativeEncoder> open_encoder(const std::string& path,
                                                    const pyb::kwargs& kw) {
  reader::EncoderSettings s;
  bind_keywords(s, kw, "Encoder");
  const reader::NativeEncoderOptions o = reader::native_encoder_options(s);
  pyb::gil_scoped_release nogil;
  return std::make_shared<reader::NativeEncoder>(path, o);
}

// Reader.steering's value as the steering object every front end gives (reader/steering_object.h,
// which reads and checks it): None, or a dict whose lists may be tuples and whose integers may be
// numpy's; anything else as Python's json module says it. A refusal names the dict's key
// (errors.cpp: steering['spans']).
nlohmann::json steering_json(const pyb::handle& o, int depth = 0,
                             const std::string& where = "steering") {
  // Bounded as every JSON input is (base/json_file.h): a deeper object would overflow the stack
  // of this recursion before any check of the steering object could see it.
  if (depth > kMaxJsonDepth)
    throw UsageError("steering", "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  if (pyb::isinstance<pyb::dict>(o)) {
    nlohmann::json j = nlohmann::json::object();
    for (auto kv : o.cast<pyb::dict>()) {
      const std::string key = pyb::str(kv.first).cast<std::string>();
      j[key] = steering_json(kv.second, depth + 1, where + "['" + key + "']");
    }
    return j;
  }
  if (pyb::isinstance<pyb::list>(o) || pyb::isinstance<pyb::tuple>(o)) {
    nlohmann::json j = nlohmann::json::array();
    for (const pyb::handle& x : o) j.push_back(steering_json(x, depth + 1, where));
    return j;
  }
  // numpy's arrays as their lists ([[0, 3]] of spans), its bools as bools, which the checks refuse
  // where an index is expected (np.True_ has __index__: it passed as the head 1, pass 8).
  if (std::strcmp(Py_TYPE(o.ptr())->tp_name, "numpy.ndarray") == 0)
    return steering_json(o.attr("tolist")(), depth, where);
  if (is_any_bool(o)) return nlohmann::json(PyObject_IsTrue(o.ptr()) == 1);
  if (!pyb::isinstance<pyb::str>(o) && PyIndex_Check(o.ptr()))
    return to_json(pyb::int_(pyb::reinterpret_borrow<pyb::object>(o)));
  if (o.is_none() || pyb::isinstance<pyb::str>(o) || PyFloat_Check(o.ptr()))
    return to_json(o, where);
  throw UsageError(where, std::string("expected a string, a number, a list or a dict, got ") +
                              Py_TYPE(o.ptr())->tp_name);
}

// The result of Reader.attention: one query row of one layer.
struct Attention {
  int layer = 0;
  int query_position = 0;
  pyb::array_t<float> heads;  // [heads, positions]
  pyb::array_t<float> mean;   // [positions]
  double abs = 0;
  std::vector<int> head_ids;
  std::vector<int32_t> ids;
  std::vector<std::string> pieces;
};

// The keywords are `ragform attention`'s --layer and --query, declared once (cnorm's
// RelevanceRequest): their defaults below are the declaration's, their ranges its check.
Attention attention(Reader& r, const std::string& prompt, Int<int64_t> layer, Int<int64_t> query) {
  cnorm::RelevanceRequest req;
  req.layer = layer;
  req.query = query;
  const reader::AttentionQuery q = cnorm::relevance_query(req);  // OptionError: "layer: ..."
  reader::AttentionResult res;
  {
    pyb::gil_scoped_release nogil;
    res = r.attention(prompt, q);
  }
  reader::AttentionRows& row = res.rows.at(0);
  Attention a;
  a.layer = row.layer;
  a.query_position = row.query_position;
  // ABS of the head-mean row (cnorm paper 4.2), as `ragform attention` prints it.
  a.abs = cnorm::attention_balance_score(row.mean);
  const size_t n_heads = row.heads.size();
  const size_t n_pos = row.mean.size();
  std::vector<float> flat;
  flat.reserve(n_heads * n_pos);
  for (const auto& h : row.heads) {
    if (h.size() != n_pos) throw Error("attention", "head rows of different lengths");
    flat.insert(flat.end(), h.begin(), h.end());
  }
  a.heads = to_numpy(std::move(flat), {pyb::ssize_t(n_heads), pyb::ssize_t(n_pos)});
  a.mean = to_numpy(std::move(row.mean), {pyb::ssize_t(n_pos)});
  a.head_ids = row.head_ids;
  a.ids = std::move(res.ids);
  a.pieces = std::move(res.pieces);
  return a;
}

pyb::array_t<double> score(Reader& r, const std::string& prompt, const std::string& cont) {
  reader::ScoreResult res;
  {
    pyb::gil_scoped_release nogil;
    res = r.score(prompt, cont);
  }
  std::vector<double> lp;
  lp.reserve(res.tokens.size());
  for (const auto& t : res.tokens) lp.push_back(t.logprob);
  const auto n = pyb::ssize_t(lp.size());
  return to_numpy(std::move(lp), {n});
}

pyb::dict score_details(Reader& r, const std::string& prompt, const std::string& cont) {
  reader::ScoreResult res;
  {
    pyb::gil_scoped_release nogil;
    res = r.score(prompt, cont);
  }
  pyb::list toks;
  for (const auto& t : res.tokens) {
    pyb::dict d;
    d["id"] = t.id;
    d["piece"] = pyb::bytes(t.piece).attr("decode")("utf-8", "replace");
    d["logprob"] = t.logprob;
    toks.append(d);
  }
  pyb::dict out;
  out["tokens"] = toks;
  out["sum"] = res.sum;
  out["prompt_tokens"] = res.prompt_tokens;
  return out;
}

pyb::dict generation_dict(const reader::Generation& g) {
  pyb::dict d;
  d["text"] = pyb::bytes(g.text).attr("decode")("utf-8", "replace");
  d["ids"] = g.ids;
  d["finish_reason"] = g.finish_reason;
  d["prompt_tokens"] = g.prompt_tokens;
  return d;
}

pyb::array_t<float> hidden(Reader& r, const std::string& prompt, Int<int> layer) {
  reader::HiddenResult res;
  {
    pyb::gil_scoped_release nogil;
    res = r.hidden(prompt, layer);
  }
  const pyb::ssize_t n_embd = res.n_embd;
  const pyb::ssize_t n = n_embd > 0 ? pyb::ssize_t(res.states.size()) / n_embd : 0;
  return to_numpy(std::move(res.states), {n, n_embd});
}

// As `ragform logits`: one pass of the prompt's tokens in a context of exactly their length, on
// the reader's pool; rows for the last position or for all.
// Model.logits: the use case of `ragform logits` (reader/prompt_logits.h), its keyword declared
// there (ragform._ragform.options("logits")); the KV type is the Model's.
pyb::array_t<float> logits(reader::NativeReader& r, const std::string& prompt,
                           const std::string& kv, const pyb::kwargs& kw) {
  reader::LogitsRequest req;
  bind_keywords(req, kw, "logits");
  const bool f16 = reader::kv_f16(kv);
  reader::PromptLogits res;
  {
    pyb::gil_scoped_release nogil;
    res = reader::prompt_logits(r, prompt, req, f16, r.steering);
  }
  return to_numpy(std::move(res.logits), {pyb::ssize_t(res.rows), pyb::ssize_t(res.n_vocab)});
}

pyb::str piece_str(const std::string& s) {
  return pyb::bytes(s).attr("decode")("utf-8", "replace");
}

}  // namespace

void bind_engine(pyb::module_& m) {
  m.def("_training_context", &training_context, pyb::arg("path"),
        "The model file's training context (0 when its header does not say).");
  m.def(
      "_default_context",
      [](const std::string& path) { return reader::default_context(training_context(path)); },
      pyb::arg("path"), "The context length a Model of this file gets when ctx=None.");
  pyb::class_<Attention>(m, "Attention",
                         "Softmax attention of one query token over the prompt (one layer).")
      .def_readonly("layer", &Attention::layer, "the layer (counted from 0)")
      .def_readonly("query_position", &Attention::query_position, "the query token's position")
      .def_readonly("heads", &Attention::heads,
                    "numpy float32 [heads, positions]: each head's weights over keys "
                    "0..query_position")
      .def_readonly("mean", &Attention::mean, "numpy float32 [positions]: the mean over heads")
      .def_readonly("abs", &Attention::abs,
                    "C-NORM's Attention Balance Score of `mean`: 1 - 2|mu - 0.5| (paper 4.2)")
      .def_readonly("head_ids", &Attention::head_ids, "which heads `heads` holds")
      .def_readonly("ids", &Attention::ids, "the prompt's token ids")
      // A token may end inside a UTF-8 character (byte-level BPE): its piece is decoded with
      // U+FFFD for the partial bytes, as token_piece does, instead of raising on the attribute.
      .def_property_readonly(
          "pieces",
          [](const Attention& a) {
            pyb::list out;
            for (const std::string& p : a.pieces) out.append(piece_str(p));
            return out;
          },
          "the prompt's token pieces (str; bytes of a split UTF-8 character as U+FFFD)")
      .def("__repr__", [](const Attention& a) {
        return "<ragform.Attention layer " + std::to_string(a.layer) + ", query " +
               std::to_string(a.query_position) + ", " + std::to_string(a.head_ids.size()) +
               " heads, ABS " + std::to_string(a.abs) + ">";
      });

  pyb::class_<Reader, std::shared_ptr<Reader>> rd(
      m, "Reader",
      "What every reader answers (reader/reader.h): generate, score and, on the native engine, "
      "attention and hidden states (attention also through ragform serve).");
  rd.def_property(
      "steering", [](const Reader& r) { return r.steering.describe(); },
      [](Reader& r, const pyb::object& o) {
        r.steering = reader::parse_steering(steering_json(o));
      },
      "Attention steering of generate, score, attention and hidden (as `--steer`): set None or "
      "{'rule': 'rescale:F' | 'reallocate:S' | 'redistribute:W1,W2,...' | 'off', 'spans': "
      "[(start, end), ...] byte offsets into each prompt (not needed with 'off'), 'layers': [...] "
      "or 'A..B' (default: the last half), 'heads': [...]}, the server's \"steer\" object; "
      "reads back its description ('off' or the setting). A bad value is a ValueError naming its "
      "key (steering['spans']: ...), when set or when a prompt shows it does not fit. Part of a "
      "run's identity in run stores. Readers that cannot steer (OpenAIReader) raise NotSupported "
      "when it is on.");
  // Model.generate(chat=True) on a Model opened without chat runs on a second reader of the file:
  // it takes this one's steering at each call (pass 24: it was dropped without a word).
  rd.def(
      "_copy_steering_to", [](const Reader& from, Reader& to) { to.steering = from.steering; },
      pyb::arg("other"));
  rd.def_property_readonly("description", &Reader::describe,
                           "stable description for run stores: native:<file> or "
                           "openai:<model> (no server URL: several servers of one model "
                           "form one run)")
      .def_property_readonly("chat_mode", &Reader::chat_mode, "raw, or the chat family used")
      .def_property_readonly(
          "capabilities",
          [](const Reader& r) {
            auto c = r.capabilities();
            pyb::dict d;
            d["generate"] = c.generate;
            d["score"] = c.score;
            d["attention"] = c.attention;
            d["hidden"] = c.hidden;
            return d;
          },
          "which of generate, score, attention, hidden this reader answers")
      .def(
          "_generate",
          [](Reader& r, const std::string& prompt, const pyb::kwargs& kw) {
            // The keywords of ragform.Model.generate / OpenAIReader.generate: the declared
            // GenerateRequest (reader/generate_options.h), checked as the CLI's flags are.
            reader::GenerateRequest o;
            bind_keywords(o, kw, "generate");
            const reader::GenerateParams p = reader::generate_params(o);
            reader::Generation g;
            {
              pyb::gil_scoped_release nogil;
              g = r.generate(prompt, p);
            }
            return generation_dict(g);
          },
          pyb::arg("prompt"),
          "One generation as a dict {text, ids, finish_reason, prompt_tokens} (as `ragform "
          "generate --json`); the keywords are ragform._ragform.options('generate').")
      .def("score", &score, pyb::arg("prompt"), pyb::arg("continuation") = "",
           "Per-token natural-log probabilities of `continuation` after `prompt` (numpy "
           "float64), as the `logprob`s of `ragform score --json`. An empty continuation scores "
           "the prompt's own tokens after the first.")
      .def("score_details", &score_details, pyb::arg("prompt"), pyb::arg("continuation") = "",
           "As score(), as the dict `ragform score --json` prints: {tokens: [{id, piece, "
           "logprob}], sum, prompt_tokens}.")
      .def("attention", &attention, pyb::arg("prompt"),
           pyb::arg("layer") = cnorm::RelevanceRequest{}.layer,
           pyb::arg("query") = cnorm::RelevanceRequest{}.query,
           "Attention of the `query` token (negative counts from the end) over the prompt in "
           "`layer` (negative counts from the end), as `ragform attention --json`: an Attention "
           "with .heads, .mean and .abs.")
      .def("hidden", &hidden, pyb::arg("prompt"), pyb::arg("layer"),
           "Hidden states after block `layer` (n_layer = the final norm's output) for every "
           "prompt token: numpy float32 [positions, n_embd].")
      .def(
          "count_tokens",
          [](Reader& r, const std::string& prompt) {
            pyb::gil_scoped_release nogil;
            return r.count_tokens(prompt);
          },
          pyb::arg("prompt"), "Number of tokens the reader would feed for `prompt`.");

  pyb::class_<reader::NativeReader, Reader, std::shared_ptr<reader::NativeReader>>(
      m, "_Model", "A GGUF model on ragform's engine (reader::NativeReader).")
      .def(pyb::init(&open_model), pyb::arg("path"),
           "Opens the model with the keyword arguments of ragform._ragform.options('model') (the "
           "reader and engine settings the CLI's flags come from); ragform.Model is the wrapper "
           "with their signature.")
      .def_property_readonly("path", &reader::NativeReader::model_path)
      .def_property_readonly(
          "prefill",
          [](const reader::NativeReader& r) {
            std::optional<reader::PrefillCounts> c;
            {
              // the reader's lock, which a generating thread holds with the GIL released
              pyb::gil_scoped_release nogil;
              c = r.prefill_counts();
            }
            pyb::dict d;
            if (c) {
              d["submitted"] = c->submitted;
              d["computed"] = c->computed;
            }
            return d;
          },
          "Prompt tokens given to prefill since the Model opened ({'submitted', 'computed'}; the "
          "rest came from the prefix cache).")
      .def_property_readonly(
          "prefix_cache_stats",
          [](const reader::NativeReader& r) -> pyb::object {
            auto pc = r.prefix_cache();
            if (!pc) return pyb::none();
            return from_json(runtime::to_json(pc->stats()));
          },
          "The prefix cache's counters (as serve's /health), or None when it is off.")
      .def_property_readonly("n_vocab",
                             [](const reader::NativeReader& r) { return r.model().hp().n_vocab; })
      .def_property_readonly("n_embd",
                             [](const reader::NativeReader& r) { return r.model().hp().n_embd; })
      .def_property_readonly("n_layer",
                             [](const reader::NativeReader& r) { return r.model().hp().n_layer; })
      .def_property_readonly("n_head",
                             [](const reader::NativeReader& r) { return r.model().hp().n_head; })
      .def_property_readonly("warnings",
                             [](const reader::NativeReader& r) { return r.model().warnings(); })
      .def(
          "tokenize",
          [](const reader::NativeReader& r, const std::string& text, bool bos, bool special) {
            pyb::gil_scoped_release nogil;
            return r.tokenizer().encode(text, bos, special);
          },
          pyb::arg("text"), pyb::arg("bos").noconvert() = true,
          pyb::arg("special").noconvert() = false,
          "Token ids of `text`. bos: add BOS (and EOS / [CLS] [SEP]) as the vocabulary asks; "
          "special: parse special-token text (off, as for prompts: documents cannot inject "
          "control tokens). `ragform tokenize --no-special` gives the same ids.")
      .def(
          "detokenize",
          [](const reader::NativeReader& r, const std::vector<Int<int32_t>>& given,
             bool render_special) {
            const std::vector<int32_t> ids(given.begin(), given.end());
            for (int32_t id : ids) check_token_id("detokenize", id, r.tokenizer().n_vocab());
            return piece_str(r.tokenizer().decode(ids, render_special));
          },
          pyb::arg("ids"), pyb::arg("render_special").noconvert() = false, "Text of token ids.")
      .def(
          "token_piece",
          [](const reader::NativeReader& r, Int<int32_t> id) {
            check_token_id("token_piece", id, r.tokenizer().n_vocab());
            return piece_str(r.tokenizer().token_to_piece(id, true));
          },
          pyb::arg("id"), "The piece of one token.")
      .def(
          "prompt_tokens",
          [](const reader::NativeReader& r, const std::string& prompt) {
            pyb::gil_scoped_release nogil;
            return r.prompt_tokens(prompt);
          },
          pyb::arg("prompt"),
          "The tokens a prompt becomes when fed (chat wrapping and truncation applied).")
      .def("_logits", &logits, pyb::arg("prompt"), pyb::arg("kv"));

  pyb::class_<reader::OpenAIReader, Reader, std::shared_ptr<reader::OpenAIReader>>(
      m, "OpenAIReader",
      "A reader over an OpenAI-compatible server (llama-server, vLLM, ragform serve): generate "
      "and, where the server gives log-probs, score; attention only from ragform serve (other "
      "servers raise NotImplementedError); hidden states never (NotImplementedError).")
      .def(pyb::init([](const pyb::kwargs& kw) {
             // Every keyword is declared once (reader/openai_reader.h, OpenAIOptions::visit;
             // ragform._ragform.options("openai_reader") gives the wrapper its signature) and
             // checked by the reader itself (check_options): an error names the keyword.
             reader::OpenAIOptions o;
             bind_keywords(o, kw, "OpenAIReader");
             if (o.base_url.empty()) throw UsageError("base_url", "must not be empty");
             return std::make_shared<reader::OpenAIReader>(o);
           }),
           "Opens the reader with the keyword arguments of "
           "ragform._ragform.options('openai_reader'); ragform.OpenAIReader is the wrapper with "
           "their signature.");

  pyb::class_<reader::NativeEncoder, std::shared_ptr<reader::NativeEncoder>>(
      m, "_Encoder",
      "A BERT-family encoder (BGE, MiniLM, NLI cross-encoders) on ragform's engine "
      "(reader::NativeEncoder, docs/encoders.md).")
      .def(pyb::init(&open_encoder), pyb::arg("path"),
           "Opens the encoder with the keyword arguments of ragform._ragform.options('encoder') "
           "(the settings `ragform embed`'s flags come from); ragform.Encoder is the wrapper with "
           "their signature.")
      .def_property_readonly("description", &reader::NativeEncoder::describe)
      .def(
          "embed",
          [](reader::NativeEncoder& e, const std::vector<std::string>& texts,
             std::optional<std::string> pooling, bool normalize) {
            std::optional<model::Pooling> pool;
            if (pooling) pool = parse_arg([&] { return model::parse_pooling(*pooling); });
            if (pool == model::Pooling::None)
              throw UsageError("embed", "pooling none gives token vectors: use a pooled mode");
            std::vector<reader::Embedding> res;
            {
              pyb::gil_scoped_release nogil;
              res = e.embed(texts, pool, normalize);
            }
            // No texts: still [0, n_embd], so the result stacks with other batches' vectors.
            const pyb::ssize_t n_embd = res.empty() ? e.model().hp().n_embd : res[0].n_embd;
            std::vector<float> flat;
            flat.reserve(res.size() * size_t(n_embd));
            for (const auto& r : res) flat.insert(flat.end(), r.vector.begin(), r.vector.end());
            return to_numpy(std::move(flat), {pyb::ssize_t(res.size()), n_embd});
          },
          pyb::arg("texts"), pyb::arg("pooling") = std::nullopt,
          pyb::arg("normalize").noconvert() = false,
          "Pooled vectors of `texts` (numpy float32 [len(texts), n_embd]); pooling: mean, cls "
          "or last (None: the model's own), L2-normalised with normalize=True (as `ragform embed "
          "--json`, --normalize).");
}

}  // namespace ragform::py

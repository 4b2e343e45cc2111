// The pipelines for Python: SpotlightRAG selection (pipelines/spotlight); C-NORM is in
// pipelines_cnorm.cpp, SURE in pipelines_sure.cpp.
// Records and results are plain dicts, the JSON objects of the JSONL files.
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>

#include <pybind11/stl.h>

#include "base/error.h"
#include "bindings.h"
#include "eval/datasets.h"
#include "options.h"
#include "pipelines/common/common.h"
#include "pipelines/spotlight/spotlight.h"
#include "qa_records.h"
#include "reader/native_encoder.h"
#include "reader/native_reader.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::py {

namespace {

// ---------------------------------------------------------------- SpotlightRAG

// As `ragform spotlight select --json` on one record. The token encoder: word vectors (a dict
// {word: [floats]} or a JSON file path), an Encoder (--encoder model) or a Model's hidden states
// of `layer` (--encoder hidden). The keywords are the declared SelectOptions
// (pipelines/spotlight/select_options.h; k / lam None: the ranker's defaults, as the CLI's).
pyb::object spotlight_select(const pyb::handle& record, pyb::object vectors, pyb::object encoder,
                             const pyb::kwargs& kw) {
  using namespace spotlight;
  SelectOptions o;
  bind_keywords(o, kw, "spotlight.select");
  try {
    check_select_options(o);
  } catch (const OptionError& e) {
    throw python_spelled<SelectOptions>(e);
  }
  const ScoreParams sp = score_params(o.score, default_score_params());
  if (vectors.is_none() == encoder.is_none())
    throw UsageError("spotlight", "give exactly one of vectors= or encoder=");
  std::unique_ptr<WordVectors> wv;
  std::shared_ptr<reader::Reader> rd;  // kept alive for the HiddenEncoder that borrows it
  std::unique_ptr<TokenEncoder> enc;
  if (!vectors.is_none()) {
    if (pyb::isinstance<pyb::dict>(vectors)) {
      // Read by the file's reader (the same values accepted, each refusal naming its word; pass
      // 20: None or a number as a word gave pybind's cast error, true was taken as 1). A bad table
      // is a bad argument: ValueError, as other parsed arguments.
      const std::string text = to_json(vectors, "vectors").dump();
      wv = std::make_unique<WordVectors>(
          parse_arg([&] { return WordVectors::parse(text, "vectors"); }));
    } else {
      std::string path = pyb::str(pyb::module_::import("os").attr("fspath")(vectors));
      wv = std::make_unique<WordVectors>(WordVectors::load(path));
    }
    enc = std::make_unique<StaticEncoder>(*wv, oov_policy(o.encoder));
  } else if (pyb::isinstance<reader::NativeEncoder>(encoder)) {
    enc = std::make_unique<ModelEncoder>(encoder.cast<reader::NativeEncoder&>());
  } else if (pyb::isinstance<reader::Reader>(encoder) || pyb::hasattr(encoder, "hidden") ||
             pyb::hasattr(encoder, "generate")) {
    // A Model's hidden states, or any Python reader's hidden(prompt, layer) (one without hidden
    // is refused naming it).
    rd = reader_arg(encoder, "encoder");
    require_methods(*rd, {"hidden"}, "spotlight.select");
    enc = std::make_unique<HiddenEncoder>(*rd, int(o.encoder.layer));
  } else {
    throw UsageError("spotlight",
                     "encoder must be a ragform.Encoder, a ragform.Model or a Python reader with "
                     "hidden(prompt, layer)");
  }
  std::vector<eval::QaRecord> recs = qa_records(pyb::make_tuple(record));
  const eval::QaRecord& r = recs.at(0);
  if (r.ctxs.empty()) throw UsageError("spotlight", "record '" + r.id + "' has no contexts");
  const SelectParams sel = select_params(o.score, o.prompt);
  nlohmann::ordered_json out;
  {
    pyb::gil_scoped_release nogil;
    std::vector<Document> docs = documents_of(r);
    ScoredQuestion sq = score_question(*enc, r.question, docs, sp);
    Selection s = select_and_annotate(r.question, docs, sq, sel);
    // The object `spotlight select --json` prints (selection_json.h), with the full-precision
    // scores (the CLI rounds them to 9 significant digits).
    out = selection_json(r.id, s);
  }
  return from_json(out);
}

}  // namespace

void bind_pipelines(pyb::module_& m) {
  using pyb::arg;
  m.def("_spotlight_select", &spotlight_select, arg("record"), arg("vectors"), arg("encoder"));
}

}  // namespace ragform::py

// Positional attention bias and calibrated document relevance for Python (python/ragform/bias.py):
// the functions of `ragform position-bias` and `ragform attention --doc-spans --calibrated`
// (pipelines/cnorm/position_bias.h, relevance.h), returning the dicts those commands print.
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "base/error.h"
#include "bindings.h"
#include "engine/model/model.h"
#include "options.h"
#include "pipelines/cnorm/cnorm.h"
#include "qa_records.h"
#include "reader/native_reader.h"

namespace ragform::py {

namespace {

// doc_spans: a list of (start, end) byte offsets, as /v1/attention's "doc_spans". The keywords
// are position_bias.h's RelevanceRequest (layer, query), as the CLI's --layer and --query.
pyb::object document_relevance(const pyb::handle& model, const std::string& prompt,
                               const pyb::handle& doc_spans, const pyb::handle& bias,
                               const pyb::kwargs& kw) {
  cnorm::RelevanceRequest req;
  bind_keywords(req, kw, "bias.document_relevance");
  const reader::AttentionQuery q = cnorm::relevance_query(req);
  const std::shared_ptr<reader::Reader> rd = reader_arg(model, "model");
  require_methods(*rd, {"attention"}, "bias.document_relevance");
  const std::vector<cnorm::CharSpan> spans =
      cnorm::char_spans_from_json(to_json(doc_spans, "doc_spans"), "doc_spans");
  std::optional<cnorm::BiasCurve> curve;
  // A path is the CLI's --bias file, read by its reader; a dict is the curve itself.
  if (pyb::isinstance<pyb::str>(bias))
    curve = cnorm::load_bias_curve(bias.cast<std::string>());
  else if (!bias.is_none())
    curve = cnorm::bias_curve_from_json(to_json(bias, "bias"), "bias");
  nlohmann::json out;
  {
    pyb::gil_scoped_release nogil;
    const reader::AttentionResult r = rd->attention(prompt, q);
    const reader::AttentionRows& row = r.rows.at(0);
    // The bound on the report's work that the CLI and the server apply.
    cnorm::check_document_work(spans.size(), 1, row.mean.size(), "doc_spans");
    out = cnorm::document_report(prompt, r, row, spans, curve ? &*curve : nullptr);
    out["layer"] = row.layer;
    out["query_position"] = row.query_position;
  }
  return from_json(out);
}

// The curve of `ragform position-bias --json` (no store): every layer of the model. The keywords
// are setup.h's BiasCurveRequest, planned by bias_curve_plan as the CLI plans them.
pyb::object position_bias(const pyb::handle& model, pyb::object records, const pyb::kwargs& kw) {
  cnorm::BiasCurveRequest req;
  bind_keywords(req, kw, "bias.position_bias");
  const std::shared_ptr<reader::Reader> rd = reader_arg(model, "model");
  auto* native = dynamic_cast<reader::NativeReader*>(rd.get());
  if (!native) throw UsageError("model", "position_bias reads attention: give a ragform.Model");
  // QA record dicts or the path of a JSONL file, as every records= argument (pass 23: a path was
  // iterated as if it held records).
  const std::vector<eval::QaRecord> recs = records_arg(records, /*with_sha=*/false).records;
  cnorm::BiasCurvePlan plan = cnorm::bias_curve_plan(req, recs);
  cnorm::PositionBiasOptions& o = plan.options;
  for (int l = 0; l < int(native->model().hp().n_layer); ++l) o.layers.push_back(l);
  o.origin = common::origin_for(*rd);
  pyb::gil_scoped_release nogil;
  const nlohmann::json out = cnorm::bias_curve_json(cnorm::run_position_bias(*rd, plan.items, o));
  pyb::gil_scoped_acquire gil;
  return from_json(out);
}

}  // namespace

void bind_bias(pyb::module_& m) {
  using pyb::arg;
  m.def("_document_relevance", &document_relevance, arg("model"), arg("prompt"), arg("doc_spans"),
        arg("bias"));
  m.def("_position_bias", &position_bias, arg("model"), arg("records"));
}

}  // namespace ragform::py

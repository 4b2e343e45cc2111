#include "pipelines/cnorm/position_bias.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_file.h"
#include "base/json_keys.h"
#include "base/json_number.h"
#include "pipelines/cnorm/detail/numeric.h"

namespace ragform::cnorm {

const std::vector<Document>& default_fillers(Task t) {
  static const std::vector<Document> qa = {
      {"Notice", "This page is intentionally left blank."},
      {"Placeholder", "No content is available for this entry."},
      {"Filler", "The text of this document has been removed and nothing is said here."}};
  // TinyStories words only, so that stories260K reads them as ordinary text.
  static const std::vector<Document> needle = {{"", "The sky was blue. The grass was green."},
                                               {"", "It was a sunny day. The wind was soft."},
                                               {"", "There was a big tree. The tree was old."}};
  if (t == Task::Qa) return qa;
  if (t == Task::Needle) return needle;
  throw UsageError("position-bias",
                   std::string("--task must be qa or needle, got ") + task_name(t));
}

std::vector<Document> filler_documents(const Item& item, size_t k, size_t slot,
                                       const Document& filler) {
  if (slot >= k)
    throw UsageError("position-bias",
                     "slot " + std::to_string(slot) + " is outside 0.." + std::to_string(k - 1));
  std::vector<Document> docs;
  if (k > 1) docs = arrange(item, k - 1, 0);  // the gold first, then the distractors in order
  docs.insert(docs.begin() + long(slot), filler);
  return docs;
}

std::vector<CharSpan> document_spans(const Prompt& p, const std::vector<Document>& docs) {
  std::vector<CharSpan> out;
  size_t at = p.ctx_begin;
  for (size_t i = 0; i < docs.size(); ++i) {
    size_t b = p.text.find(docs[i].text, at);
    if (docs[i].text.empty() || b == std::string::npos || b + docs[i].text.size() > p.ctx_end)
      throw Error("position-bias",
                  "document " + std::to_string(i) + "'s text is not in the rendered prompt");
    out.push_back({b, b + docs[i].text.size()});
    at = b + docs[i].text.size();
  }
  return out;
}

namespace {

std::string variant_of(size_t slot, size_t filler) {
  return "slot" + std::to_string(slot) + "/filler" + std::to_string(filler);
}

// The filler's mass at `slot` of one prompt: "mass" (mean over layers) and "l<L>" per layer.
// One slot's attention into `row` (its prompt set): the span's mass per layer and their mean as
// scores, and the prompt's tokens and the reader's time, as C-NORM calibration's rows keep them
// (issue 43: the curves' cost was "not recorded").
void measure_slot(reader::Reader& r, store::Result& row, const CharSpan& span,
                  const std::vector<int>& layers, Measure measure) {
  reader::AttentionQuery q;
  q.layers = layers;
  q.query_positions = {-1};
  const auto t0 = std::chrono::steady_clock::now();
  const reader::AttentionResult res = r.attention(row.prompt, q);
  row.timings_ms["total"] =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  row.prompt_tokens = int64_t(res.pieces.size());
  const std::vector<TokenSpan> tok = resolve_spans(row.prompt, res.pieces, {span}, res.prompt_at);
  double sum = 0;
  for (const auto& a : res.rows) {
    double m = span_attention(a.mean, tok, measure)[0];
    row.scores["l" + std::to_string(a.layer)] = m;
    sum += m;
  }
  if (res.rows.empty()) throw Error("position-bias", "the reader returned no attention row");
  row.scores["mass"] = sum / double(res.rows.size());
}

void check_options(const PositionBiasOptions& o, const std::vector<Item>& items) {
  default_fillers(o.task);  // refuses tasks other than qa and needle
  if (o.k == 0) throw UsageError("-k", "must be at least 1");
  if (o.layers.empty()) throw UsageError("position-bias", "no layers to measure");
  if (items.empty()) throw Error("position-bias", "no items");
}

nlohmann::json identity(const PositionBiasOptions& o, const std::vector<Document>& fillers) {
  nlohmann::json f = nlohmann::json::array();
  for (const auto& d : fillers) f.push_back({d.title, d.text});
  nlohmann::json id = {{"task", task_name(o.task)},
                       {"template", o.tmpl},
                       {"k", o.k},
                       {"layers", o.layers},
                       {"fillers", f},
                       {"seed", o.seed},
                       {"input_sha256", o.input_sha256}};
  // Sums were the only measure once: their runs keep the identity they had.
  if (o.measure != Measure::Sum) id["measure"] = measure_name(o.measure);
  return id;
}

// The curve from every row's scores: mean per slot, per layer and overall.
BiasCurve curve_from_rows(const std::vector<store::Result>& rows, const PositionBiasOptions& o) {
  BiasCurve c;
  c.task = task_name(o.task);
  c.k = o.k;
  c.measure = o.measure;
  c.curve.assign(o.k, 0.0);
  for (int l : o.layers) c.layers.push_back({l, std::vector<double>(o.k, 0.0)});
  std::vector<size_t> n(o.k, 0);
  for (const store::Result& row : rows) {
    if (row.status != store::Status::ok) continue;
    size_t slot = size_t(row.extra.value("slot", -1));
    if (slot >= o.k) continue;
    ++n[slot];
    ++c.prompts;
    c.curve[slot] += row.scores.at("mass");
    for (auto& lc : c.layers) lc.curve[slot] += row.scores.at("l" + std::to_string(lc.layer));
  }
  for (size_t s = 0; s < o.k; ++s) {
    if (n[s] == 0) throw Error("position-bias", "slot " + std::to_string(s) + " was not measured");
    c.curve[s] /= double(n[s]);
    for (auto& lc : c.layers) lc.curve[s] /= double(n[s]);
  }
  return c;
}

// Measures every (item, slot, filler) whose key is not in `done`, handing each row to `put`.
template <class Put>
void measure_all(reader::Reader& r, const std::vector<Item>& items, const PositionBiasOptions& o,
                 const std::vector<Document>& fillers, const std::set<store::Key>& done,
                 int64_t run, Put put) {
  common::Stage stage(o.hooks, "position-bias", uint64_t(items.size() * fillers.size() * o.k));
  for (const Item& it : items)
    for (size_t f = 0; f < fillers.size(); ++f)
      for (size_t s = 0; s < o.k; ++s) {
        const std::string variant = variant_of(s, f);
        if (done.count({it.id, variant})) {
          stage.add();
          continue;
        }
        std::vector<Document> docs = filler_documents(it, o.k, s, fillers[f]);
        Prompt p = render(o.task, o.tmpl, it, docs, Format{original_delimiter()});
        store::Result row;
        row.run = run;
        row.instance = it.id;
        row.variant = variant;
        row.prompt = p.text;
        measure_slot(r, row, document_spans(p, docs)[s], o.layers, o.measure);
        row.extra = {{"slot", s}, {"filler", f}};
        put(std::move(row));
        stage.add();
      }
}

}  // namespace

BiasCurve run_position_bias(reader::Reader& r, store::RunStore& st, const std::vector<Item>& items,
                            const PositionBiasOptions& opt) {
  check_options(opt, items);
  const std::vector<Document>& fillers =
      opt.fillers.empty() ? default_fillers(opt.task) : opt.fillers;
  store::RunConfig rc;
  rc.pipeline = "position-bias";
  rc.config = identity(opt, fillers);
  rc.seed = int64_t(opt.seed);
  common::Resumed res =
      common::begin_or_resume(st, rc, opt.origin, opt.hooks, "position-bias",
                              uint64_t(items.size() * fillers.size() * opt.k), "prompts");
  measure_all(r, items, opt, fillers, res.done, res.run, [&](store::Result row) { st.put(row); });
  BiasCurve c = curve_from_rows(st.results(res.run), opt);
  c.reader = opt.origin.reader;
  c.model_sha256 = opt.origin.model_sha256;
  c.run = res.run;
  return c;
}

BiasCurve run_position_bias(reader::Reader& r, const std::vector<Item>& items,
                            const PositionBiasOptions& opt) {
  check_options(opt, items);
  const std::vector<Document>& fillers =
      opt.fillers.empty() ? default_fillers(opt.task) : opt.fillers;
  std::vector<store::Result> rows;
  measure_all(r, items, opt, fillers, {}, 0, [&](store::Result row) { rows.push_back(row); });
  BiasCurve c = curve_from_rows(rows, opt);
  c.reader = opt.origin.reader;
  c.model_sha256 = opt.origin.model_sha256;
  return c;
}

namespace {

nlohmann::json rounded(const std::vector<double>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) a.push_back(detail::round9(x));
  return a;
}

// A curve: attention mass per slot, each a finite number in [0, 1] (a sum or a mean of one
// attention row's weights), as calibration subtracts it from a document's own mass (relevance.cpp).
std::vector<double> numbers(const nlohmann::json& j, const std::string& what,
                            const std::string& field) {
  if (!j.is_array() || j.empty())
    throw UsageError(what, "'" + field + "' must be a non-empty array of numbers");
  std::vector<double> out;
  for (const auto& x : j) {
    if (!x.is_number()) throw UsageError(what, "'" + field + "' holds " + json_excerpt(x));
    const double v = x.get<double>();
    if (!(v >= 0 && v <= 1))
      throw UsageError(
          what, "'" + field + "' holds " + json_excerpt(x) + ": an attention mass is in [0, 1]");
    out.push_back(v);
  }
  return out;
}

// The optional metadata fields, each of its own type or absent (nlohmann's unchecked value()
// threw its own type_error, a 500 over HTTP naming no field: issue 40, pass 11).
std::string text_field(const nlohmann::json& j, const char* key, const std::string& what) {
  if (!j.contains(key) || j[key].is_null()) return "";
  if (!j[key].is_string()) throw UsageError(what, std::string("'") + key + "' must be a string");
  return j[key].get<std::string>();
}

// A whole number in [lo, hi] (an unsigned value above INT64_MAX, or a layer past an int, wrapped
// silently: layer 4294967300 calibrated layer 4).
int64_t whole_field(const nlohmann::json& v, const std::string& field, int64_t lo, int64_t hi,
                    const std::string& what) {
  long long x = 0;  // 3.0 as 3 (base/json_number.h)
  const bool ok = json_whole_number(v, x) && x >= lo && x <= hi &&
                  !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi));
  if (!ok)
    throw UsageError(what, "'" + field + "' must be a whole number in [" + std::to_string(lo) +
                               ", " + std::to_string(hi) + "], got " + json_excerpt(v));
  return x;
}

}  // namespace

nlohmann::json bias_curve_json(const BiasCurve& c) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : c.layers)
    layers.push_back({{"layer", l.layer}, {"curve", rounded(l.curve)}});
  return {{"task", c.task},
          {"k", c.k},
          {"measure", measure_name(c.measure)},
          {"prompts", c.prompts},
          {"curve", rounded(c.curve)},
          {"layers", layers},
          {"reader", c.reader},
          {"model_sha256", c.model_sha256},
          {"run", c.run}};
}

BiasCurve bias_curve_from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object() || !j.contains("curve"))
    throw UsageError(what, "expected a bias curve object with a 'curve' array");
  // What bias_curve_json writes, and nothing else: a misspelt "mesure" read the curve as sums
  // (issue 40, pass 18). Every ragform since the format began wrote these keys only.
  only_json_keys(
      j, {"task", "k", "measure", "prompts", "curve", "layers", "reader", "model_sha256", "run"},
      what, "a bias curve");
  BiasCurve c;
  c.curve = numbers(j["curve"], what, "curve");
  c.k = c.curve.size();
  // "k" is the curve's length, written beside it: one that disagrees was ignored (pass 12).
  if (j.contains("k") && !j["k"].is_null() &&
      size_t(whole_field(j["k"], "k", 1, std::numeric_limits<int64_t>::max(), what)) != c.k)
    throw UsageError(what, "'k' is " + json_excerpt(j["k"]) + " but 'curve' has " +
                               std::to_string(c.k) + " slots");
  c.task = text_field(j, "task", what);
  // A curve written before the measure existed holds sums.
  nlohmann::json measure = j.value("measure", nlohmann::json());
  if (measure.is_null()) measure = "sum";  // null is absent (base/json_keys.h)
  if (!measure.is_string()) throw UsageError(what, "'measure' must be \"mean\" or \"sum\"");
  c.measure = parse_measure(measure.get<std::string>(), what);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (j.contains("prompts") && !j["prompts"].is_null())
    c.prompts = size_t(whole_field(j["prompts"], "prompts", 0, kMax, what));
  c.reader = text_field(j, "reader", what);
  c.model_sha256 = text_field(j, "model_sha256", what);
  if (j.contains("run") && !j["run"].is_null())
    c.run = whole_field(j["run"], "run", std::numeric_limits<int64_t>::min(), kMax, what);
  if (j.contains("layers") && !j["layers"].is_null()) {
    if (!j["layers"].is_array()) throw UsageError(what, "'layers' must be an array");
    for (const auto& l : j["layers"]) {
      if (!l.is_object() || !l.contains("layer"))
        throw UsageError(what, "each of 'layers' needs an integer 'layer' and a 'curve'");
      only_json_keys(l, {"layer", "curve"}, what, "an entry of 'layers'");
      const int layer =
          int(whole_field(l["layer"], "layers[].layer", 0, std::numeric_limits<int>::max(), what));
      // One curve a layer: a second one was ignored (the first matched).
      for (const auto& seen : c.layers)
        if (seen.layer == layer)
          throw UsageError(what, "layer " + std::to_string(layer) + " is in 'layers' twice");
      LayerCurve lc{layer, numbers(l.value("curve", nlohmann::json()), what, "layers[].curve")};
      if (lc.curve.size() != c.k)
        throw UsageError(what, "layer " + std::to_string(lc.layer) + " has " +
                                   std::to_string(lc.curve.size()) + " slots, 'curve' has " +
                                   std::to_string(c.k));
      c.layers.push_back(std::move(lc));
    }
  }
  return c;
}

BiasCurve load_bias_curve(const std::string& path) {
  return bias_curve_from_json(read_settings_json_file(path, "bias curve"), path);
}

void save_bias_curve(const BiasCurve& c, const std::string& path) {
  write_file_atomically(path, bias_curve_json(c).dump(2) + "\n", "position-bias");
}

const std::vector<double>& bias_for_layer(const BiasCurve& c, int layer) {
  for (const auto& l : c.layers)
    if (l.layer == layer) return l.curve;
  return c.curve;
}

reader::AttentionQuery relevance_query(RelevanceRequest req) {
  ragform::check_options(req);
  reader::AttentionQuery q;
  q.layers = {int(req.layer)};
  q.query_positions = {int(req.query)};
  return q;
}

nlohmann::json document_report(const std::string& prompt, const reader::AttentionResult& r,
                               const reader::AttentionRows& row, const std::vector<CharSpan>& spans,
                               const BiasCurve* bias) {
  const std::vector<double>* curve = bias ? &bias_for_layer(*bias, row.layer) : nullptr;
  if (curve && curve->size() != spans.size())
    throw UsageError("bias", "the curve has " + std::to_string(curve->size()) + " slots but " +
                                 std::to_string(spans.size()) +
                                 " document spans were given (measure it with -k " +
                                 std::to_string(spans.size()) + ")");
  const Measure m = bias ? bias->measure : Measure::Sum;
  return document_relevance_json(document_relevance(prompt, r, row, spans, curve, m),
                                 bias != nullptr, m);
}

}  // namespace ragform::cnorm

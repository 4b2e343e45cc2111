// A reader's positional attention bias (Hsieh et al. 2024, "Found in the Middle", arXiv
// 2406.16008, section 2.2): how much attention a document gets for its slot alone.
//
// For each item (a real prompt's documents: qa from QA records, needle generated, tasks.h) and
// each of a few fixed uninformative filler documents, the filler is put at each slot i of K: the
// item's gold and first K - 2 distractors in their order, with the filler inserted at slot i. The
// final prompt token's attention (every requested layer, mean over heads) is read over the
// filler's tokens (relevance.h's span rule; the span is the filler's text, not the "Document
// [i](Title: ...)" header): by default the mean per token, the paper's Attn(x_dum, k) (section
// 2.1), or the sum (--measure sum, ragform's earlier form). Averaged over items and fillers, per
// layer and over layers, that is the bias curve: one value per slot, U-shaped in the paper's
// models. relevance.h subtracts it from documents read under the same measure, which the curve
// carries ("measure"; a curve file without it was measured as sums).
//
// Run store: pipeline "position-bias", one row per (item id, "slot<i>/filler<j>") with scores
// "mass" (the filler's attention under the run's measure, mean over the layers) and "l<L>" (layer
// L); the curve is computed from the stored rows, so a resumed run counts every row. The run's
// identity holds "measure" when it is the mean (sum runs keep the identity they had). The curve
// file (--output) is bias_curve_json's object.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/options.h"
#include "pipelines/cnorm/relevance.h"
#include "pipelines/cnorm/tasks.h"
#include "pipelines/common/common.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::cnorm {

// The built-in filler documents of a task (qa and needle): text that answers no question, in the
// task's vocabulary (the needle's is TinyStories').
const std::vector<Document>& default_fillers(Task t);

struct PositionBiasOptions {
  Task task = Task::Qa;             // qa or needle
  std::string tmpl;                 // the task's template (load_template)
  size_t k = 10;                    // slots
  std::vector<int> layers;          // layer indices (0-based) to tap; every layer of the model
  std::vector<Document> fillers;    // empty = default_fillers(task)
  Measure measure = Measure::Mean;  // how the filler's attention is read (see above)
  common::RunOrigin origin;         // the reader's provenance (runs of other readers never merge)
  std::string input_sha256;         // of the input file; "" for needle
  uint64_t seed = 0;                // the items' seed (recorded in the run's identity)
  common::RunHooks hooks;
};

struct LayerCurve {
  int layer = 0;
  std::vector<double> curve;  // [slot]
};

struct BiasCurve {
  std::string task;
  size_t k = 0;
  Measure measure = Measure::Mean;  // what the curve's values are; documents are read the same way
  size_t prompts = 0;               // prompts measured (items x fillers x slots)
  std::vector<double> curve;        // [slot]: mean over items, fillers and layers
  std::vector<LayerCurve> layers;
  std::string reader;  // the reader that measured it
  std::string model_sha256;
  int64_t run = 0;  // the store's run (0 without a store)
};

// The documents of a filler prompt: item's gold and first k - 2 distractors with `filler` at
// `slot`. Error when the item has too few distractors; UsageError when slot >= k.
std::vector<Document> filler_documents(const Item& item, size_t k, size_t slot,
                                       const Document& filler);
// Where each document's (unformatted) text lies in a rendered prompt, found in order inside the
// prompt's document span. Error when one is not there.
std::vector<CharSpan> document_spans(const Prompt& p, const std::vector<Document>& docs);

// Measures the curve over `items` (see above), resuming from the store's rows of the same run.
BiasCurve run_position_bias(reader::Reader& r, store::RunStore& st, const std::vector<Item>& items,
                            const PositionBiasOptions& opt);
// The same without a store.
BiasCurve run_position_bias(reader::Reader& r, const std::vector<Item>& items,
                            const PositionBiasOptions& opt);

// {"task","k","measure","prompts","curve":[K],"layers":[{"layer","curve"}],"reader",
// "model_sha256","run"}.
nlohmann::json bias_curve_json(const BiasCurve& c);
// A curve from that object (only "curve" is required; "layers" when present must be well formed).
// UsageError naming `what` otherwise.
BiasCurve bias_curve_from_json(const nlohmann::json& j, const std::string& what);
// A curve file; FileError/Error naming the path.
BiasCurve load_bias_curve(const std::string& path);
void save_bias_curve(const BiasCurve& c, const std::string& path);

// The curve to calibrate a row of `layer` with: that layer's when the curve has it, else the
// overall curve.
const std::vector<double>& bias_for_layer(const BiasCurve& c, int layer);

// The attention row a document-relevance report reads, declared once (base/options.h): the
// CLI's `ragform attention --layer/--query` (cli/cmd_attention.cpp) and the keywords of Python's
// ragform.bias.document_relevance (ragform._ragform.options("bias.document_relevance")).
struct RelevanceRequest {
  int64_t layer = -1;
  int64_t query = -1;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"layer", "--layer", "L", "layer (negative counts from the end)"}
          .count(-2147483648.0, 2147483647)
          .first(),
      layer);
    v(OptionDecl{"query", "--query", "POS", "query position (negative counts from the end)"}
          .count(-2147483648.0, 2147483647)
          .first(),
      query);
  }
};

// The request's one attention row: `layer`, for the token at `query` (checked: OptionError).
reader::AttentionQuery relevance_query(RelevanceRequest req);

// What `ragform attention --doc-spans`, /v1/attention's doc_spans and Python report: the
// documents of `spans` under `row` (document_relevance_json), calibrated with the curve of the
// row's layer when `bias` is given. UsageError when the curve has another number of slots.
nlohmann::json document_report(const std::string& prompt, const reader::AttentionResult& r,
                               const reader::AttentionRows& row, const std::vector<CharSpan>& spans,
                               const BiasCurve* bias);

}  // namespace ragform::cnorm

// ragform position-bias: a reader's positional attention bias, the curve Found in the Middle
// calibrates with (pipelines/cnorm/position_bias.h). This file reads flags and prints.
#include <cstdio>
#include <optional>

#include "base/error.h"
#include "cli/cnorm_verbs.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/output_file.h"
#include "cli/reader_flags.h"
#include "cli/run_hooks.h"
#include "engine/model/model.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/common/common.h"
#include "reader/native_reader.h"
#include "reproduce/calibrated_scores.h"
#include "reproduce/calibrated_sweep.h"
#include "reproduce/rank_recall.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::cli {
namespace {

void print_curve(const cnorm::BiasCurve& c) {
  std::fprintf(stderr,
               "position-bias: %zu prompts, attention per slot (%s over the filler's "
               "tokens, mean over layers)\n",
               c.prompts, cnorm::measure_name(c.measure));
  double top = 0;
  for (double m : c.curve) top = std::max(top, m);
  for (size_t s = 0; s < c.curve.size(); ++s) {
    int bar = top > 0 ? int(c.curve[s] / top * 50 + 0.5) : 0;
    std::fprintf(stderr, "  slot %2zu %.6g %s\n", s, c.curve[s],
                 std::string(size_t(bar), '#').c_str());
  }
}

// `position-bias --rank`: Found in the Middle's re-ranking experiment (reproduce/rank_recall.h).
int rank_recall(ReaderFlags& rf, const std::string& input, const std::string& bias, size_t limit,
                const std::string& store_path, bool json) {
  if (bias.empty()) throw UsageError("--rank", "needs --bias FILE (from position-bias -o)");
  if (store_path.empty()) throw UsageError("--rank", "needs --store FILE");
  reproduce::RankRecallOptions o;
  o.bias = cnorm::load_bias_curve(bias);
  o.limit = limit;
  const std::vector<eval::QaRecord> records = eval::load_qa_file(input).records;
  auto reader = rf.open_native();
  for (int l = 0; l < int(reader->model().hp().n_layer); ++l) o.layers.push_back(l);
  o.origin = common::origin_for(*reader);
  o.input_sha256 = store::sha256_file(input);
  std::optional<Progress> progress;
  o.hooks = cli_run_hooks(&progress);
  store::RunStore st(store_path);
  const reproduce::RankRecallSummary s = reproduce::run_rank_recall(*reader, st, records, o);
  progress.reset();
  std::fprintf(stderr, "position-bias --rank: %zu records, recall@k\n   k", s.records);
  for (const auto& m : reproduce::rank_methods()) std::fprintf(stderr, " %10s", m.c_str());
  std::fprintf(stderr, "\n");
  for (size_t k = 0; k < s.k; ++k) {
    std::fprintf(stderr, "  %2zu", k + 1);
    for (const auto& v : s.recall) std::fprintf(stderr, " %10.4f", v[k]);
    std::fprintf(stderr, "\n");
  }
  if (json) print_json_line(reproduce::rank_recall_json(s));
  return 0;
}

// `position-bias --score`: the records with their paragraphs' calibrated relevance as scores
// (reproduce/calibrated_scores.h), one JSON object a line to -o (default stdout).
int score_records(ReaderFlags& rf, const std::string& input, const std::string& bias, size_t limit,
                  const std::string& out) {
  if (bias.empty()) throw UsageError("--score", "needs --bias FILE (from position-bias -o)");
  const cnorm::BiasCurve curve = cnorm::load_bias_curve(bias);
  std::vector<eval::QaRecord> records = eval::load_qa_file(input).records;
  if (limit && records.size() > limit) records.resize(limit);
  auto reader = rf.open_native();
  std::vector<int> layers;
  for (int l = 0; l < int(reader->model().hp().n_layer); ++l) layers.push_back(l);
  std::string text;
  for (const eval::QaRecord& rec : records)
    text += reproduce::scored_record_json(
                rec, reproduce::calibrated_paragraph_scores(*reader, rec, curve, layers))
                .dump() +
            "\n";
  write_output(out, "-o", text, {});  // run_position_bias checked -o against every input
  if (out.empty()) return 0;
  std::fprintf(stderr, "position-bias --score: %zu records written to %s\n", records.size(),
               out.c_str());
  return 0;
}

// `position-bias --sweep` (reproduce/calibrated_sweep.h).
struct SweepArgs {
  cnorm::Task task;
  std::string input, tmpl_path, bias, store_path;
  std::string positions;  // --positions, 1-based ("" = all)
  size_t limit;
  uint64_t seed;
  double share;
  reproduce::SweepAllocation allocation;
  double temperature;
  int max_tokens;
  bool json;
  size_t k_given;  // -k when given (it must equal the curve's slots), else 0
};

int calibrated_sweep(ReaderFlags& rf, const SweepArgs& sa) {
  if (sa.bias.empty()) throw UsageError("--sweep", "needs --bias FILE (from position-bias -o)");
  if (sa.store_path.empty()) throw UsageError("--sweep", "needs --store FILE");
  reproduce::CalibratedSweepOptions o;
  o.task = sa.task;
  o.tmpl = cnorm::load_template(sa.task, sa.tmpl_path);
  o.bias = cnorm::load_bias_curve(sa.bias);
  o.share = sa.share;
  o.allocation = sa.allocation;
  o.temperature = sa.temperature;
  o.max_tokens = sa.max_tokens;
  const size_t k = o.bias.curve.size();
  if (sa.k_given && sa.k_given != k)
    throw UsageError(
        "-k", "--sweep takes K from the bias curve, which has " + std::to_string(k) + " slots");
  o.positions = cnorm::parse_positions(sa.positions, k);  // OptionError: spelled by the caller
  std::vector<cnorm::Item> items =
      cnorm_verbs::input_items(sa.task, sa.input, k, sa.seed, sa.limit);
  if (items.size() > sa.limit) items.resize(sa.limit);
  auto reader = rf.open_native();
  for (int l = 0; l < int(reader->model().hp().n_layer); ++l) o.layers.push_back(l);
  o.origin = common::origin_for(*reader);
  o.input_sha256 = sa.input.empty() ? "" : store::sha256_file(sa.input);
  std::optional<Progress> progress;
  o.hooks = cli_run_hooks(&progress);
  store::RunStore st(sa.store_path);
  const reproduce::CalibratedSweepSummary s =
      reproduce::run_calibrated_sweep(*reader, st, items, o);
  progress.reset();
  std::string where;
  for (size_t p : s.positions) where += (where.empty() ? "" : ",") + std::to_string(p + 1);
  std::fprintf(stderr, "position-bias --sweep: %zu items, accuracy by gold position (%s of %zu)\n",
               s.items, where.c_str(), s.k);
  for (size_t v = 0; v < s.variants.size(); ++v) {
    std::fprintf(stderr, "  %-10s OAA %.4f |", s.variants[v].c_str(), s.oaa[v]);
    for (double x : s.accuracy[v]) std::fprintf(stderr, " %.3f", x);
    std::fprintf(stderr, "\n");
  }
  if (sa.json) print_json_line(reproduce::calibrated_sweep_json(s));
  return 0;
}

int run_position_bias(const std::vector<std::string>& argv) {
  Args a("position-bias",
         "A reader's positional attention bias: the mass a filler document gets at each slot.",
         "Puts a fixed uninformative document (three, averaged) at each of the K slots of real "
         "prompts\n"
         "(qa: --input QA records; needle: generated story prompts) and records the attention "
         "attention the\n"
         "final token pays it (the mean per token, --measure), per layer (mean over heads) and "
         "over layers:\n"
         "Found in the Middle's bias curve (arXiv 2406.16008, section 2), which `ragform "
         "attention\n"
         "--calibrated --bias FILE` subtracts (eq. 4).\n"
         "--json prints {\"task\", \"k\", \"measure\", \"prompts\", \"curve\": [K values], "
         "\"layers\": [{\"layer\", \"curve\"}], ...}.");
  ReaderFlags rf(a);
  // The curve's options, declared once (pipelines/cnorm/setup.h); --sweep reads the same task,
  // items and template.
  cnorm::BiasCurveRequest req;
  OptionFlags<cnorm::BiasCurveRequest> declared(a, req);
  auto& input =
      a.opt<std::string>("--input", "FILE", "QA records (qa; needle generates its own)", "");
  auto& out = a.opt<std::string>("-o,--output", "FILE",
                                 "write the curve (JSON) to FILE (--score: the records)", "");
  auto& score = a.opt<std::string>(
      "--score", "FILE",
      "instead of measuring: FILE's records (K paragraphs each) with each paragraph's calibrated "
      "relevance (--bias) as its score, JSONL, for orders by score (tune --orders score)",
      "");
  auto& store_path = a.opt<std::string>("--store", "FILE", "SQLite run store (resumable)", "");
  auto& rank = a.opt<std::string>(
      "--rank", "FILE",
      "instead of measuring: rank the paragraphs of FILE's records (HotpotQA) by raw attention, "
      "calibrated attention (--bias) and BM25, and print recall@k (needs --store)",
      "");
  auto& sweep = a.flag("--sweep",
                       "instead of measuring: the gold-position sweep of --task's items, answered "
                       "as they are and with the documents' attention steered by their "
                       "calibrated relevance (--allocation; needs --bias, --store)");
  const reproduce::CalibratedSweepOptions sweep_defaults;  // --share, --temperature, -n
  auto& share = a.opt<double>("--share", "S",
                              "with --sweep --allocation proportional|top: the documents' share "
                              "of attention (top: the top document's)",
                              sweep_defaults.share)
                    .range(0.0, 1.0);
  auto& allocation = a.opt<std::string>(
      "--allocation", "softmax|proportional|top|gold",
      "with --sweep: softmax is the paper's (eq. 5-6): each steered row keeps its total attention "
      "on the documents and splits it as softmax(calibrated relevance / --temperature); "
      "proportional (ragform's) gives each document a part of --share proportional to its "
      "calibrated relevance, top gives the top document all of it; gold (a diagnostic) is "
      "softmax's redistribution with all of it to the gold document, the ceiling when relevance "
      "is right",
      reproduce::sweep_allocation_name(sweep_defaults.allocation));
  auto& temperature = a.opt<double>("--temperature", "T",
                                    "with --allocation softmax: the softmax's temperature (the "
                                    "paper's 5e-5, for per-token attention)",
                                    sweep_defaults.temperature)
                          .range(1e-12, 1e6);
  auto& max_tokens = a.opt<int>("-n,--max-tokens", "N", "with --sweep: maximum answer tokens",
                                sweep_defaults.max_tokens)
                         .range(1, kMaxInt);
  auto& bias = a.opt<std::string>("--bias", "FILE",
                                  "with --rank or --sweep: the curve to calibrate with", "");
  auto& json = a.flag(
      "--json", "print the curve (--rank: the recall; --sweep: the accuracies) as one JSON object");
  if (!a.parse(argv)) return 0;
  declared.apply();
  if (declared.seen("measure") && (sweep.value || !rank.value.empty() || !score.value.empty()))
    throw UsageError("--measure",
                     "goes with measuring a curve: --sweep, --rank and --score read documents as "
                     "their --bias curve was measured");
  if (declared.seen("positions") && (!rank.value.empty() || !score.value.empty()))
    throw UsageError("--positions", "goes with --sweep");
  const reproduce::SweepAllocation alloc = reproduce::parse_sweep_allocation(allocation.value);
  if (temperature.seen && alloc != reproduce::SweepAllocation::Softmax)
    throw UsageError("--temperature", "goes with --allocation softmax");
  if (share.seen &&
      (alloc == reproduce::SweepAllocation::Softmax || alloc == reproduce::SweepAllocation::Gold))
    throw UsageError("--share",
                     "goes with --allocation proportional or top (softmax and gold "
                     "keep each row's own total attention on the documents)");
  // What a mode does not read is refused, not ignored (pass 12: --score ran without a word about
  // --store, --json and --seed).
  if (!score.value.empty()) {
    if (!store_path.value.empty()) throw UsageError("--store", "does not go with --score");
    if (json.value) throw UsageError("--json", "does not go with --score (it writes JSON lines)");
    if (declared.seen("seed")) throw UsageError("--seed", "does not go with --score");
  }
  // -o is never a file this command reads, in any mode (pass 14: the measurement's -o replaced
  // the model, the records or the template after the run).
  check_not_input(out.value, "-o",
                  {{"-m", rf.model.value},
                   {"--input", input.value},
                   {"--template", req.template_path},
                   {"--store", store_path.value},
                   {"--bias", bias.value},
                   {"--score", score.value}});
  if ((!rank.value.empty() || sweep.value) && !out.value.empty())
    throw UsageError("-o", "goes with the measurement (the curve) or --score, not with " +
                               std::string(sweep.value ? "--sweep" : "--rank"));
  if (!score.value.empty())
    return score_records(rf, score.value, bias.value, size_t(req.limit), out.value);
  if (!rank.value.empty())
    return rank_recall(rf, rank.value, bias.value, size_t(req.limit), store_path.value, json.value);
  if (sweep.value) {
    if (req.task != "qa" && req.task != "needle")
      throw UsageError("--task", "expected qa or needle, got '" + req.task + "'");
    const cnorm::Task task = cnorm::parse_task(req.task);
    SweepArgs sa{task,
                 input.value,
                 req.template_path,
                 bias.value,
                 store_path.value,
                 req.positions,
                 size_t(req.limit),
                 uint64_t(req.seed),
                 share.value,
                 alloc,
                 temperature.value,
                 max_tokens.value,
                 json.value,
                 declared.seen("k") ? size_t(req.k) : 0};
    try {
      return calibrated_sweep(rf, sa);
    } catch (const OptionError& e) {
      throw declared.spell(e);
    }
  }
  if (!bias.value.empty()) throw UsageError("--bias", "goes with --rank or --sweep");
  if (allocation.seen) throw UsageError("--allocation", "goes with --sweep");
  if (temperature.seen) throw UsageError("--temperature", "goes with --sweep");

  std::vector<eval::QaRecord> records;
  if (req.task == "qa")
    records = cnorm_verbs::load_records(input.value);
  else if (!input.value.empty())
    throw UsageError("--input", "the needle task generates its items; do not give --input");
  std::vector<std::string> skipped;
  cnorm::BiasCurvePlan plan;
  try {
    plan = cnorm::bias_curve_plan(req, records, &skipped);
  } catch (const OptionError& e) {
    throw declared.spell(e);
  }
  cnorm_verbs::note_skipped(skipped, plan.options.k);
  auto reader = rf.open_native();
  cnorm::PositionBiasOptions& o = plan.options;
  for (int l = 0; l < int(reader->model().hp().n_layer); ++l) o.layers.push_back(l);
  o.origin = common::origin_for(*reader);
  o.input_sha256 = input.value.empty() ? "" : store::sha256_file(input.value);
  std::optional<Progress> progress;
  o.hooks = cli_run_hooks(&progress);
  const std::vector<cnorm::Item>& items = plan.items;

  cnorm::BiasCurve c;
  if (store_path.value.empty()) {
    c = cnorm::run_position_bias(*reader, items, o);
  } else {
    store::RunStore st(store_path.value);
    c = cnorm::run_position_bias(*reader, st, items, o);
  }
  progress.reset();
  print_curve(c);
  if (!out.value.empty()) cnorm::save_bias_curve(c, out.value);
  if (json.value) print_json_line(cnorm::bias_curve_json(c));
  return 0;
}

RAGFORM_COMMAND("position-bias", "positional attention bias curve (Found in the Middle)",
                run_position_bias, 33);

}  // namespace
}  // namespace ragform::cli

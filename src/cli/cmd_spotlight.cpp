// `ragform spotlight select|eval`: SpotlightRAG span-level evidence selection (paper sections
// 3.3-3.5) and its evaluation on HotpotQA-style data (docs/spotlight.md); `train-alpha` is in
// cmd_spotlight_train.cpp.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "base/error.h"
#include "base/progress.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/run_hooks.h"
#include "cli/shard.h"
#include "cli/spotlight_flags.h"
#include "engine/model/model.h"
#include "eval/datasets.h"
#include "eval/stats.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/spotlight/spotlight.h"
#include "reader/native_reader.h"
#include "reproduce/spotlight_prior.h"
#include "store/run_store.h"

namespace ragform::cli {

namespace {
// Recall@K needs gold sentences: an input none of whose questions has one (a file without
// HotpotQA's supporting facts, such as NQ-Open's) measured nothing, which is an error, not a
// run of 0 questions that exits 0.
void require_gold(const std::string& input, size_t questions, size_t skipped) {
  if (questions == 0 && skipped > 0)
    throw Error("spotlight eval",
                input + ": none of its " + std::to_string(skipped) +
                    " questions has gold sentences to measure recall against (HotpotQA's "
                    "supporting_facts, docs/spotlight.md): nothing was measured");
}
}  // namespace

int run_spotlight_train_alpha(const std::vector<std::string>& args);  // cmd_spotlight_train.cpp

namespace {

using namespace ragform::spotlight;
using ojson = nlohmann::ordered_json;

// "text with [[matched]] tokens" for the human report.
std::string highlight(const Document& d, const Selected& s) {
  const text::TextSpan sp = d.sentences.at(s.score.sent);
  std::vector<text::TextSpan> hs;
  for (const Match& m : s.score.matches)
    if (m.s > 0.5) hs.push_back(m.c_span);
  std::sort(hs.begin(), hs.end(), [](auto a, auto b) { return a.begin < b.begin; });
  std::string out;
  size_t cur = sp.begin;
  for (const auto& h : hs) {
    if (h.begin < cur) continue;
    out += d.text.substr(cur, h.begin - cur) + "[[" + d.text.substr(h.begin, h.size()) + "]]";
    cur = h.end;
  }
  out += d.text.substr(cur, sp.end - cur);
  size_t b = out.find_first_not_of(' ');
  return b == std::string::npos ? out : out.substr(b);
}

int run_select(const std::vector<std::string>& argv) {
  Args a(
      "spotlight select",
      "Select the top-K sentences of each question's contexts by SpotlightRAG's token-level score\n"
      "(eqs. 5-8) and annotate them with <RelX.XX> and category tokens (eqs. 9-10).");
  auto& input =
      a.opt<std::string>("--input", "FILE", "QA records (JSONL, gzip ok; any format with contexts)")
          .required();
  SpotlightEncoderFlags ef(a);
  SpotlightScoreFlags sf(a);
  PromptOptions prompt;  // --order, --no-special-tokens (select_options.h)
  OptionFlags<PromptOptions> prompt_flags(a, prompt);
  auto& emphasis = a.opt<std::string>(
      "--emphasis", "text|attention|both",
      "how the selected sentences are emphasised: <Rel> and category tokens (text), the reader's "
      "attention on them times --emphasis-factor instead (attention; --json prints the steering "
      "as \"steer\", for generate --steer/--steer-spans), or both",
      "text");
  auto& factor = a.opt<double>("--emphasis-factor", "A",
                               "with --emphasis attention or both: the attention factor", 2.0)
                     .range(0.0, 1e6);
  auto& prior = a.opt<std::string>(
      "--prior", "positional|calibrated",
      "the prior weighted by --lambda: the fixed shape over a document's sentences (positional), "
      "or each document's calibrated attention relevance under --prior-model (calibrated; needs "
      "--bias, a curve with one slot per document)",
      "positional");
  auto& prior_model = a.opt<std::string>(
      "--prior-model", "MODEL", "with --prior calibrated: the reader whose attention is read", "");
  auto& prior_ctx = a.opt<int>("--prior-ctx", "N",
                               "with --prior calibrated: the reader's context (the question's "
                               "documents in one prompt)",
                               reader::NativeOptions{}.n_ctx)
                        .range(16, kMaxInt);
  auto& bias = a.opt<std::string>("--bias", "FILE",
                                  "with --prior calibrated: the bias curve (position-bias -o)", "");
  auto& prior_alloc = a.opt<std::string>(
      "--prior-allocation", "softmax|minmax",
      "with --prior calibrated: Found in the Middle's allocation softmax(relevance / "
      "--temperature) over its largest value (softmax), or the relevance min-max normalised "
      "(minmax, ragform's earlier form)",
      "softmax");
  auto& temperature =
      a.opt<double>("--temperature", "T",
                    "with --prior-allocation softmax: the softmax's temperature (the paper's 5e-5 "
                    "for per-token attention)",
                    cnorm::kPaperTemperature)
          .range(1e-12, 1e6);
  auto& limit = a.opt<int>("--limit", "N", "stop after N questions (0 = all)", 0);
  auto& json = a.flag("--json", "one JSON object per question on stdout");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  prompt_flags.apply();
  if (prior.value != "positional" && prior.value != "calibrated")
    throw UsageError("--prior", "expected positional or calibrated, got '" + prior.value + "'");
  const bool calibrated = prior.value == "calibrated";
  if (calibrated && (bias.value.empty() || prior_model.value.empty()))
    throw UsageError("--prior", "calibrated needs --bias FILE and --prior-model MODEL");
  if (!calibrated &&
      (bias.seen || prior_model.seen || prior_ctx.seen || prior_alloc.seen || temperature.seen))
    throw UsageError(bias.seen          ? "--bias"
                     : prior_ctx.seen   ? "--prior-ctx"
                     : prior_alloc.seen ? "--prior-allocation"
                     : temperature.seen ? "--temperature"
                                        : "--prior-model",
                     "goes with --prior calibrated");
  const reproduce::PriorAllocation allocation =
      reproduce::parse_prior_allocation(prior_alloc.value);
  if (temperature.seen && allocation != reproduce::PriorAllocation::Softmax)
    throw UsageError("--temperature", "goes with --prior-allocation softmax");
  std::optional<cnorm::BiasCurve> curve;
  std::unique_ptr<reader::NativeReader> prior_reader;
  if (calibrated) {
    curve = cnorm::load_bias_curve(bias.value);
    reader::NativeOptions no;
    no.n_ctx = prior_ctx.value;
    prior_reader = std::make_unique<reader::NativeReader>(prior_model.value, no);
  }
  if (emphasis.value != "text" && emphasis.value != "attention" && emphasis.value != "both")
    throw UsageError("--emphasis",
                     "expected text, attention or both, got '" + emphasis.value + "'");
  const bool by_attention = emphasis.value != "text";
  if (factor.seen && !by_attention)
    throw UsageError("--emphasis-factor", "goes with --emphasis attention or both");
  if (by_attention && !prompt.special_tokens)
    throw UsageError("--no-special-tokens", "--emphasis attention already leaves the tokens out");
  const Shard shard = shard_f.shard();
  try {
    check_prompt_options(prompt);
  } catch (const OptionError& e) {
    throw prompt_flags.spell(e);
  }
  ScoreParams sp = sf.params();
  SelectParams sel = select_params(sf.opts, prompt);
  if (emphasis.value == "attention") sel.special_tokens = false;
  TokenEncoder& enc = ef.open();
  eval::LoadOptions lo;
  lo.limit = static_cast<size_t>(std::max(0, limit.value));
  size_t words = 0, oov = 0;
  eval::for_each_qa_record(input.value, lo, [&](eval::QaRecord& r, const eval::JsonRow&) {
    if (!shard.keeps(r.id)) return;
    if (r.ctxs.empty())
      throw Error("spotlight", input.value + ":" + std::to_string(r.source_line) + ": record '" +
                                   r.id + "' has no contexts");
    std::vector<Document> docs = documents_of(r);
    if (calibrated)
      sp.document_prior = reproduce::calibrated_document_prior(
          *prior_reader, int(prior_reader->model().hp().n_layer), *curve, r.question, docs,
          allocation, temperature.value);
    ScoredQuestion sq = score_question(enc, r.question, docs, sp);
    words += sq.words;
    oov += sq.oov;
    Selection s = select_and_annotate(r.question, docs, sq, sel);
    if (json.value) {
      SelectionJsonOptions layout;
      layout.round9 = true;
      ojson j = selection_json(r.id, s, layout);
      const reader::SteeringParams st = emphasis_steering(s, by_attention ? factor.value : 1.0);
      if (calibrated) j["prior"] = sp.document_prior;
      if (st.active())
        j["steer"] = {{"rule", st.describe().substr(0, st.describe().find('|'))},
                      {"spans", emphasis_spans_text(s)}};
      print_json_line(j);
    } else {
      std::printf("== %s: %s\n", r.id.c_str(), r.question.c_str());
      for (const Selected& x : s.selected)
        std::printf("%s <%s> [%s #%d] %s\n", x.prefix.c_str(), x.category.c_str(), x.title.c_str(),
                    x.score.sent, highlight(docs[x.score.doc], x).c_str());
    }
  });
  std::fprintf(stderr, "spotlight: %s; OOV words %zu of %zu (%.1f%%)\n", enc.describe().c_str(),
               oov, words, words ? 100.0 * double(oov) / double(words) : 0.0);
  ef.report_encoder_cost();
  return 0;
}

// The answers of one variant of a `spotlight generate` run: EM, F1 and substring match with
// their bootstrap 95% intervals, the prompt tokens and the generation time, on stderr (and
// stdout with --json).
void report_stored_answers(const std::string& variant, const VariantAnswers& v,
                           const reader::Reader& generator, int64_t run, bool json) {
  if (v.em.empty()) return;
  const eval::BootstrapCI em = eval::bootstrap_mean_ci(v.em, 0.95, 2000, 7),
                          f1 = eval::bootstrap_mean_ci(v.f1, 0.95, 2000, 7),
                          sub = eval::bootstrap_mean_ci(v.substring, 0.95, 2000, 7);
  const double n = double(v.em.size());
  std::fprintf(stderr,
               "end-to-end %-20s EM %.4f [%.4f, %.4f]  F1 %.4f [%.4f, %.4f]  substring %.4f  "
               "n=%zu  prompt tokens %lld (%.0f per answer)  generation %.1f s\n",
               variant.c_str(), em.mean, em.lo, em.hi, f1.mean, f1.lo, f1.hi, sub.mean, v.em.size(),
               static_cast<long long>(v.prompt_tokens), double(v.prompt_tokens) / n,
               v.generate_ms / 1000.0);
  if (json)
    print_json_line(ojson{{"kind", "answer"},
                          {"variant", variant},
                          {"em", f9(em.mean)},
                          {"em_ci95", {f9(em.lo), f9(em.hi)}},
                          {"f1", f9(f1.mean)},
                          {"f1_ci95", {f9(f1.lo), f9(f1.hi)}},
                          {"substring", f9(sub.mean)},
                          {"substring_ci95", {f9(sub.lo), f9(sub.hi)}},
                          {"questions", v.em.size()},
                          {"prompt_tokens", v.prompt_tokens},
                          {"generate_seconds", f9(v.generate_ms / 1000.0)},
                          {"reader", generator.describe()},
                          {"run", run}});
}

// `spotlight eval --store`: the pipeline's runner (spotlight/run.h) writes the rows; the summary
// printed is the run's mean recall per method over every stored question (resumed ones too).
// With a generator (--generate), run_generate then answers every stored selection with and
// without its special tokens (one row per question and variant, in the same store) and the
// run's EM/F1 per variant is printed.
void eval_into_store(const std::string& path, const std::vector<eval::QaRecord>& recs,
                     TokenEncoder& enc, const SpotlightEncoderFlags& ef, const ScoreParams& params,
                     int K, uint64_t seed, const std::string& input, bool json,
                     reader::Reader* generator, int max_tokens) {
  store::RunStore st(path);
  std::optional<Progress> progress;
  RunOptions o;
  o.K = K;
  o.recall_ks = {K};
  o.params = params;
  o.seed = seed;
  o.input_path = input;
  o.vectors_path = ef.encoder.value == "static" ? ef.vectors.value : "";
  o.origin.tool_version = common::tool_version();
  o.hooks = cli_run_hooks(&progress);
  const RunSummary sum = run_eval(enc, st, recs, o);
  require_gold(input, sum.questions, sum.skipped);
  std::fprintf(stderr,
               "spotlight eval: run %lld in %s: %zu questions (%zu without resolvable gold "
               "skipped), %zu rows written, %zu reused\n",
               static_cast<long long>(sum.run), path.c_str(), sum.questions, sum.skipped,
               sum.written, sum.reused);
  for (const auto& [key, mean] : sum.mean_recall) {
    const std::string method = key.substr(0, key.find('@'));
    // The same bootstrap as the run without --store (report_row), over the stored questions.
    const std::vector<double>& v = sum.recalls.at(key);
    const eval::BootstrapCI ci = eval::bootstrap_mean_ci(v, 0.95, 2000, 7);
    std::fprintf(stderr, "%-10s recall%s = %.4f  [%.4f, %.4f]  n=%zu\n", method.c_str(),
                 key.substr(key.find('@')).c_str(), mean, ci.lo, ci.hi, v.size());
    if (json)
      print_json_line(ojson{{"kind", "recall"},
                            {"method", method},
                            {"K", K},
                            {"recall", f9(mean)},
                            {"ci95", {f9(ci.lo), f9(ci.hi)}},
                            {"questions", v.size()},
                            {"run", sum.run}});
  }
  if (!generator) return;
  spotlight::GenerateOptions g;
  g.spotlight_run = sum.run;
  g.max_tokens = max_tokens;
  g.without_tokens = true;
  g.origin = common::origin_for(*generator);
  g.hooks = o.hooks;
  const GenerateSummary gs = run_generate(*generator, st, recs, g);
  std::fprintf(stderr, "spotlight generate: run %lld in %s (%s)\n", static_cast<long long>(gs.run),
               path.c_str(), generator->describe().c_str());
  for (const char* v : {kWithTokens, kWithoutTokens})
    if (auto it = gs.variants.find(v); it != gs.variants.end())
      report_stored_answers(v, it->second, *generator, gs.run, json);
}

// A row's mean recall with its bootstrap 95% interval, on stderr (and stdout with --json).
void report_row(const RecallRow& row, bool json) {
  if (row.recalls.empty()) return;
  eval::BootstrapCI ci = eval::bootstrap_mean_ci(row.recalls, 0.95, 2000, 7);
  if (json)
    print_json_line(ojson{{"kind", "recall"},
                          {"group", row.group},
                          {"method", row.method},
                          {"K", row.K},
                          {"recall", f9(ci.mean)},
                          {"ci95", {f9(ci.lo), f9(ci.hi)}},
                          {"questions", row.recalls.size()}});
  std::fprintf(stderr, "%-13s %-26s recall@%d = %.4f  [%.4f, %.4f]  n=%zu\n", row.group.c_str(),
               row.method.c_str(), row.K, ci.mean, ci.lo, ci.hi, row.recalls.size());
}

// A learned alpha is measured on questions it was not fitted to: the questions whose key its
// file's training object lists (alpha.h alpha_question_key) are left out with a note naming how
// many, as tune drops held-out records that are also dev records (issue 40, third pass: eval on
// the training file reported the training recall as the evaluation, without a word).
void drop_training_questions(const ScoreParams& p, std::vector<eval::QaRecord>& recs) {
  if (p.alpha != Alpha::Learned || !p.learned) return;
  const std::vector<std::string> keys = alpha_training_keys(p.learned->training);
  if (keys.empty()) return;
  const size_t before = recs.size();
  std::erase_if(recs, [&](const eval::QaRecord& r) {
    return std::binary_search(keys.begin(), keys.end(), alpha_question_key(r.question));
  });
  const size_t dropped = before - recs.size();
  if (dropped == 0) return;
  const std::string file = p.learned->source.empty() ? "the alpha file" : p.learned->source;
  if (recs.empty())
    throw UsageError("spotlight eval", "every one of the " + std::to_string(before) +
                                           " questions is in the training set of " + file +
                                           ": measure a learned alpha on other questions");
  std::fprintf(stderr,
               "spotlight eval: note: %zu of %zu questions are in the training set of %s and are "
               "left out (a learned alpha is measured on questions it was not fitted to)\n",
               dropped, before, file.c_str());
}

// The recall rows: the main comparison at K, the ablations and sweeps, then the context lengths.
void report_recalls(const SweepSummary& t, const SweepOptions& so, bool json) {
  for (const RecallRow& kr : t.krows)
    if (kr.K == so.K) report_row({"main", kr.method, kr.K, kr.recalls}, json);
  for (size_t i = 1; i < t.rows.size(); ++i) report_row(t.rows[i], json);
  if (so.sweeps)
    for (const RecallRow& kr : t.krows)
      if (kr.K != so.K) report_row(kr, json);
  for (size_t i = 0; i < t.distractors.size(); ++i) {
    double n = double(t.crows[2 * i].recalls.size());
    double words_mean = n > 0 ? t.ctx_words[i] / n : 0.0;
    std::fprintf(stderr, "context gold+%d distractors: %.0f words per question on average\n",
                 t.distractors[i], words_mean);
    if (json)
      print_json_line(ojson{{"kind", "context"},
                            {"distractors", t.distractors[i]},
                            {"words", f9(words_mean)},
                            {"questions", t.crows[2 * i].recalls.size()}});
    report_row(t.crows[2 * i], json);
    report_row(t.crows[2 * i + 1], json);
  }
}

// Figure 1(a): where gold sentences sit in their paragraphs, against all sentences.
void report_positions(const PositionalAnalysis& pa, bool json) {
  auto lift = pa.lift();
  const char* bins[5] = {"0-20%", "20-40%", "40-60%", "60-80%", "80-100%"};
  for (int b = 0; b < 5; ++b) {
    std::fprintf(stderr, "position %-8s gold %5.0f  all %5.0f  lift %.3f\n", bins[b], pa.gold[b],
                 pa.all[b], lift[b]);
    if (json)
      print_json_line(ojson{{"kind", "position"},
                            {"bin", bins[b]},
                            {"gold", pa.gold[b]},
                            {"sentences", pa.all[b]},
                            {"lift", f9(lift[b])}});
  }
}

// --generate without --store: end-to-end EM, F1 and substring accuracy with their bootstrap
// 95% intervals, with and without the special tokens.
void report_answers(const SweepSummary& t, reader::Reader& generator, bool json) {
  for (bool special : {true, false}) {
    const std::vector<double>&em = special ? t.em_full : t.em_plain,
          &f1 = special ? t.f1_full : t.f1_plain, &sub = special ? t.sub_full : t.sub_plain;
    const eval::BootstrapCI e = eval::bootstrap_mean_ci(em, 0.95, 2000, 7),
                            f = eval::bootstrap_mean_ci(f1, 0.95, 2000, 7),
                            s = eval::bootstrap_mean_ci(sub, 0.95, 2000, 7);
    const char* name = special ? "spotlight" : "w/o special tokens";
    std::fprintf(stderr,
                 "end-to-end %-20s EM %.4f [%.4f, %.4f]  F1 %.4f [%.4f, %.4f]  substring %.4f  "
                 "n=%zu\n",
                 name, e.mean, e.lo, e.hi, f.mean, f.lo, f.hi, s.mean, em.size());
    if (json)
      print_json_line(ojson{{"kind", "answer"},
                            {"variant", name},
                            {"em", f9(e.mean)},
                            {"em_ci95", {f9(e.lo), f9(e.hi)}},
                            {"f1", f9(f.mean)},
                            {"f1_ci95", {f9(f.lo), f9(f.hi)}},
                            {"substring", f9(s.mean)},
                            {"questions", em.size()},
                            {"reader", generator.describe()}});
  }
}

int run_eval(const std::vector<std::string>& argv) {
  Args a(
      "spotlight eval",
      "Evidence recall@K of gold sentences (HotpotQA supporting_facts) for Spotlight against "
      "lead-K,\n"
      "random-K and BM25; Table 3 ablations and Table 4 sweeps (--sweeps); Figure 1(a) positions;\n"
      "end-to-end EM / substring accuracy with a reader (--generate, needs -m).");
  auto& input =
      a.opt<std::string>("--input", "FILE", "HotpotQA distractor records (JSONL)").required();
  SpotlightEncoderFlags ef(a);
  SpotlightScoreFlags sf(a);
  auto& seed = a.opt<int>("--seed", "S", "seed of the random-K baseline", 1);
  auto& sweeps = a.flag(
      "--sweeps",
      "also run the Table 3 ablations and Table 4 sweeps (K, k, lambda, alpha, context length)");
  auto& generate = a.flag("--generate", "end-to-end EM/substring accuracy with the reader (-m)");
  auto& n_predict = a.opt<int>("-n,--n-predict", "N", "max tokens per answer with --generate", 16)
                        .range(1, kMaxInt);
  auto& limit = a.opt<int>("--limit", "N", "use the first N questions (0 = all)", 0);
  auto& json = a.flag("--json", "one JSON object per result line on stdout");
  auto& store_path = a.opt<std::string>(
      "--store", "FILE",
      "keep every question's rankings and recall@K in this run store, and with --generate every "
      "answer with and without the special tokens (resumable: rows already stored are not "
      "recomputed); prints the run's mean recall per method and EM/F1 per variant",
      "");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  if (store_path.seen && sweeps.value)
    throw UsageError("--store", "stores the main comparison and its answers: leave out --sweeps");
  const Shard shard = shard_f.shard();
  SweepOptions so;
  so.base = sf.params();
  so.K = sf.K.value;
  so.seed = static_cast<uint64_t>(seed.value);
  so.sweeps = sweeps.value;
  so.max_tokens = n_predict.value;
  TokenEncoder& enc = ef.open();
  eval::LoadOptions lo;
  lo.limit = static_cast<size_t>(std::max(0, limit.value));
  std::vector<eval::QaRecord> recs = eval::load_qa_file(input.value, lo).records;
  std::erase_if(recs, [&](const eval::QaRecord& r) { return !shard.keeps(r.id); });
  drop_training_questions(so.base, recs);
  if (generate.value) so.generator = &ef.open_reader();
  if (store_path.seen) {
    eval_into_store(store_path.value, recs, enc, ef, so.base, so.K, so.seed, input.value,
                    json.value, so.generator, so.max_tokens);
    if (so.generator) note_prefill(*so.generator);
    ef.report_encoder_cost();
    return 0;
  }
  std::optional<Progress> progress;
  so.hooks = cli_run_hooks(&progress);
  const SweepSummary t = run_sweeps(enc, recs, so);  // its progress line ends before the report
  require_gold(input.value, recs.size() - t.skipped, t.skipped);

  std::fprintf(stderr,
               "encoder %s; %zu questions (%zu without resolvable gold skipped); OOV %zu of %zu "
               "words (%.1f%%)\n",
               enc.describe().c_str(), recs.size() - t.skipped, t.skipped, t.oov, t.words,
               t.words ? 100.0 * double(t.oov) / double(t.words) : 0.0);
  report_recalls(t, so, json.value);
  if (json.value)
    print_json_line(
        ojson{{"kind", "oov"}, {"words", t.words}, {"oov", t.oov}, {"encoder", enc.describe()}});
  report_positions(t.pa, json.value);
  if (so.generator && !t.em_full.empty()) report_answers(t, *so.generator, json.value);
  if (so.generator) note_prefill(*so.generator);
  ef.report_encoder_cost();
  return 0;
}

int run_spotlight(const std::vector<std::string>& args) {
  return run_verbs(
      "spotlight", "SpotlightRAG: span-level evidence selection with relevance prefix tokens.",
      {{"select", "top-K sentences annotated with <RelX.XX> and category tokens", run_select},
       {"eval", "recall@K vs lead/random/BM25, ablations, sweeps, positions, EM", run_eval},
       {"train-alpha", "fit the query-token weights alpha (eq. 8) on supporting-fact labels",
        run_spotlight_train_alpha}},
      args);
}

RAGFORM_COMMAND("spotlight", "SpotlightRAG: select|eval|train-alpha span-level evidence selection",
                run_spotlight, 70);

}  // namespace
}  // namespace ragform::cli

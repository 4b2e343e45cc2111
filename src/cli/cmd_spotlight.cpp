// `ragform spotlight select|eval`: SpotlightRAG span-level evidence selection (paper sections
// 3.3-3.5) and its evaluation on HotpotQA-style data (docs/spotlight.md); `train-alpha` is in
// cmd_spotlight_train.cpp.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>

#include "base/error.h"
#include "base/progress.h"
#include "base/stable_hash.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/shard.h"
#include "cli/spotlight_flags.h"
#include "eval/datasets.h"
#include "eval/stats.h"
#include "pipelines/spotlight/spotlight.h"
#include "ragform_version.h"
#include "store/run_store.h"
#include "text/sentences.h"

namespace ragform::cli {

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

ojson selection_json(const eval::QaRecord& r, const Selection& sel) {
  ojson sj = ojson::array();
  for (const Selected& s : sel.selected) {
    ojson m = ojson::array();
    for (const Match& x : s.score.matches) m.push_back({{"q", x.q}, {"c", x.c}, {"s", f9(x.s)}});
    sj.push_back({{"title", s.title},
                  {"doc_id", s.doc_id},
                  {"sent_id", s.score.sent},
                  {"text", s.text},
                  {"R", f9(s.score.R_norm)},
                  {"R_raw", f9(s.score.R)},
                  {"prefix", s.prefix},
                  {"category", s.category},
                  {"matches", m}});
  }
  return ojson{{"id", r.id}, {"selected", sj}, {"prompt", sel.prompt}};
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
  auto& order =
      a.opt<std::string>("--order", "O", "sentence order in the prompt: doc or score", "doc");
  auto& no_special = a.flag("--no-special-tokens", "leave out the <Rel> and category tokens");
  auto& limit = a.opt<int>("--limit", "N", "stop after N questions (0 = all)", 0);
  auto& json = a.flag("--json", "one JSON object per question on stdout");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  const Shard shard = shard_f.shard();
  if (order.value != "doc" && order.value != "score")
    throw UsageError("spotlight", "--order must be doc or score, got '" + order.value + "'");
  ScoreParams sp = sf.params();
  SelectParams sel{sf.K.value, order.value == "doc" ? Order::Document : Order::Score,
                   !no_special.value};
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
    ScoredQuestion sq = score_question(enc, r.question, docs, sp);
    words += sq.words;
    oov += sq.oov;
    Selection s = select_and_annotate(r.question, docs, sq, sel);
    if (json.value) {
      print_json_line(selection_json(r, s));
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

struct Row {
  std::string group, method;
  int K = 0;
  std::vector<double> recalls;
};

// `spotlight eval --store`: the pipeline's runner (spotlight/run.h) writes the rows; the summary
// printed is the run's mean recall per method over every stored question (resumed ones too).
int eval_into_store(const std::string& path, const std::vector<eval::QaRecord>& recs,
                    TokenEncoder& enc, const SpotlightEncoderFlags& ef, const ScoreParams& params,
                    int K, uint64_t seed, const std::string& input, bool json) {
  store::RunStore st(path);
  RunOptions o;
  o.K = K;
  o.recall_ks = {K};
  o.params = params;
  o.seed = seed;
  o.input_path = input;
  o.vectors_path = ef.encoder.value == "static" ? ef.vectors.value : "";
  o.tool_version = std::string(RAGFORM_VERSION) + " (git " + RAGFORM_GIT + ")";
  const RunSummary sum = run_eval(st, recs, enc, o);
  std::fprintf(stderr,
               "spotlight eval: run %lld in %s: %zu questions (%zu without resolvable gold "
               "skipped), %zu rows written, %zu reused\n",
               static_cast<long long>(sum.run), path.c_str(), sum.questions, sum.skipped,
               sum.written, sum.reused);
  for (const auto& [key, mean] : sum.mean_recall) {
    const std::string method = key.substr(0, key.find('@'));
    std::fprintf(stderr, "%-10s recall%s = %.4f\n", method.c_str(),
                 key.substr(key.find('@')).c_str(), mean);
    if (json)
      print_json_line(ojson{{"kind", "recall"},
                            {"method", method},
                            {"K", K},
                            {"recall", f9(mean)},
                            {"run", sum.run}});
  }
  return 0;
}

// One configuration of the scorer evaluated on every question: a row group, its name, the
// parameters and the K of its recall.
struct Config {
  std::string group, name;
  ScoreParams p;
  int K;
};

// The main configuration first (rows[0] feeds the baselines' comparison and --generate), then
// with --sweeps Table 3's ablations and Table 4's k and lambda sweeps.
std::vector<Config> eval_configs(const ScoreParams& base, int K, bool sweeps) {
  std::vector<Config> cfgs{{"main", "spotlight", base, K}};
  if (!sweeps) return cfgs;
  auto with = [&](auto f) {
    ScoreParams p = base;
    f(p);
    return p;
  };
  cfgs.push_back({"ablation", "w/o fine-grained scorer",
                  with([](ScoreParams& p) { p.scorer = Scorer::MeanVector; }), K});
  // Table 3's "w/o importance weighting", both readings (scoring.h).
  cfgs.push_back({"ablation", "w/o query importance alpha (eq. 8)",
                  with([](ScoreParams& p) { p.alpha = Alpha::Uniform; }), K});
  cfgs.push_back({"ablation", "w/o context weights w (eq. 6)",
                  with([](ScoreParams& p) { p.weighting = Weighting::Uniform; }), K});
  for (int k : {1, 3, 5, 7})
    cfgs.push_back(
        {"sweep-k", "k=" + std::to_string(k), with([&](ScoreParams& p) { p.top_k = k; }), K});
  for (double l : {0.0, 0.5, 1.0})
    cfgs.push_back({"sweep-lambda", "lambda=" + std::to_string(l).substr(0, 3),
                    with([&](ScoreParams& p) { p.lambda = l; }), K});
  return cfgs;
}

// What `spotlight eval` measures on each question, as given on its command line.
struct EvalSettings {
  ScoreParams base;
  int K = 0;
  uint64_t seed = 0;
  bool sweeps = false;
  bool generate = false;
  int n_predict = 0;
  bool json = false;
};

// Everything accumulated over the questions, printed at the end.
struct EvalTally {
  std::vector<Row> rows;   // one per configuration (eval_configs)
  std::vector<Row> krows;  // K sweep of the main configuration and the baselines
  // Table 4's context length: the gold paragraphs plus the first d distractors (d = 8: all of a
  // HotpotQA distractor record), Spotlight and BM25 at K; crows[2i] spotlight, [2i+1] bm25.
  std::vector<int> distractors;
  std::vector<Row> crows;
  std::vector<double> ctx_words;  // words of the contexts per distractor count, summed
  PositionalAnalysis pa;
  size_t skipped = 0, words = 0, oov = 0;
  std::vector<double> em_full, sub_full, em_plain, sub_plain;  // --generate, per question
};

EvalTally make_tally(const std::vector<Config>& cfgs, const EvalSettings& es) {
  EvalTally t;
  for (const auto& c : cfgs) t.rows.push_back({c.group, c.name, c.K, {}});
  const std::vector<int> Ks = es.sweeps ? std::vector<int>{2, 4, 6, 8} : std::vector<int>{es.K};
  for (const char* m : {"spotlight", "lead", "lead-doc", "random", "bm25"})
    for (int k : Ks) t.krows.push_back({"sweep-K", m, k, {}});
  if (es.sweeps) t.distractors = {0, 2, 4, 8};
  t.ctx_words.assign(t.distractors.size(), 0.0);
  for (int d : t.distractors)
    for (const char* m : {"spotlight", "bm25"})
      t.crows.push_back({"sweep-context", std::string(m) + " gold+" + std::to_string(d), es.K, {}});
  return t;
}

// --generate: the reader's answer to the main configuration's selection, with and without the
// special tokens (the paper's end-to-end comparison), graded by the pipeline's answer step
// (answer.h), the same one `reproduce spotlight` uses.
void answer_question(reader::Reader& rd, const eval::QaRecord& r, const std::vector<Document>& docs,
                     const ScoredQuestion& sq, const EvalSettings& es, EvalTally& t) {
  for (bool special : {true, false}) {
    Selection s = select_and_annotate(r.question, docs, sq, {es.K, Order::Document, special});
    const GradedAnswer g = answer_and_grade(rd, s.prompt, r.answers, es.n_predict);
    (special ? t.em_full : t.em_plain).push_back(g.em);
    (special ? t.sub_full : t.sub_plain).push_back(g.substring);
  }
}

// One question: every configuration's recall, the baselines' K sweep and the context-length
// sweep. Questions without resolvable gold sentences are counted and skipped.
void eval_question(const eval::QaRecord& r, TokenEncoder& enc, SpotlightEncoderFlags& ef,
                   const std::vector<Config>& cfgs, const EvalSettings& es, EvalTally& t) {
  auto gold = gold_sentences(r);
  if (gold.empty()) {
    ++t.skipped;
    return;
  }
  add_positions(r, t.pa);
  std::vector<Document> docs = documents_of(r);
  Ranking spot;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    ScoredQuestion sq = score_question(enc, r.question, docs, cfgs[i].p);
    Ranking rk = rank_scored(sq);
    t.rows[i].recalls.push_back(recall_at(rk, gold, cfgs[i].K));
    if (i == 0) {
      spot = rk;
      t.words += sq.words;
      t.oov += sq.oov;
      if (es.generate) answer_question(ef.open_reader(), r, docs, sq, es, t);
    }
  }
  uint64_t qseed = derive_seed(es.seed, r.id);
  std::map<std::string, Ranking> base_rk{{"spotlight", spot},
                                         {"lead", rank_lead(docs)},
                                         {"lead-doc", rank_lead_per_doc(docs)},
                                         {"random", rank_random(docs, qseed)},
                                         {"bm25", rank_bm25(r.question, docs)}};
  for (Row& kr : t.krows) kr.recalls.push_back(recall_at(base_rk[kr.method], gold, kr.K));
  for (size_t i = 0; i < t.distractors.size(); ++i) {
    ContextSubset cs = with_distractors(docs, gold, t.distractors[i]);
    for (const Document& d : cs.docs) t.ctx_words[i] += double(text::words(d.text).size());
    ScoredQuestion sq = score_question(enc, r.question, cs.docs, es.base);
    t.crows[2 * i].recalls.push_back(recall_at(rank_scored(sq), cs.gold, es.K));
    t.crows[2 * i + 1].recalls.push_back(recall_at(rank_bm25(r.question, cs.docs), cs.gold, es.K));
  }
}

// A row's mean recall with its bootstrap 95% interval, on stderr (and stdout with --json).
void report_row(const Row& row, bool json) {
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

// The recall rows: the main comparison at K, the ablations and sweeps, then the context lengths.
void report_recalls(const EvalTally& t, const EvalSettings& es) {
  for (const Row& kr : t.krows)
    if (kr.K == es.K) report_row({"main", kr.method, kr.K, kr.recalls}, es.json);
  for (size_t i = 1; i < t.rows.size(); ++i) report_row(t.rows[i], es.json);
  if (es.sweeps)
    for (const Row& kr : t.krows)
      if (kr.K != es.K) report_row(kr, es.json);
  for (size_t i = 0; i < t.distractors.size(); ++i) {
    double n = double(t.crows[2 * i].recalls.size());
    double words_mean = n > 0 ? t.ctx_words[i] / n : 0.0;
    std::fprintf(stderr, "context gold+%d distractors: %.0f words per question on average\n",
                 t.distractors[i], words_mean);
    if (es.json)
      print_json_line(ojson{{"kind", "context"},
                            {"distractors", t.distractors[i]},
                            {"words", f9(words_mean)},
                            {"questions", t.crows[2 * i].recalls.size()}});
    report_row(t.crows[2 * i], es.json);
    report_row(t.crows[2 * i + 1], es.json);
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

// --generate: end-to-end EM and substring accuracy, with and without the special tokens.
void report_answers(const EvalTally& t, SpotlightEncoderFlags& ef, bool json) {
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  };
  for (bool special : {true, false}) {
    double em = mean(special ? t.em_full : t.em_plain),
           sub = mean(special ? t.sub_full : t.sub_plain);
    const char* name = special ? "spotlight" : "w/o special tokens";
    std::fprintf(stderr, "end-to-end %-20s EM %.4f  substring %.4f  n=%zu\n", name, em, sub,
                 t.em_full.size());
    if (json)
      print_json_line(ojson{{"kind", "answer"},
                            {"variant", name},
                            {"em", f9(em)},
                            {"substring", f9(sub)},
                            {"questions", t.em_full.size()},
                            {"reader", ef.open_reader().describe()}});
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
      "keep every question's rankings and recall@K in this run store (resumable: questions "
      "already stored are not recomputed); prints the run's mean recall per method",
      "");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  if (store_path.seen && (sweeps.value || generate.value))
    throw UsageError("--store",
                     "stores the main comparison only: leave out --sweeps and --generate");
  const Shard shard = shard_f.shard();
  EvalSettings es;
  es.base = sf.params();
  es.K = sf.K.value;
  es.seed = static_cast<uint64_t>(seed.value);
  es.sweeps = sweeps.value;
  es.generate = generate.value;
  es.n_predict = n_predict.value;
  es.json = json.value;
  TokenEncoder& enc = ef.open();
  eval::LoadOptions lo;
  lo.limit = static_cast<size_t>(std::max(0, limit.value));
  std::vector<eval::QaRecord> recs = eval::load_qa_file(input.value, lo).records;
  std::erase_if(recs, [&](const eval::QaRecord& r) { return !shard.keeps(r.id); });
  if (store_path.seen)
    return eval_into_store(store_path.value, recs, enc, ef, es.base, es.K, es.seed, input.value,
                           es.json);

  const std::vector<Config> cfgs = eval_configs(es.base, es.K, es.sweeps);
  EvalTally t = make_tally(cfgs, es);
  {
    Progress prog("spotlight eval", recs.size());
    for (const eval::QaRecord& r : recs) {
      prog.add();
      eval_question(r, enc, ef, cfgs, es, t);
    }
  }  // the progress line ends before the report

  std::fprintf(stderr,
               "encoder %s; %zu questions (%zu without resolvable gold skipped); OOV %zu of %zu "
               "words (%.1f%%)\n",
               enc.describe().c_str(), recs.size() - t.skipped, t.skipped, t.oov, t.words,
               t.words ? 100.0 * double(t.oov) / double(t.words) : 0.0);
  report_recalls(t, es);
  if (es.json)
    print_json_line(
        ojson{{"kind", "oov"}, {"words", t.words}, {"oov", t.oov}, {"encoder", enc.describe()}});
  report_positions(t.pa, es.json);
  if (es.generate && !t.em_full.empty()) report_answers(t, ef, es.json);
  if (es.generate) note_prefill(ef.open_reader());
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

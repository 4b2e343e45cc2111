#include "pipelines/spotlight/run.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "base/error.h"
#include "base/stable_hash.h"
#include "pipelines/spotlight/answer.h"
#include "pipelines/spotlight/evaluate.h"
#include "pipelines/spotlight/select.h"
#include "pipelines/spotlight/selection_json.h"
#include "reader/measured.h"
#include "store/sha256.h"

namespace ragform::spotlight {

namespace {

// The identity of a spotlight eval run: every setting that changes a row, the encoder and the
// hashes of the input, word-vector and (learned) alpha files.
store::RunConfig eval_run_config(const std::vector<eval::QaRecord>& records,
                                 const TokenEncoder& enc, const RunOptions& opt) {
  store::RunConfig rc;
  rc.pipeline = "spotlight eval";
  nlohmann::json ks = opt.recall_ks;
  rc.config = {
      {"K", opt.K},
      {"recall_ks", ks},
      {"top_k", opt.params.top_k},
      {"lambda", opt.params.lambda},
      {"alpha", opt.params.alpha == Alpha::Idf       ? "idf"
                : opt.params.alpha == Alpha::Uniform ? "uniform"
                                                     : "learned"},
      {"max_context_tokens", opt.params.max_context_tokens},
      {"title_context", opt.params.title_context},
      {"lexical_weight", opt.params.lexical_weight},
      {"paragraph_weight", opt.params.paragraph_weight},
      {"encoder", enc.describe()},
      {"questions", records.size()},
      {"input_sha256", opt.input_path.empty() ? "" : store::sha256_file(opt.input_path)},
      {"vectors_sha256", opt.vectors_path.empty() ? "" : store::sha256_file(opt.vectors_path)}};
  // A learned alpha is its file's bytes: runs with different alpha files never merge (idf and
  // uniform runs keep the identity they had before learned alphas existed).
  if (opt.params.alpha == Alpha::Learned)
    rc.config["alpha_sha256"] = opt.params.learned ? opt.params.learned->sha256 : "";
  rc.seed = int64_t(opt.seed);
  return rc;
}

const char* const kMethods[] = {"spotlight", "lead", "lead-doc", "random", "bm25"};

// One question's rows, one per ranking method not yet stored (the spotlight row with its
// selection), counted as written or reused.
void store_question(TokenEncoder& enc, store::RunStore& st, const eval::QaRecord& r,
                    const std::vector<std::pair<int, int>>& gold, const std::set<store::Key>& done,
                    const RunOptions& opt, RunSummary& stats) {
  std::vector<Document> docs = documents_of(r);
  ScoredQuestion sq = score_question(enc, r.question, docs, opt.params);
  uint64_t qseed = derive_seed(opt.seed, r.id);
  std::vector<std::pair<std::string, Ranking>> ranks = {{"spotlight", rank_scored(sq)},
                                                        {"lead", rank_lead(docs)},
                                                        {"lead-doc", rank_lead_per_doc(docs)},
                                                        {"random", rank_random(docs, qseed)},
                                                        {"bm25", rank_bm25(r.question, docs)}};
  std::set<std::pair<int, int>> gold_set(gold.begin(), gold.end());
  for (const auto& [m, rk] : ranks) {
    if (done.count({r.id, m})) {
      ++stats.reused;
      continue;
    }
    store::Result row;
    row.run = stats.run;
    row.instance = r.id;
    row.variant = m;
    for (int k : opt.recall_ks) row.scores["recall@" + std::to_string(k)] = recall_at(rk, gold, k);
    row.extra = {{"question", r.question}, {"gold_sentences", gold.size()}};
    if (m == "spotlight") {
      Selection sel = select_and_annotate(r.question, docs, sq, {opt.K, Order::Document, true});
      row.prompt = sel.prompt;
      SelectionJsonOptions layout;
      layout.docs = &docs;
      layout.gold = &gold_set;
      row.extra["selected"] = nlohmann::json(selection_json(r.id, sel, layout).at("selected"));
      // The sentences' bytes in the prompt, for run_generate's attention emphasis.
      nlohmann::json spans = nlohmann::json::array();
      for (const Selected& x : sel.selected) spans.push_back({x.begin, x.end});
      row.extra["spans"] = spans;
    }
    st.put(row);
    ++stats.written;
  }
}

// "<method>@<K>" -> every question's recall in the run's stored rows, so that a resumed run
// counts every question.
std::map<std::string, std::vector<double>> stored_recalls(const store::RunStore& st, int64_t run) {
  std::map<std::string, std::vector<double>> out;
  st.for_each_result(run, [&](const store::Result& row) {
    for (const auto& [name, v] : row.scores)
      out[row.variant + name.substr(name.find('@'))].push_back(v);
  });
  return out;
}

}  // namespace

RunSummary run_eval(TokenEncoder& enc, store::RunStore& st,
                    const std::vector<eval::QaRecord>& records, const RunOptions& opt) {
  if (opt.K < 1) throw Error("spotlight eval", "K must be >= 1");
  if (opt.recall_ks.empty()) throw Error("spotlight eval", "no recall@K given");
  const uint64_t rows = records.size() * std::size(kMethods);
  const common::Resumed res =
      common::begin_or_resume(st, eval_run_config(records, enc, opt), opt.origin, opt.hooks,
                              "spotlight eval", rows, "rows");
  RunSummary stats;
  stats.run = res.run;
  {
    common::Stage prog(opt.hooks, "spotlight eval", records.size());
    for (const eval::QaRecord& r : records) {
      prog.add();
      auto gold = gold_sentences(r);
      if (gold.empty()) {
        ++stats.skipped;
        continue;
      }
      ++stats.questions;
      bool all_done = true;
      for (const char* m : kMethods) all_done = all_done && res.done.count({r.id, m});
      if (all_done)
        stats.reused += std::size(kMethods);
      else
        store_question(enc, st, r, gold, res.done, opt, stats);
    }
  }
  stats.recalls = stored_recalls(st, stats.run);
  for (const auto& [k, v] : stats.recalls) {
    double sum = 0;
    for (double x : v) sum += x;
    stats.mean_recall[k] = v.empty() ? 0.0 : sum / double(v.size());
  }
  return stats;
}

namespace {

// One question's answer row: generated and graded (answer.h), or unmeasured when the reader
// failed.
// Attention emphasis of a stored prompt's sentences (extra "spans"): rescale:factor on them.
reader::SteeringParams row_emphasis(const store::Result& row, double factor) {
  reader::SteeringParams s;
  if (factor == 1.0) return s;
  if (!row.extra.contains("spans"))
    throw Error("spotlight generate",
                "question '" + row.instance +
                    "' was stored without its sentences' spans: rerun spotlight eval --store");
  for (const auto& sp : row.extra["spans"])
    s.spans.push_back({sp[0].get<size_t>(), sp[1].get<size_t>()});
  s.rule = runtime::Steering::Rescale;
  s.value = float(factor);
  return s;
}

store::Result answer_row(reader::Reader& r, int64_t run, const store::Result& prompt_row,
                         const std::vector<std::string>& answers, int max_tokens, double emphasis,
                         reader::MeasuredTally& tally) {
  store::Result out;
  out.run = run;
  out.instance = prompt_row.instance;
  out.variant = "spotlight";
  out.prompt = prompt_row.prompt;
  try {
    const GradedAnswer g = answer_and_grade(r, prompt_row.prompt, answers, max_tokens,
                                            row_emphasis(prompt_row, emphasis));
    out.output = g.text;
    out.correct = g.em > 0.5;
    out.scores = {{"em", g.em}};
    tally.measured();
  } catch (const Error& e) {
    out.status = store::Status::unmeasured;
    out.error = e.what();
    tally.failed(e);
  }
  return out;
}

}  // namespace

GenerateSummary run_generate(reader::Reader& r, store::RunStore& st,
                             const std::vector<eval::QaRecord>& records,
                             const GenerateOptions& opt) {
  const std::string stage = "spotlight generate";
  // "grading" names the rule (SQuAD-normalised EM of the first line, answer.h), so that rows
  // graded on the whole output or with ragform's default normaliser (earlier versions) are never
  // resumed into this run.
  store::RunConfig rc;
  rc.pipeline = stage;
  rc.config = {{"spotlight_run", opt.spotlight_run},
               {"max_tokens", opt.max_tokens},
               {"grading", "squad em of the first line"}};
  // Unemphasised runs keep the identity they had before emphasis existed.
  if (opt.emphasis_factor != 1.0) rc.config["emphasis_factor"] = opt.emphasis_factor;
  const common::Resumed res =
      common::begin_or_resume(st, rc, opt.origin, opt.hooks, stage, records.size(), "answers");
  GenerateSummary sum;
  sum.run = res.run;
  std::map<std::string, std::vector<std::string>> answers;
  for (const auto& rec : records) answers[rec.id] = rec.answers;
  std::vector<store::Result> todo;
  for (const auto& row : st.results(opt.spotlight_run))
    if (row.variant == "spotlight" && !row.prompt.empty() && answers.count(row.instance) &&
        !res.done.count({row.instance, "spotlight"}))
      todo.push_back(row);
  reader::MeasuredTally tally;
  tally.measured(int64_t(res.done.size()));
  {
    common::Stage prog(opt.hooks, stage, todo.size());
    for (const auto& row : todo) {
      st.put(answer_row(r, sum.run, row, answers[row.instance], opt.max_tokens, opt.emphasis_factor,
                        tally));
      prog.add();
      tally.fail_fast(stage);
    }
  }
  tally.check(stage);
  sum.unmeasured = tally.unmeasured();
  if (sum.unmeasured > 0)
    opt.hooks.say(stage + ": " + std::to_string(sum.unmeasured) + " of " +
                  std::to_string(sum.unmeasured + tally.measured_count()) +
                  " questions unmeasured (a rerun with the same --store retries them)");
  for (const auto& row : st.results(sum.run))
    if (row.status == store::Status::ok && row.correct) {
      sum.graded += 1;
      sum.correct += *row.correct ? 1 : 0;
    }
  return sum;
}

}  // namespace ragform::spotlight

#include "pipelines/spotlight/run.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <iterator>
#include <map>
#include <set>

#include "base/error.h"
#include "base/excerpt.h"
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

// The prompt one variant answers, with the byte ranges of its sentences (for emphasis).
struct VariantPrompt {
  std::string text;
  std::vector<std::pair<size_t, size_t>> spans;
};

// A stored row a prompt is built from that is not as spotlight eval --store writes it: the row
// (run, question, variant) and what is wrong with it.
Error bad_row(const store::Result& row, const std::string& why) {
  return Error("spotlight generate", "the store's row of run " + std::to_string(row.run) +
                                         ", question '" + excerpt(row.instance) + "', variant '" +
                                         excerpt(row.variant) + "' " + why +
                                         ": rerun spotlight eval --store");
}

// The stored prompt and its spans (extra "spans"; required only with emphasis).
VariantPrompt stored_prompt(const store::Result& row, bool need_spans) {
  VariantPrompt p{row.prompt, {}};
  if (!need_spans) return p;
  if (!row.extra.contains("spans")) throw bad_row(row, "was stored without its sentences' spans");
  const nlohmann::json& spans = row.extra["spans"];
  if (!spans.is_array()) throw bad_row(row, "has 'spans' that is not a list");
  for (size_t i = 0; i < spans.size(); ++i) {
    const nlohmann::json& sp = spans[i];
    if (!sp.is_array() || sp.size() != 2 || !sp[0].is_number_unsigned() ||
        !sp[1].is_number_unsigned() || sp[0].get<size_t>() > sp[1].get<size_t>() ||
        sp[1].get<size_t>() > p.text.size())
      throw bad_row(row, "has a spans[" + std::to_string(i) +
                             "] that is not a [begin, end] pair of byte offsets into its prompt");
    p.spans.emplace_back(sp[0].get<size_t>(), sp[1].get<size_t>());
  }
  return p;
}

// The same selection without the special tokens: select_and_annotate's prompt with
// special_tokens off, rebuilt from the row's question and selected sentences (in prompt order).
VariantPrompt plain_prompt(const store::Result& row) {
  const nlohmann::json& x = row.extra;
  if (!x.contains("question") || !x["question"].is_string() || !x.contains("selected") ||
      !x["selected"].is_array())
    throw bad_row(row, "was stored without its question and selection");
  std::vector<std::string> lines;
  for (size_t i = 0; i < x["selected"].size(); ++i) {
    const nlohmann::json& sel = x["selected"][i];
    if (!sel.is_object() || (sel.contains("text") && !sel["text"].is_string()))
      throw bad_row(row, "has a selected[" + std::to_string(i) +
                             "] that is not a sentence (an object with a 'text' string)");
    // The stored text is the sentence's own bytes (HotpotQA's carry a leading space); the
    // prompt's line is it trimmed, as select_and_annotate writes it.
    const std::string t = sel.value("text", std::string());
    const size_t b = t.find_first_not_of(" \t\n"), e = t.find_last_not_of(" \t\n");
    lines.push_back(b == std::string::npos ? "" : t.substr(b, e - b + 1));
  }
  const std::string question = x["question"].get<std::string>();
  VariantPrompt p{build_prompt(question, lines), {}};
  size_t at = build_prompt(question, {}).size() - std::string("Answer:").size();
  for (const std::string& l : lines) {
    p.spans.emplace_back(at, at + l.size());
    at += l.size() + 1;
  }
  return p;
}

// Attention emphasis of a prompt's sentences: rescale:factor on them (none at factor 1).
reader::SteeringParams emphasis(const VariantPrompt& p, double factor) {
  reader::SteeringParams s;
  if (factor == 1.0) return s;
  for (const auto& [b, e] : p.spans)
    if (e > b) s.spans.push_back({b, e});
  if (s.spans.empty()) return s;
  s.rule = runtime::Steering::Rescale;
  s.value = float(factor);
  return s;
}

// One question's answer row for one variant: generated and graded (answer.h), or unmeasured when
// the reader failed.
store::Result answer_row(reader::Reader& r, int64_t run, const store::Result& prompt_row,
                         const std::string& variant, const std::vector<std::string>& answers,
                         const GenerateOptions& opt, reader::MeasuredTally& tally) {
  store::Result out;
  out.run = run;
  out.instance = prompt_row.instance;
  out.variant = variant;
  // A damaged row is no reader failure, not retried by a rerun: Error, outside the try below.
  // The checks above name what is wrong; nlohmann's own words are a last resort, with the row.
  const bool need_spans = opt.emphasis_factor != 1.0;
  VariantPrompt p;
  try {
    p = variant == kWithTokens ? stored_prompt(prompt_row, need_spans) : plain_prompt(prompt_row);
  } catch (const nlohmann::json::exception& e) {
    throw bad_row(prompt_row,
                  "is not as spotlight eval --store writes it (" + excerpt(e.what()) + ")");
  }
  try {
    out.prompt = p.text;
    const auto t0 = std::chrono::steady_clock::now();
    const GradedAnswer g =
        answer_and_grade(r, p.text, answers, opt.max_tokens, emphasis(p, opt.emphasis_factor));
    out.timings_ms["total"] =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.prompt_tokens = g.prompt_tokens;
    out.output = g.text;
    out.correct = g.em > 0.5;
    out.scores = {{"em", g.em}, {"f1", g.f1}, {"substring", g.substring}};
    out.extra = {{"finish_reason", g.finish_reason}};
    tally.measured();
  } catch (const Error& e) {
    out.status = store::Status::unmeasured;
    out.error = e.what();
    out.timings_ms.clear();
    tally.failed(e);
  }
  return out;
}

// Every variant's answers in the run's measured rows.
std::map<std::string, VariantAnswers> stored_answers(const store::RunStore& st, int64_t run) {
  std::map<std::string, VariantAnswers> out;
  st.for_each_result(run, [&](const store::Result& row) {
    if (row.status != store::Status::ok) return;
    VariantAnswers& v = out[row.variant];
    auto score = [&](const char* name) {
      auto it = row.scores.find(name);
      return it == row.scores.end() ? 0.0 : it->second;
    };
    v.em.push_back(score("em"));
    v.f1.push_back(score("f1"));
    v.substring.push_back(score("substring"));
    v.prompt_tokens += row.prompt_tokens.value_or(0);
    auto t = row.timings_ms.find("total");
    if (t != row.timings_ms.end()) v.generate_ms += t->second;
  });
  return out;
}

}  // namespace

GenerateSummary run_generate(reader::Reader& r, store::RunStore& st,
                             const std::vector<eval::QaRecord>& records,
                             const GenerateOptions& opt) {
  const std::string stage = "spotlight generate";
  // "grading" names the rule (SQuAD-normalised EM of the first line, answer.h) and "stop" the
  // generation's (after the first non-empty line), so that rows graded on the whole output, with
  // ragform's default normaliser, or generated up to a first newline that came before any text
  // (earlier versions: every Gemma 3 270M answer empty) are never resumed into this run.
  store::RunConfig rc;
  rc.pipeline = stage;
  rc.config = {{"spotlight_run", opt.spotlight_run},
               {"max_tokens", opt.max_tokens},
               {"grading", "squad em of the first line"},
               {"stop", "after the first non-empty line"}};
  // Unemphasised runs keep the identity they had before emphasis existed.
  if (opt.emphasis_factor != 1.0) rc.config["emphasis_factor"] = opt.emphasis_factor;
  std::vector<std::string> variants = {kWithTokens};
  if (opt.without_tokens) variants.push_back(kWithoutTokens);
  std::map<std::string, std::vector<std::string>> answers;
  for (const auto& rec : records) answers[rec.id] = rec.answers;
  std::vector<store::Result> prompts;
  for (const auto& row : st.results(opt.spotlight_run))
    if (row.variant == "spotlight" && !row.prompt.empty() && answers.count(row.instance))
      prompts.push_back(row);
  const common::Resumed res = common::begin_or_resume(st, rc, opt.origin, opt.hooks, stage,
                                                      prompts.size() * variants.size(), "answers");
  GenerateSummary sum;
  sum.run = res.run;
  std::vector<std::pair<const store::Result*, std::string>> todo;
  for (const auto& row : prompts)
    for (const std::string& v : variants)
      if (!res.done.count({row.instance, v})) todo.emplace_back(&row, v);
  reader::MeasuredTally tally;
  tally.measured(int64_t(res.done.size()));
  {
    common::Stage prog(opt.hooks, stage, todo.size());
    for (const auto& [row, v] : todo) {
      st.put(answer_row(r, sum.run, *row, v, answers[row->instance], opt, tally));
      prog.add();
      tally.fail_fast(stage);
    }
  }
  tally.check(stage);
  sum.unmeasured = tally.unmeasured();
  if (sum.unmeasured > 0)
    opt.hooks.say(stage + ": " + std::to_string(sum.unmeasured) + " of " +
                  std::to_string(sum.unmeasured + tally.measured_count()) +
                  (variants.size() == 1 ? " questions" : " answers") +
                  " unmeasured (a rerun with the same --store retries them)");
  sum.variants = stored_answers(st, sum.run);
  for (const auto& row : st.results(sum.run))
    if (row.status == store::Status::ok && row.correct && row.variant == kWithTokens) {
      sum.graded += 1;
      sum.correct += *row.correct ? 1 : 0;
    }
  return sum;
}

}  // namespace ragform::spotlight

#include "pipelines/spotlight/sweeps.h"

#include <map>

#include "base/stable_hash.h"
#include "pipelines/spotlight/answer.h"
#include "pipelines/spotlight/select.h"
#include "text/sentences.h"

namespace ragform::spotlight {

namespace {

// One configuration of the scorer evaluated on every question: a row group, its name, the
// parameters and the K of its recall.
struct Config {
  std::string group, name;
  ScoreParams p;
  int K;
};

// The main configuration first (rows[0] feeds the baselines' comparison and the answers), then
// with sweeps Table 3's ablations and Table 4's k and lambda sweeps.
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

SweepSummary empty_summary(const std::vector<Config>& cfgs, const SweepOptions& opt) {
  SweepSummary t;
  for (const auto& c : cfgs) t.rows.push_back({c.group, c.name, c.K, {}});
  const std::vector<int> Ks = opt.sweeps ? std::vector<int>{2, 4, 6, 8} : std::vector<int>{opt.K};
  for (const char* m : {"spotlight", "lead", "lead-doc", "random", "bm25"})
    for (int k : Ks) t.krows.push_back({"sweep-K", m, k, {}});
  if (opt.sweeps) t.distractors = {0, 2, 4, 8};
  t.ctx_words.assign(t.distractors.size(), 0.0);
  for (int d : t.distractors)
    for (const char* m : {"spotlight", "bm25"})
      t.crows.push_back(
          {"sweep-context", std::string(m) + " gold+" + std::to_string(d), opt.K, {}});
  return t;
}

// The generator's answer to the main configuration's selection, with and without the special
// tokens (the paper's end-to-end comparison), graded by the pipeline's answer step (answer.h),
// the same one run_generate uses.
void answer_question(reader::Reader& rd, const eval::QaRecord& r, const std::vector<Document>& docs,
                     const ScoredQuestion& sq, const SweepOptions& opt, SweepSummary& t) {
  for (bool special : {true, false}) {
    Selection s = select_and_annotate(r.question, docs, sq, {opt.K, Order::Document, special});
    const GradedAnswer g = answer_and_grade(rd, s.prompt, r.answers, opt.max_tokens);
    (special ? t.em_full : t.em_plain).push_back(g.em);
    (special ? t.f1_full : t.f1_plain).push_back(g.f1);
    (special ? t.sub_full : t.sub_plain).push_back(g.substring);
  }
}

// One question: every configuration's recall, the baselines' K sweep and the context-length
// sweep. Questions without resolvable gold sentences are counted and skipped.
void eval_question(const eval::QaRecord& r, TokenEncoder& enc, const std::vector<Config>& cfgs,
                   const SweepOptions& opt, SweepSummary& t) {
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
      if (opt.generator) answer_question(*opt.generator, r, docs, sq, opt, t);
    }
  }
  uint64_t qseed = derive_seed(opt.seed, r.id);
  std::map<std::string, Ranking> base_rk{{"spotlight", spot},
                                         {"lead", rank_lead(docs)},
                                         {"lead-doc", rank_lead_per_doc(docs)},
                                         {"random", rank_random(docs, qseed)},
                                         {"bm25", rank_bm25(r.question, docs)}};
  for (RecallRow& kr : t.krows) kr.recalls.push_back(recall_at(base_rk[kr.method], gold, kr.K));
  for (size_t i = 0; i < t.distractors.size(); ++i) {
    ContextSubset cs = with_distractors(docs, gold, t.distractors[i]);
    for (const Document& d : cs.docs) t.ctx_words[i] += double(text::words(d.text).size());
    ScoredQuestion sq = score_question(enc, r.question, cs.docs, opt.base);
    t.crows[2 * i].recalls.push_back(recall_at(rank_scored(sq), cs.gold, opt.K));
    t.crows[2 * i + 1].recalls.push_back(recall_at(rank_bm25(r.question, cs.docs), cs.gold, opt.K));
  }
}

}  // namespace

SweepSummary run_sweeps(TokenEncoder& enc, const std::vector<eval::QaRecord>& records,
                        const SweepOptions& opt) {
  const std::vector<Config> cfgs = eval_configs(opt.base, opt.K, opt.sweeps);
  SweepSummary t = empty_summary(cfgs, opt);
  common::Stage prog(opt.hooks, "spotlight eval", records.size());
  for (const eval::QaRecord& r : records) {
    prog.add();
    eval_question(r, enc, cfgs, opt, t);
  }
  return t;
}

}  // namespace ragform::spotlight

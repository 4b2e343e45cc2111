#include "pipelines/spotlight/run.h"

#include <algorithm>
#include <functional>
#include <set>

#include "base/error.h"
#include "base/stable_hash.h"
#include "pipelines/spotlight/evaluate.h"
#include "pipelines/spotlight/select.h"
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
  rc.tool_version = opt.tool_version;
  rc.reader = "none";
  rc.chat_mode = "none";
  rc.seed = int64_t(opt.seed);
  return rc;
}

// The selected spans of a spotlight row, as the report shows them: title, sentence text, R and
// its normalised form, category, whether the sentence is gold, and the matched word pairs with
// their offsets in the sentence.
nlohmann::json selected_json(const Selection& sel, const std::vector<Document>& docs,
                             const std::set<std::pair<int, int>>& gold_set) {
  nlohmann::json js = nlohmann::json::array();
  for (const Selected& s : sel.selected) {
    const Document& d = docs.at(size_t(s.score.doc));
    const text::TextSpan sp = d.sentences.at(size_t(s.score.sent));
    nlohmann::json mj = nlohmann::json::array();
    for (const Match& x : s.score.matches) {
      if (x.c_span.begin < sp.begin || x.c_span.end > sp.end || x.c_span.size() == 0) continue;
      mj.push_back({{"q", x.q},
                    {"c", x.c},
                    {"s", x.s},
                    {"begin", x.c_span.begin - sp.begin},
                    {"end", x.c_span.end - sp.begin}});
    }
    js.push_back({{"title", s.title},
                  {"text", d.text.substr(sp.begin, sp.size())},
                  {"R", s.score.R},
                  {"R_norm", s.score.R_norm},
                  {"category", s.category},
                  {"gold", gold_set.count({s.score.doc, s.score.sent}) > 0},
                  {"matches", mj}});
  }
  return js;
}

}  // namespace

RunSummary run_eval(store::RunStore& st, const std::vector<eval::QaRecord>& records,
                    TokenEncoder& enc, const RunOptions& opt) {
  if (opt.K < 1) throw Error("spotlight eval", "K must be >= 1");
  if (opt.recall_ks.empty()) throw Error("spotlight eval", "no recall@K given");
  const store::RunConfig rc = eval_run_config(records, enc, opt);
  RunSummary stats;
  stats.run = st.begin_run(rc);
  auto done = st.done_keys(stats.run);
  const char* methods[] = {"spotlight", "lead", "lead-doc", "random", "bm25"};
  for (const eval::QaRecord& r : records) {
    auto gold = gold_sentences(r);
    if (gold.empty()) {
      ++stats.skipped;
      continue;
    }
    ++stats.questions;
    bool all_done = true;
    for (const char* m : methods) all_done = all_done && done.count({r.id, m});
    if (all_done) {
      stats.reused += 5;
      continue;
    }
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
      for (int k : opt.recall_ks)
        row.scores["recall@" + std::to_string(k)] = recall_at(rk, gold, k);
      row.extra = {{"question", r.question}, {"gold_sentences", gold.size()}};
      if (m == "spotlight") {
        Selection sel = select_and_annotate(r.question, docs, sq, {opt.K, Order::Document, true});
        row.prompt = sel.prompt;
        row.extra["selected"] = selected_json(sel, docs, gold_set);
      }
      st.put(row);
      ++stats.written;
    }
  }
  std::map<std::string, std::pair<double, size_t>> acc;
  st.for_each_result(stats.run, [&](const store::Result& row) {
    for (const auto& [name, v] : row.scores) {
      auto& a = acc[row.variant + name.substr(name.find('@'))];
      a.first += v;
      ++a.second;
    }
  });
  for (const auto& [k, a] : acc) stats.mean_recall[k] = a.first / double(a.second);
  return stats;
}

}  // namespace ragform::spotlight

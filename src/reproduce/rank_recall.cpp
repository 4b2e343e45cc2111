#include "reproduce/rank_recall.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "base/error.h"
#include "pipelines/spotlight/spotlight.h"

namespace ragform::reproduce {

const std::vector<std::string>& rank_methods() {
  static const std::vector<std::string> m = {"raw", "calibrated", "bm25"};
  return m;
}

namespace {

// What "%.9g" prints (the JSON the CLI prints).
double round9(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

// The record's paragraphs as C-NORM documents, and which are gold.
struct Ranked {
  cnorm::Item item;
  std::vector<cnorm::Document> docs;
  std::vector<size_t> gold;
};

Ranked ranked_of(const eval::QaRecord& rec, size_t k) {
  if (rec.ctxs.size() != k)
    throw Error("position-bias rank",
                "record " + rec.id + " has " + std::to_string(rec.ctxs.size()) +
                    " paragraphs but the bias curve " + std::to_string(k) + " slots");
  Ranked r;
  r.item.id = rec.id;
  r.item.question = rec.question;
  for (size_t i = 0; i < rec.ctxs.size(); ++i) {
    r.docs.push_back({rec.ctxs[i].title, rec.ctxs[i].text});
    if (rec.ctxs[i].isgold) r.gold.push_back(i);
  }
  if (r.gold.empty())
    throw Error("position-bias rank", "record " + rec.id + " has no gold paragraph");
  return r;
}

// Raw relevance: each document's attention under the curve's measure, averaged over the layers'
// rows.
std::vector<double> attention_relevance(reader::Reader& rd, const cnorm::Prompt& p,
                                        const std::vector<cnorm::Document>& docs,
                                        const std::vector<int>& layers, cnorm::Measure m) {
  return cnorm::layer_mean_attention(rd, p.text, cnorm::document_spans(p, docs), layers, m);
}

std::vector<double> bm25_relevance(const Ranked& r) {
  std::vector<std::vector<std::string>> docs;
  for (const auto& d : r.docs) docs.push_back(spotlight::bm25_terms(d.title + " " + d.text));
  return spotlight::bm25_scores(spotlight::bm25_terms(r.item.question), docs);
}

// recall@k of `ranking` for k = 1..K
std::vector<double> recall_curve(const std::vector<size_t>& ranking,
                                 const std::vector<size_t>& gold) {
  std::set<size_t> g(gold.begin(), gold.end());
  std::vector<double> out;
  size_t hit = 0;
  for (size_t i : ranking) {
    hit += g.count(i);
    out.push_back(double(hit) / double(g.size()));
  }
  return out;
}

store::Result rank_row(reader::Reader& rd, const Ranked& r, const RankRecallOptions& o,
                       const std::string& tmpl) {
  const cnorm::Prompt p = cnorm::render(cnorm::Task::Qa, tmpl, r.item, r.docs,
                                        cnorm::Format{cnorm::original_delimiter()});
  const std::vector<double> raw = attention_relevance(rd, p, r.docs, o.layers, o.bias.measure);
  const std::vector<std::vector<double>> scores = {
      raw, cnorm::calibrated_relevance(raw, o.bias.curve), bm25_relevance(r)};
  store::Result row;
  row.instance = r.item.id;
  row.variant = "rank";
  row.prompt = p.text;
  row.extra["gold"] = r.gold;
  for (size_t m = 0; m < scores.size(); ++m) {
    const std::vector<size_t> ranking = cnorm::rank_documents(scores[m]);
    const std::vector<double> rec = recall_curve(ranking, r.gold);
    for (size_t k = 0; k < rec.size(); ++k)
      row.scores[rank_methods()[m] + "@" + std::to_string(k + 1)] = rec[k];
    row.extra[rank_methods()[m]] = ranking;
  }
  return row;
}

}  // namespace

RankRecallSummary run_rank_recall(reader::Reader& rd, store::RunStore& st,
                                  const std::vector<eval::QaRecord>& records,
                                  const RankRecallOptions& opt) {
  const size_t k = opt.bias.curve.size();
  if (k == 0) throw UsageError("position-bias rank", "the bias curve is empty");
  if (opt.layers.empty()) throw UsageError("position-bias rank", "no layers to measure");
  // Only records with one paragraph per slot can be calibrated with the curve; HotpotQA has a
  // few with fewer paragraphs, which are left out (and counted) rather than fail the run.
  std::vector<const eval::QaRecord*> fit;
  size_t skipped = 0;
  for (const auto& rec : records) {
    if (opt.limit && fit.size() == opt.limit) break;
    if (rec.ctxs.size() == k)
      fit.push_back(&rec);
    else
      ++skipped;
  }
  const size_t n = fit.size();
  if (n == 0)
    throw Error("position-bias rank", "no record has " + std::to_string(k) + " paragraphs");
  if (skipped)
    opt.hooks.say("position-bias rank: " + std::to_string(skipped) + " records left out: not " +
                  std::to_string(k) + " paragraphs");
  const std::string tmpl = cnorm::load_template(cnorm::Task::Qa, "");
  store::RunConfig rc;
  rc.pipeline = "position-bias rank";
  rc.config = {{"bias", cnorm::bias_curve_json(opt.bias)["curve"]},
               {"layers", opt.layers},
               {"limit", n},
               {"template", tmpl},
               {"input_sha256", opt.input_sha256}};
  common::Resumed res =
      common::begin_or_resume(st, rc, opt.origin, opt.hooks, "position-bias rank", n, "records");
  common::Stage stage(opt.hooks, "position-bias rank", n);
  for (size_t i = 0; i < n; ++i) {
    if (!res.done.count({fit[i]->id, "rank"})) {
      store::Result row = rank_row(rd, ranked_of(*fit[i], k), opt, tmpl);
      row.run = res.run;
      st.put(row);
    }
    stage.add();
  }
  RankRecallSummary s = rank_recall_from_rows(st.results(res.run), k);
  s.run = res.run;
  s.skipped = skipped;
  return s;
}

RankRecallSummary rank_recall_from_rows(const std::vector<store::Result>& rows, size_t k) {
  RankRecallSummary s;
  s.k = k;
  s.recall.assign(rank_methods().size(), std::vector<double>(k, 0.0));
  for (const store::Result& row : rows) {
    if (row.status != store::Status::ok) continue;
    ++s.records;
    for (size_t m = 0; m < rank_methods().size(); ++m)
      for (size_t j = 0; j < k; ++j) {
        auto it = row.scores.find(rank_methods()[m] + "@" + std::to_string(j + 1));
        if (it != row.scores.end()) s.recall[m][j] += it->second;
      }
  }
  for (auto& v : s.recall)
    for (double& x : v) x = s.records ? x / double(s.records) : 0.0;
  return s;
}

nlohmann::json rank_recall_json(const RankRecallSummary& s) {
  nlohmann::json recall = nlohmann::json::object();
  for (size_t m = 0; m < rank_methods().size(); ++m) {
    nlohmann::json v = nlohmann::json::array();
    for (double x : s.recall[m]) v.push_back(round9(x));
    recall[rank_methods()[m]] = v;
  }
  return {{"records", s.records},
          {"skipped", s.skipped},
          {"k", s.k},
          {"run", s.run},
          {"recall", recall}};
}

}  // namespace ragform::reproduce

// Recall@K rankers and the positional analysis (see evaluate.h).
#include "pipelines/spotlight/evaluate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "base/error.h"
#include "pipelines/spotlight/lexical.h"
#include "pipelines/spotlight/select.h"
#include "text/sentences.h"

namespace ragform::spotlight {

std::vector<Document> documents_of(const eval::QaRecord& r) {
  std::vector<Document> docs;
  for (const eval::Context& c : r.ctxs) {
    Document d{c.id, c.title, c.text, {}};
    if (!c.sentences.empty() && c.sentence_offsets.size() == c.sentences.size()) {
      for (size_t i = 0; i < c.sentences.size(); ++i)
        d.sentences.push_back(
            {c.sentence_offsets[i], c.sentence_offsets[i] + c.sentences[i].size()});
    } else {
      for (const auto& s : text::split_sentences(c.text)) d.sentences.push_back(s.span);
    }
    docs.push_back(std::move(d));
  }
  return docs;
}

std::vector<std::pair<int, int>> gold_sentences(const eval::QaRecord& r) {
  std::set<std::pair<int, int>> g;
  if (r.hotpot)
    for (const auto& f : r.hotpot->supporting_facts)
      if (f.context_index >= 0 && f.sentence_ok) g.emplace(f.context_index, f.sent_id);
  return {g.begin(), g.end()};
}

ContextSubset with_distractors(const std::vector<Document>& docs,
                               const std::vector<std::pair<int, int>>& gold, int distractors) {
  if (distractors < 0) throw Error("spotlight", "distractors must be >= 0");
  std::set<int> gold_docs;
  for (const auto& g : gold) {
    if (g.first < 0 || g.first >= int(docs.size()))
      throw Error("spotlight", "gold document " + std::to_string(g.first) + " out of range");
    gold_docs.insert(g.first);
  }
  ContextSubset out;
  std::map<int, int> renumber;
  int taken = 0;
  for (int d = 0; d < int(docs.size()); ++d) {
    bool is_gold = gold_docs.count(d) > 0;
    if (!is_gold && taken >= distractors) continue;
    taken += !is_gold;
    renumber[d] = int(out.docs.size());
    out.docs.push_back(docs[size_t(d)]);
  }
  for (const auto& [d, sent] : gold) out.gold.emplace_back(renumber.at(d), sent);
  return out;
}

Ranking rank_lead(const std::vector<Document>& docs) {
  Ranking r;
  for (size_t d = 0; d < docs.size(); ++d)
    for (size_t s = 0; s < docs[d].sentences.size(); ++s) r.emplace_back(int(d), int(s));
  return r;
}

Ranking rank_lead_per_doc(const std::vector<Document>& docs) {
  Ranking r;
  size_t longest = 0;
  for (const auto& d : docs) longest = std::max(longest, d.sentences.size());
  for (size_t s = 0; s < longest; ++s)
    for (size_t d = 0; d < docs.size(); ++d)
      if (s < docs[d].sentences.size()) r.emplace_back(int(d), int(s));
  return r;
}

Ranking rank_random(const std::vector<Document>& docs, uint64_t seed) {
  Ranking r = rank_lead(docs);
  std::mt19937_64 rng(seed);
  std::shuffle(r.begin(), r.end(), rng);
  return r;
}

Ranking rank_bm25(const std::string& question, const std::vector<Document>& docs, double k1,
                  double b) {
  Ranking ids = rank_lead(docs);
  std::vector<std::vector<std::string>> terms;
  for (const auto& [d, s] : ids) {
    const text::TextSpan sp = docs[d].sentences[s];
    terms.push_back(bm25_terms(std::string_view(docs[d].text).substr(sp.begin, sp.size())));
  }
  std::vector<double> score = bm25_scores(bm25_terms(question), terms, k1, b);
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t c) { return score[a] > score[c]; });
  Ranking r;
  for (size_t i : order) r.push_back(ids[i]);
  return r;
}

Ranking rank_scored(const ScoredQuestion& scored) {
  Ranking r;
  for (size_t i : top_sentences(scored, std::max<int>(1, int(scored.sentences.size()))))
    r.emplace_back(scored.sentences[i].doc, scored.sentences[i].sent);
  return r;
}

double recall_at(const Ranking& ranking, const std::vector<std::pair<int, int>>& gold, int K) {
  if (gold.empty()) return 0.0;
  std::set<std::pair<int, int>> top(ranking.begin(),
                                    ranking.begin() + std::min<size_t>(K, ranking.size()));
  size_t hit = 0;
  for (const auto& g : gold) hit += top.count(g);
  return double(hit) / double(gold.size());
}

int position_bin(int sent, int n) {
  double x = n > 1 ? double(sent) / double(n - 1) : 0.0;
  return std::min(4, static_cast<int>(x * 5.0));
}

void add_positions(const eval::QaRecord& r, PositionalAnalysis& pa) {
  std::set<int> gold_docs;
  for (const auto& [d, s] : gold_sentences(r)) {
    int n = static_cast<int>(r.ctxs[d].sentences.size());
    pa.gold[position_bin(s, n)] += 1;
    gold_docs.insert(d);
  }
  for (int d : gold_docs) {
    int n = static_cast<int>(r.ctxs[d].sentences.size());
    for (int s = 0; s < n; ++s) pa.all[position_bin(s, n)] += 1;
  }
}

std::array<double, 5> PositionalAnalysis::lift() const {
  double g = std::accumulate(gold.begin(), gold.end(), 0.0),
         a = std::accumulate(all.begin(), all.end(), 0.0);
  std::array<double, 5> l{};
  for (int i = 0; i < 5; ++i) l[i] = (all[i] > 0 && g > 0) ? (gold[i] / g) / (all[i] / a) : 0.0;
  return l;
}

}  // namespace ragform::spotlight

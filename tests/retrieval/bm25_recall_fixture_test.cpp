// Done-when of issue 19: on a corpus of HotpotQA paragraphs, `retrieve --mode bm25` (SQLite FTS5
// bm25()) finds the gold paragraphs as well as a textbook BM25 does: recall@10 within 0.03.
//
// The reference below is written from the textbook formula (Robertson & Zaragoza, "The
// Probabilistic Relevance Framework: BM25 and Beyond", 2009, eq. 3.26 with the "+1" IDF that
// keeps weights non-negative):
//   score(D, Q) = sum over distinct query terms t of
//                 IDF(t) * f(t, D) * (k1 + 1) / (f(t, D) + k1 * (1 - b + b * |D| / avgdl))
//   IDF(t) = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5)),  k1 = 1.2, b = 0.75
// over title + text, tokens = maximal runs of ASCII letters/digits (or non-ASCII bytes), lower-
// cased, no stemming. It shares no code with the index (FTS5 tokenises with unicode61 + Porter).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "eval/datasets.h"
#include "retrieval/index_build.h"
#include "retrieval/make_corpus.h"
#include "retrieval/retriever.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : s) {
    if (c >= 0x80 || std::isalnum(c)) {
      cur += char(std::tolower(c));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

class TextbookBm25 {
 public:
  void add(const std::string& id, const std::string& title, const std::string& text) {
    auto t = tokens(title + " " + text);
    std::unordered_map<std::string, int> tf;
    for (auto& w : t) ++tf[w];
    const size_t d = ids_.size();
    for (auto& [w, n] : tf) postings_[w].push_back({d, n});
    ids_.push_back(id);
    len_.push_back(double(t.size()));
    total_len_ += double(t.size());
  }
  std::vector<std::string> top(const std::string& q, size_t k) const {
    const double k1 = 1.2, b = 0.75, N = double(ids_.size()), avgdl = total_len_ / N;
    std::vector<double> score(ids_.size(), 0.0);
    auto qt = tokens(q);
    std::set<std::string> uniq(qt.begin(), qt.end());
    for (const auto& t : uniq) {
      auto it = postings_.find(t);
      if (it == postings_.end()) continue;
      const double n = double(it->second.size());
      const double idf = std::log(1.0 + (N - n + 0.5) / (n + 0.5));
      for (auto [d, f] : it->second)
        score[d] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len_[d] / avgdl));
    }
    std::vector<size_t> order(ids_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(
        order.begin(), order.begin() + long(std::min(k, order.size())), order.end(),
        [&](size_t a, size_t c) { return score[a] != score[c] ? score[a] > score[c] : a < c; });
    std::vector<std::string> out;
    for (size_t i = 0; i < std::min(k, order.size()) && score[order[i]] > 0; ++i)
      out.push_back(ids_[order[i]]);
    return out;
  }

 private:
  std::vector<std::string> ids_;
  std::vector<double> len_;
  double total_len_ = 0;
  std::unordered_map<std::string, std::vector<std::pair<size_t, int>>> postings_;
};

TEST(Bm25Recall, FtsIndexMatchesTextbookBm25OnHotpotQa) {
  auto dir = temp_dir("bm25-recall");
  auto corpus = make_corpus(dir, "hotpotqa");

  // Corpus: (title, text) -> id, and the reference index.
  std::map<std::pair<std::string, std::string>, std::string> id_of;
  TextbookBm25 ref;
  eval::for_each_json_record(corpus.string(), {}, [&](const eval::JsonRow& r) {
    const auto id = r.value["id"].get<std::string>();
    const auto title = r.value["title"].get<std::string>(),
               text = r.value["text"].get<std::string>();
    id_of[{title, text}] = id;
    ref.add(id, title, text);
  });
  ASSERT_GT(id_of.size(), 5000u);

  retrieval::BuildOptions bo;
  bo.corpus = corpus.string();
  bo.dir = (dir / "index").string();
  auto sum = retrieval::build_index(bo);
  EXPECT_EQ(sum.total, id_of.size());

  // Questions and their gold paragraphs (the supporting-fact titles' paragraphs).
  std::vector<std::string> questions;
  std::vector<std::set<std::string>> gold;
  for (const char* split : {"dev", "train"}) {
    auto res = eval::load_qa_file(
        shared_path(std::string("data/hotpotqa-distractor/") + split + ".jsonl").string());
    for (const auto& r : res.records) {
      std::set<std::string> g;
      for (const auto& c : r.ctxs)
        if (c.isgold) g.insert(id_of.at({c.title, c.text}));
      if (g.empty()) continue;
      questions.push_back(r.question);
      gold.push_back(std::move(g));
    }
  }
  ASSERT_EQ(questions.size(), 600u);

  retrieval::RetrieverOptions ro;
  ro.threads = 2;
  retrieval::Retriever fts(bo.dir, ro);
  auto got = fts.retrieve(questions, 10);
  double found_fts = 0, found_ref = 0, n_gold = 0;
  for (size_t i = 0; i < questions.size(); ++i) {
    ASSERT_EQ(got[i].size(), 10u) << questions[i];
    for (const auto& c : got[i]) found_fts += gold[i].count(c.id);
    for (const auto& id : ref.top(questions[i], 10)) found_ref += gold[i].count(id);
    n_gold += double(gold[i].size());
  }
  const double recall_fts = found_fts / n_gold, recall_ref = found_ref / n_gold;
  std::printf("recall@10: fts5 bm25 %.4f, textbook bm25 %.4f (%zu questions, %.0f gold)\n",
              recall_fts, recall_ref, questions.size(), n_gold);
  EXPECT_NEAR(recall_fts, recall_ref, 0.03);
  EXPECT_GT(recall_ref, 0.3);  // the reference itself works
}

}  // namespace
}  // namespace ragform::testing

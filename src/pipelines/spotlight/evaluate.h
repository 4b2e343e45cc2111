// SpotlightRAG evaluation (the paper's "Evaluation"): evidence recall@K of gold sentences (HotpotQA
// `supporting_facts`) for Spotlight and three baselines, and the positional analysis of the
// paper's Figure 1(a).
//
// Rankers (each returns every sentence of the question, best first):
//   spotlight   score_question + top_sentences (scoring.h, select.h)
//   lead        the first K sentences of the contexts in file order (the concatenated context's
//   lead) lead-doc    round-robin leads: sentence 0 of every document, then sentence 1, ... (a
//   stronger
//               positional baseline: HotpotQA supporting facts are mostly lead sentences)
//   random      a uniformly random order, seeded per question (derive_seed(seed, question id),
//               base/stable_hash.h: the same order on every machine and standard library)
//   bm25        Okapi BM25 with k1 = 1.2, b = 0.75; each sentence is a document, the collection is
//               the question's sentences; terms are the step-3 keys of encoder.h's word_keys
//               (lowercased, punctuation stripped); idf = ln(1 + (N - df + 0.5) / (df + 0.5)).
// recall@K of a question = |gold ∩ top-K| / |gold|, gold = supporting facts whose (title, sent_id)
// resolves to a sentence (HotpotQA's few out-of-range sent_ids are not counted as gold); a
// question without any resolvable gold is skipped and counted.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>
#include "eval/qa_record.h"
#include "pipelines/spotlight/scoring.h"

namespace ragform::spotlight {

// Documents of a record: given sentences (HotpotQA) are used as is, so sentence i is the data's
// sent_id i; otherwise text::split_sentences.
std::vector<Document> documents_of(const eval::QaRecord& r);

// Gold (doc, sent) pairs of a HotpotQA record.
std::vector<std::pair<int, int>> gold_sentences(const eval::QaRecord& r);

// Sentence rankings as (doc, sent) lists, best first.
using Ranking = std::vector<std::pair<int, int>>;
Ranking rank_lead(const std::vector<Document>& docs);
Ranking rank_lead_per_doc(const std::vector<Document>& docs);
Ranking rank_random(const std::vector<Document>& docs, uint64_t seed);
Ranking rank_bm25(const std::string& question, const std::vector<Document>& docs, double k1 = 1.2,
                  double b = 0.75);
Ranking rank_scored(const ScoredQuestion& scored);

// Table 4's context-length axis on HotpotQA distractor: the question's gold documents plus its
// first `distractors` non-gold documents (file order; fewer when the record has fewer), kept in
// file order, with the gold (doc, sent) pairs renumbered to the subset. distractors < 0 throws.
struct ContextSubset {
  std::vector<Document> docs;
  std::vector<std::pair<int, int>> gold;
};
ContextSubset with_distractors(const std::vector<Document>& docs,
                               const std::vector<std::pair<int, int>>& gold, int distractors);

// |gold ∩ first K of ranking| / |gold| (gold non-empty).
double recall_at(const Ranking& ranking, const std::vector<std::pair<int, int>>& gold, int K);

// Figure 1(a): where gold sentences sit in their documents, in 5 bins of relative position
// x = sent_id / (sentences - 1) (0 for one-sentence documents), against where all sentences sit.
struct PositionalAnalysis {
  std::array<double, 5> gold{};  // gold sentences per bin
  std::array<double, 5> all{};   // every sentence of the gold documents per bin
  // gold share / sentence share per bin (>1: evidence over-represented there).
  std::array<double, 5> lift() const;
};
void add_positions(const eval::QaRecord& r, PositionalAnalysis& pa);
int position_bin(int sent, int n_sentences);

}  // namespace ragform::spotlight

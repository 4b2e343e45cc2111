// Okapi BM25 (Robertson et al.; the variant of Lucene and Anserini): for a query term w in a
// document d of the collection,
//   idf(w)   = ln(1 + (N - df(w) + 0.5) / (df(w) + 0.5))
//   score(d) = sum over distinct query terms w of idf(w) * tf * (k1 + 1) /
//              (tf + k1 * (1 - b + b * |d| / avgdl))
// with N documents, df(w) the documents holding w, tf the count of w in d, |d| its length in
// terms and avgdl the mean length. Terms are the step-3 keys of encoder.h's word_keys (lowercased,
// punctuation stripped), so BM25 and the static encoder see the same words. Used by the bm25
// baseline (evaluate.h) and as the lexical evidence of Spotlight's default ranker (scoring.h).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ragform::spotlight {

// The BM25 terms of a text, in order.
std::vector<std::string> bm25_terms(std::string_view text);

// BM25 score of every document of `docs` (each a term list) for `query` (a term list; repeated
// terms count once), the collection being `docs` itself.
std::vector<double> bm25_scores(const std::vector<std::string>& query,
                                const std::vector<std::vector<std::string>>& docs, double k1 = 1.2,
                                double b = 0.75);

}  // namespace ragform::spotlight

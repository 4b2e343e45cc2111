// BM25 over term lists (see lexical.h).
#include "pipelines/spotlight/lexical.h"

#include <cmath>
#include <map>
#include <set>

#include "pipelines/spotlight/encoder.h"
#include "text/sentences.h"

namespace ragform::spotlight {

std::vector<std::string> bm25_terms(std::string_view t) {
  std::vector<std::string> out;
  for (const auto& sp : text::split_words(t)) {
    auto k = word_keys(t.substr(sp.begin, sp.size()));
    if (!k.empty()) out.push_back(k.back());
  }
  return out;
}

std::vector<double> bm25_scores(const std::vector<std::string>& query,
                                const std::vector<std::vector<std::string>>& docs, double k1,
                                double b) {
  const size_t n = docs.size();
  std::vector<std::map<std::string, int>> tf(n);
  std::map<std::string, int> df;
  double avg = 0;
  for (size_t i = 0; i < n; ++i) {
    avg += double(docs[i].size());
    for (const auto& w : docs[i]) ++tf[i][w];
    for (const auto& kv : tf[i]) ++df[kv.first];
  }
  const double N = double(n);
  if (n > 0) avg /= N;
  std::vector<double> score(n, 0.0);
  const std::set<std::string> qterms(query.begin(), query.end());
  for (const auto& w : qterms) {
    auto it = df.find(w);
    if (it == df.end()) continue;
    double idf = std::log(1.0 + (N - it->second + 0.5) / (it->second + 0.5));
    for (size_t i = 0; i < n; ++i) {
      auto f = tf[i].find(w);
      if (f == tf[i].end()) continue;
      double x = f->second;
      double len = avg > 0 ? double(docs[i].size()) / avg : 1.0;
      score[i] += idf * x * (k1 + 1) / (x + k1 * (1 - b + b * len));
    }
  }
  return score;
}

}  // namespace ragform::spotlight

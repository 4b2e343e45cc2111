// Equations (5)-(8) of SpotlightRAG with the scalar positional prior (see scoring.h).
#include "pipelines/spotlight/scoring.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/error.h"
#include "pipelines/spotlight/lexical.h"

namespace ragform::spotlight {

double PositionalPrior::operator()(double x) const {
  x = std::clamp(x, 0.0, 1.0);
  if (x <= head) return 1.0;
  if (x >= 1.0 - tail) return tail_level;
  double span = (1.0 - tail) - head;
  return 1.0 - (1.0 - mid_floor) * (x - head) / span;
}

double token_similarity(const EncodedText& a, const Token& ta, const EncodedText& b,
                        const Token& tb) {
  if (ta.vec < 0 || tb.vec < 0) return (ta.vec < 0 && tb.vec < 0 && ta.key == tb.key) ? 1.0 : 0.0;
  const float* x = a.row(ta.vec);
  const float* y = b.row(tb.vec);
  double d = 0;
  for (int i = 0; i < a.dim; ++i) d += double(x[i]) * y[i];
  // Rows are unit-normalised in float: a row with itself sums past 1 by rounding (pass 23: "s":
  // 1.00000001 for band/band). A cosine is within [-1, 1].
  return std::clamp(d, -1.0, 1.0);
}

std::vector<std::vector<double>> top_k_sums(const std::vector<std::vector<double>>& s,
                                            const std::vector<int>& sentence_of, int n_sent,
                                            int top_k, Weighting weighting,
                                            std::vector<double>* w_out) {
  const size_t nq = s.size(), nc = sentence_of.size();
  if (top_k < 1)
    throw UsageError("spotlight", "token top-k must be >= 1, got " + std::to_string(top_k));
  // (6): w_j = softmax_j(max_i s_ij), computed stably.
  std::vector<double> w(nc, nc ? 1.0 / nc : 0.0);
  if (weighting == Weighting::Softmax && nq > 0 && nc > 0) {
    std::vector<double> m(nc, -INFINITY);
    for (size_t i = 0; i < nq; ++i)
      for (size_t j = 0; j < nc; ++j) m[j] = std::max(m[j], s[i][j]);
    double mx = *std::max_element(m.begin(), m.end()), z = 0;
    for (size_t j = 0; j < nc; ++j) z += (w[j] = std::exp(m[j] - mx));
    for (double& x : w) x /= z;
  }
  if (w_out) *w_out = w;
  std::vector<std::vector<size_t>> members(n_sent);
  for (size_t j = 0; j < nc; ++j) {
    if (sentence_of[j] < 0 || sentence_of[j] >= n_sent)
      throw Error("spotlight", "token sentence index out of range");
    members[sentence_of[j]].push_back(j);
  }
  std::vector<std::vector<double>> sums(nq, std::vector<double>(n_sent, 0.0));
  std::vector<size_t> idx;
  for (int t = 0; t < n_sent; ++t) {
    for (size_t i = 0; i < nq; ++i) {
      idx = members[t];
      size_t k = std::min<size_t>(top_k, idx.size());
      // T_k(q_i): the k tokens of the sentence with the largest s_ij (ties: earlier token).
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](size_t a, size_t b) {
        return s[i][a] > s[i][b] || (s[i][a] == s[i][b] && a < b);
      });
      double sum = 0;
      for (size_t r = 0; r < k; ++r) sum += s[i][idx[r]] * w[idx[r]];
      sums[i][t] = sum;
    }
  }
  return sums;
}

std::vector<double> weighted_relevance(const std::vector<std::vector<double>>& sums,
                                       const std::vector<double>& alpha, int top_k) {
  if (alpha.size() != sums.size())
    throw Error("spotlight", "alpha has " + std::to_string(alpha.size()) + " entries for " +
                                 std::to_string(sums.size()) + " query tokens");
  const size_t n_sent = sums.empty() ? 0 : sums[0].size();
  std::vector<double> R(n_sent, 0.0);
  for (size_t t = 0; t < n_sent; ++t)
    for (size_t i = 0; i < sums.size(); ++i) R[t] += alpha[i] * sums[i][t] / top_k;  // (7), (8)
  return R;
}

std::vector<double> sentence_relevance(const std::vector<std::vector<double>>& s,
                                       const std::vector<int>& sentence_of, int n_sent,
                                       const std::vector<double>& alpha, int top_k,
                                       Weighting weighting, std::vector<double>* w_out) {
  if (alpha.size() != s.size())
    throw Error("spotlight", "alpha has " + std::to_string(alpha.size()) + " entries for " +
                                 std::to_string(s.size()) + " query tokens");
  std::vector<double> R =
      weighted_relevance(top_k_sums(s, sentence_of, n_sent, top_k, weighting, w_out), alpha, top_k);
  R.resize(size_t(std::max(n_sent, 0)), 0.0);  // no query token: every sentence scores 0
  return R;
}

ScoreParams paper_score_params() {
  ScoreParams p;
  p.max_context_tokens = 512;
  // Eq. (8)'s alpha comes from the paper's trained ColBERT-style module, which we do not have;
  // the one weighting the paper states is its fallback, alpha_i = 1/n (section 3.4: "comparable
  // results"). It never names IDF, so IDF stays ragform's own choice (default_score_params()).
  p.alpha = Alpha::Uniform;
  return p;
}

ScoreParams default_score_params() {
  // Chosen on HotpotQA dev (300 questions, 50-d GloVe) by a coordinate search over k, lambda, the
  // title context and the two BM25 weights; confirmed on train (docs/spotlight.md).
  ScoreParams p;
  p.top_k = 1;
  p.lambda = 0.5;
  p.alpha = Alpha::Idf;
  p.title_context = true;
  p.lexical_weight = 0.5;
  p.paragraph_weight = 0.1;
  return p;
}

double apply_prior(double s, double rho) { return s - (1.0 - rho); }

std::vector<double> document_prior_from_relevance(const std::vector<double>& relevance) {
  if (relevance.empty()) return {};
  const auto [lo, hi] = std::minmax_element(relevance.begin(), relevance.end());
  std::vector<double> out;
  for (double r : relevance) out.push_back(*hi > *lo ? (r - *lo) / (*hi - *lo) : 1.0);
  return out;
}

namespace {

// Min-max normalisation to [0, 1]; all equal -> all 0.
std::vector<double> min_max(const std::vector<double>& v) {
  if (v.empty()) return v;
  double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  std::vector<double> out(v.size(), 0.0);
  if (hi > lo)
    for (size_t i = 0; i < v.size(); ++i) out[i] = (v[i] - lo) / (hi - lo);
  return out;
}

// A scored context token: its document, its index in the document's text (or title), its global
// sentence id and its prior factor rho_j.
struct Ref {
  int doc, tok, sent;
  double rho;
  bool title;
};

// The question and every document's text and title, encoded.
struct EncodedQuestion {
  EncodedText q;
  std::vector<EncodedText> d, dt;  // per document: text, title (no tokens without title context)
  const EncodedText& of(const Ref& r) const { return r.title ? dt[r.doc] : d[r.doc]; }
};

// The question, every passage and (with title context) every title in one call, so an encoder
// model batches them.
EncodedQuestion encode_question(TokenEncoder& enc, const std::string& question,
                                const std::vector<Document>& docs, bool title_context) {
  std::vector<std::string_view> texts{question};
  for (const Document& doc : docs) texts.push_back(doc.text);
  std::vector<size_t> title_at(docs.size(), 0);  // index into texts; 0 = no title
  if (title_context)
    for (size_t i = 0; i < docs.size(); ++i)
      if (!docs[i].title.empty()) {
        title_at[i] = texts.size();
        texts.push_back(docs[i].title);
      }
  std::vector<EncodedText> all = enc.encode_batch(texts);
  EncodedQuestion e;
  e.q = std::move(all[0]);
  e.d.reserve(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    e.d.push_back(std::move(all[i + 1]));
    e.dt.push_back(title_at[i] ? std::move(all[title_at[i]]) : EncodedText{});
  }
  return e;
}

// The context tokens that are scored, flattened over the documents, with the sentences they
// belong to.
struct ContextTokens {
  std::vector<Ref> refs;
  std::vector<std::pair<int, int>> sent_ids;  // global sentence -> (doc, sent)
  std::vector<size_t> cut;                    // bytes of each text that are scored
};

ContextTokens flatten_context(const EncodedQuestion& e, const std::vector<Document>& docs,
                              const ScoreParams& p) {
  if (!p.document_prior.empty() && p.document_prior.size() != docs.size())
    throw UsageError("spotlight", "the document prior has " +
                                      std::to_string(p.document_prior.size()) + " values for " +
                                      std::to_string(docs.size()) + " documents");
  ContextTokens ct;
  ct.cut.resize(docs.size());
  for (size_t di = 0; di < docs.size(); ++di) {
    const EncodedText& d = e.d[di];
    const auto& sents = docs[di].sentences;
    size_t n_tok = d.tokens.size();
    ct.cut[di] = docs[di].text.size();
    if (p.max_context_tokens > 0 && n_tok > size_t(p.max_context_tokens)) {
      n_tok = size_t(p.max_context_tokens);
      ct.cut[di] = d.tokens[n_tok].span.begin;  // section 3.6: truncated to N tokens
    }
    int base = static_cast<int>(ct.sent_ids.size());
    size_t n_kept = 0;
    for (size_t si = 0; si < sents.size() && sents[si].begin < ct.cut[di]; ++si) {
      ct.sent_ids.emplace_back(static_cast<int>(di), static_cast<int>(si));
      ++n_kept;
    }
    auto rho_of = [&](size_t si) {
      if (!p.document_prior.empty()) return (1.0 - p.lambda) + p.lambda * p.document_prior[di];
      double x = sents.size() > 1 ? double(si) / double(sents.size() - 1) : 0.0;
      return (1.0 - p.lambda) + p.lambda * p.prior(x);
    };
    size_t si = 0;
    for (size_t ti = 0; ti < n_tok; ++ti) {
      size_t b = d.tokens[ti].span.begin;
      while (si < sents.size() && b >= sents[si].end) ++si;
      if (si == sents.size() || si >= n_kept || b < sents[si].begin)
        continue;  // between sentences (e.g. a bullet marker)
      ct.refs.push_back({static_cast<int>(di), static_cast<int>(ti), base + static_cast<int>(si),
                         rho_of(si), false});
    }
    // With title context every kept sentence sees its paragraph's title tokens.
    for (size_t s2 = 0; s2 < n_kept; ++s2)
      for (size_t ti = 0; ti < e.dt[di].tokens.size(); ++ti)
        ct.refs.push_back({static_cast<int>(di), static_cast<int>(ti), base + static_cast<int>(s2),
                           rho_of(s2), true});
  }
  return ct;
}

// (5) with the prior: s^_ij = cos(h_qi, h_cj) - (1 - rho_j).
std::vector<std::vector<double>> prior_similarities(const EncodedQuestion& e,
                                                    const std::vector<Ref>& refs) {
  const EncodedText& q = e.q;
  const size_t nq = q.tokens.size(), nc = refs.size();
  std::vector<std::vector<double>> s(nq, std::vector<double>(nc));
  for (size_t i = 0; i < nq; ++i)
    for (size_t j = 0; j < nc; ++j) {
      const Ref& r = refs[j];
      const EncodedText& c = e.of(r);
      s[i][j] = apply_prior(token_similarity(q, q.tokens[i], c, c.tokens[r.tok]), r.rho);
    }
  return s;
}

// idf of each query token over the question's passages (keys present per passage, titles
// included): ln(1 + (N - df + 0.5) / (df + 0.5)).
std::vector<double> query_idf(const EncodedQuestion& e) {
  const size_t nq = e.q.tokens.size(), n_docs = e.d.size();
  std::vector<std::set<std::string>> keys(n_docs);
  for (size_t di = 0; di < n_docs; ++di) {
    for (const Token& t : e.d[di].tokens) keys[di].insert(t.key);
    for (const Token& t : e.dt[di].tokens) keys[di].insert(t.key);
  }
  const double N = static_cast<double>(n_docs);
  std::vector<double> idf(nq);
  for (size_t i = 0; i < nq; ++i) {
    double df = 0;
    for (const auto& k : keys) df += k.count(e.q.tokens[i].key) ? 1 : 0;
    idf[i] = std::log(1.0 + (N - df + 0.5) / (df + 0.5));
  }
  return idf;
}

// alpha (eq. 8): uniform, IDF normalised to sum 1, or the learned model (alpha.h).
std::vector<double> query_weights(const EncodedQuestion& e, const ScoreParams& p) {
  const size_t nq = e.q.tokens.size();
  std::vector<double> alpha(nq, nq ? 1.0 / nq : 0.0);
  if (p.alpha == Alpha::Uniform || nq == 0) return alpha;
  const std::vector<double> idf = query_idf(e);
  if (p.alpha == Alpha::Learned)
    return learned_alpha(query_token_features(e.q.tokens, idf), p.learned->weights);
  double z = 0;
  for (size_t i = 0; i < nq; ++i) z += (alpha[i] = idf[i]);
  if (z > 0)
    for (double& a : alpha) a /= z;
  return alpha;
}

// Table 3 "w/o fine-grained scorer": cosine of mean vectors (identity tokens ignored), with the
// sentence's prior.
std::vector<double> mean_vector_relevance(const EncodedQuestion& e, const std::vector<Ref>& refs,
                                          int n_sent) {
  const EncodedText& q = e.q;
  const int dim = q.dim;
  std::vector<double> qm(dim, 0.0);
  for (const Token& t : q.tokens)
    if (t.vec >= 0)
      for (int k = 0; k < dim; ++k) qm[k] += q.row(t.vec)[k];
  std::vector<std::vector<double>> sm(n_sent, std::vector<double>(dim, 0.0));
  std::vector<double> rho(n_sent, 1.0);
  for (const Ref& r : refs) {
    rho[r.sent] = r.rho;
    const EncodedText& c = e.of(r);
    const Token& t = c.tokens[r.tok];
    if (t.vec >= 0)
      for (int k = 0; k < dim; ++k) sm[r.sent][k] += c.row(t.vec)[k];
  }
  auto norm = [](const std::vector<double>& v) {
    double n = 0;
    for (double x : v) n += x * x;
    return std::sqrt(n);
  };
  std::vector<double> R(n_sent, 0.0);
  double nqm = norm(qm);
  for (int t = 0; t < n_sent; ++t) {
    double ns = norm(sm[t]), dot = 0;
    for (int k = 0; k < dim; ++k) dot += qm[k] * sm[t][k];
    R[t] = apply_prior((nqm > 0 && ns > 0) ? dot / (nqm * ns) : 0.0, rho[t]);
  }
  return R;
}

// Lexical evidence beside the late-interaction score (scoring.h): min-max normalised BM25 of each
// kept sentence over title + sentence, and of its paragraph over title + paragraph.
struct LexicalScores {
  std::vector<double> sentence, paragraph;  // [n_sent]
};

LexicalScores lexical_scores(const std::string& question, const std::vector<Document>& docs,
                             const ContextTokens& ct) {
  const std::vector<std::string> qt = bm25_terms(question);
  std::vector<std::vector<std::string>> st, pt;
  for (const auto& [di, si] : ct.sent_ids) {
    const Document& doc = docs[size_t(di)];
    const text::TextSpan sp = doc.sentences[size_t(si)];
    // A kept sentence starts before the cut; only its bytes before the cut count.
    std::string_view sv = std::string_view(doc.text).substr(
        sp.begin, std::min(sp.end, ct.cut[size_t(di)]) - sp.begin);
    st.push_back(bm25_terms(doc.title + " " + std::string(sv)));
  }
  for (size_t di = 0; di < docs.size(); ++di)
    pt.push_back(bm25_terms(docs[di].title + " " + docs[di].text.substr(0, ct.cut[di])));
  LexicalScores ls;
  ls.sentence = min_max(bm25_scores(qt, st));
  const std::vector<double> ps_doc = min_max(bm25_scores(qt, pt));
  for (const auto& ids : ct.sent_ids) ls.paragraph.push_back(ps_doc[size_t(ids.first)]);
  return ls;
}

bool blends_lexical(const ScoreParams& p) { return p.lexical_weight > 0 || p.paragraph_weight > 0; }

// R becomes a weighted sum of the min-max normalised R and the two BM25 scores.
void blend_lexical(std::vector<double>& R, const std::vector<double>& sentence,
                   const std::vector<double>& paragraph, const ScoreParams& p) {
  std::vector<double> rn = min_max(R);
  const double w = 1.0 - p.lexical_weight - p.paragraph_weight;
  for (size_t t = 0; t < R.size(); ++t)
    R[t] = w * rn[t] + p.lexical_weight * sentence[t] + p.paragraph_weight * paragraph[t];
}

// Each sentence's score, normalised score and match-matrix row (the best context token of the
// sentence's text for each query token).
std::vector<SentenceScore> sentence_scores(const EncodedQuestion& e, const ContextTokens& ct,
                                           const std::vector<std::vector<double>>& s,
                                           const std::vector<double>& R) {
  const int n_sent = static_cast<int>(ct.sent_ids.size());
  const size_t nq = e.q.tokens.size();
  double lo = n_sent ? *std::min_element(R.begin(), R.end()) : 0,
         hi = n_sent ? *std::max_element(R.begin(), R.end()) : 0;
  std::vector<std::vector<size_t>> members(n_sent);
  for (size_t j = 0; j < ct.refs.size(); ++j)
    if (!ct.refs[j].title) members[ct.refs[j].sent].push_back(j);  // the matrix shows text tokens
  std::vector<SentenceScore> out(n_sent);
  for (int t = 0; t < n_sent; ++t) {
    SentenceScore& ss = out[t];
    ss.doc = ct.sent_ids[t].first;
    ss.sent = ct.sent_ids[t].second;
    ss.R = R[t];
    ss.R_norm = hi > lo ? (R[t] - lo) / (hi - lo) : 1.0;
    for (size_t i = 0; i < nq && !members[t].empty(); ++i) {
      size_t best = members[t][0];
      for (size_t j : members[t])
        if (s[i][j] > s[i][best]) best = j;
      const Token& c = e.d[ct.refs[best].doc].tokens[ct.refs[best].tok];
      ss.matches.push_back({e.q.tokens[i].text, c.text, c.span, s[i][best]});
    }
  }
  return out;
}

void check_params(const ScoreParams& p) {
  if (p.max_context_tokens < 0) throw UsageError("spotlight", "max context tokens must be >= 0");
  if (!(p.lexical_weight >= 0 && p.paragraph_weight >= 0 &&
        p.lexical_weight + p.paragraph_weight <= 1))
    throw UsageError("spotlight", "lexical and paragraph weights must be >= 0 with sum <= 1");
  if (p.alpha == Alpha::Learned && !p.learned)
    throw UsageError("spotlight", "learned alpha without its model (set_alpha learned:FILE)");
}

std::vector<int> sentence_of(const ContextTokens& ct) {
  std::vector<int> out(ct.refs.size());
  for (size_t j = 0; j < ct.refs.size(); ++j) out[j] = ct.refs[j].sent;
  return out;
}

}  // namespace

void set_alpha(ScoreParams& p, const std::string& spec) {
  static const std::string learned = "learned:";
  if (spec == "idf" || spec == "uniform") {
    p.alpha = spec == "idf" ? Alpha::Idf : Alpha::Uniform;
    p.learned.reset();
  } else if (spec.rfind(learned, 0) == 0 && spec.size() > learned.size()) {
    p.learned = std::make_shared<const LearnedAlpha>(load_alpha_file(spec.substr(learned.size())));
    p.alpha = Alpha::Learned;
  } else {
    throw UsageError("--alpha", "must be idf, uniform or learned:FILE, got '" + spec + "'");
  }
}

std::string alpha_spec(const ScoreParams& p) {
  switch (p.alpha) {
    case Alpha::Uniform:
      return "uniform";
    case Alpha::Idf:
      return "idf";
    case Alpha::Learned:
      return "learned:" + (p.learned ? p.learned->source : std::string());
  }
  return "";
}

namespace {
void check_similarities(size_t query_tokens, size_t context_tokens) {
  if (query_tokens > 0 && context_tokens > kMaxSimilarities / query_tokens)
    throw UsageError("spotlight",
                     "a question of " + std::to_string(query_tokens) + " tokens over " +
                         std::to_string(context_tokens) + " context tokens is " +
                         std::to_string(query_tokens * context_tokens) +
                         " token pairs to score, more than the limit of " +
                         std::to_string(kMaxSimilarities) +
                         " for one question: shorten the question or give fewer sentences");
}
}  // namespace

ScoredQuestion score_question(TokenEncoder& enc, const std::string& question,
                              const std::vector<Document>& docs, const ScoreParams& p) {
  check_params(p);
  const EncodedQuestion e = encode_question(enc, question, docs, p.title_context);
  ScoredQuestion out;
  out.words = e.q.words;
  out.oov = e.q.oov;
  out.query_tokens = e.q.tokens.size();
  for (const EncodedText& d : e.d) {
    out.words += d.words;
    out.oov += d.oov;
  }
  const ContextTokens ct = flatten_context(e, docs, p);
  check_similarities(e.q.tokens.size(), ct.refs.size());
  out.context_tokens = ct.refs.size();
  const int n_sent = static_cast<int>(ct.sent_ids.size());

  const std::vector<std::vector<double>> s = prior_similarities(e, ct.refs);
  const std::vector<double> alpha = query_weights(e, p);
  std::vector<double> R;
  if (p.scorer == Scorer::FineGrained)
    R = sentence_relevance(s, sentence_of(ct), n_sent, alpha, p.top_k, p.weighting);
  else
    R = mean_vector_relevance(e, ct.refs, n_sent);
  if (n_sent > 0 && blends_lexical(p)) {
    const LexicalScores ls = lexical_scores(question, docs, ct);
    blend_lexical(R, ls.sentence, ls.paragraph, p);
  }
  out.sentences = sentence_scores(e, ct, s, R);
  return out;
}

AlphaTerms alpha_terms(TokenEncoder& enc, const std::string& question,
                       const std::vector<Document>& docs, const ScoreParams& p) {
  check_params(p);
  if (p.scorer != Scorer::FineGrained)
    throw UsageError("spotlight", "alpha weighs the fine-grained scorer only (eq. 8)");
  const EncodedQuestion e = encode_question(enc, question, docs, p.title_context);
  const ContextTokens ct = flatten_context(e, docs, p);
  check_similarities(e.q.tokens.size(), ct.refs.size());
  const int n_sent = static_cast<int>(ct.sent_ids.size());
  AlphaTerms t;
  t.sums =
      top_k_sums(prior_similarities(e, ct.refs), sentence_of(ct), n_sent, p.top_k, p.weighting);
  t.idf = query_idf(e);
  t.features = query_token_features(e.q.tokens, t.idf);
  t.sent_ids = ct.sent_ids;
  if (n_sent > 0 && blends_lexical(p)) {
    LexicalScores ls = lexical_scores(question, docs, ct);
    t.lexical = std::move(ls.sentence);
    t.paragraph = std::move(ls.paragraph);
  }
  return t;
}

std::vector<double> relevance_for_alpha(const AlphaTerms& t, const std::vector<double>& alpha,
                                        const ScoreParams& p) {
  std::vector<double> R = weighted_relevance(t.sums, alpha, p.top_k);
  R.resize(t.sent_ids.size(), 0.0);  // no query token: every sentence scores 0
  if (!t.lexical.empty()) blend_lexical(R, t.lexical, t.paragraph, p);
  return R;
}

}  // namespace ragform::spotlight

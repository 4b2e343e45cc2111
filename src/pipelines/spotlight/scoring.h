// SpotlightRAG fine-grained scoring (paper section 3.3-3.4, equations 3-8).
//
//   s_ij      = cos(h_qi, h_cj)                                        (5)
//   w_j       = exp(max_i s_ij) / sum_k exp(max_i s_ik)                 (6)  k over ALL context
//               tokens of the question (every passage), so R is comparable across passages
//   TopAvg_t(q_i) = (1/k) * sum_{c_j in T_k(q_i, t)} s_ij * w_j         (7)  T_k = the k tokens of
//               sentence t with the largest s_ij; divided by k even when t has fewer than k tokens
//               (as written: short sentences are not inflated)
//   R(t)      = sum_i alpha_i * TopAvg_t(q_i)                           (8)
//   alpha_i   = 1/n (Alpha::Uniform, the paper's fallback and paper_score_params()'s) or
//               IDF-weighted (Alpha::Idf, ragform's default):
//               idf(q_i) = ln(1 + (N - df + 0.5) / (df + 0.5)) with N = passages of the question
//               and df = passages containing q_i's key, normalised to sum to 1; or learned
//               (Alpha::Learned, alpha.h): a log-linear model over features of the query token,
//               fitted on HotpotQA train labels, in place of the paper's ColBERT-style module.
//
// Equations 3-4 (h = E(x) + p) are ambiguous: p is an unspecified vector "encoding sentence or
// document position", and adding the same vector to every token of a passage would shift all its
// cosines in an uncontrolled, encoder-dependent way (and the query has no document position). We
// read them as what the text says p is *for* — "early or concluding segments receive stronger
// inductive bias" — and implement the prior as a penalty on every similarity of a context token,
// so it flows through (5)-(8) exactly:
//   s^_ij = s_ij - (1 - rho_j),   rho_j = (1 - lambda) + lambda * pi(x_j)
// where x_j = sentence index / (sentences in the document - 1) (0 for a one-sentence document)
// is the relative position of c_j's sentence, and pi is the piecewise-linear shape of Figure 1(a):
//   pi(x) = 1 for x <= head (0.2);  declines linearly from 1 to mid_floor (0.5) over the middle;
//   = tail_level (0.75) for x >= 1 - tail (0.2)  (the partial rebound).
// The penalty equals the product s_ij * rho_j at s_ij = 1, but unlike the product it lowers every
// similarity by the same amount whatever its sign: a product with rho < 1 would *raise* a negative
// cosine and so favour mid-document sentences, the opposite of the prior.
// lambda = 0 gives the plain equations (5)-(8); the paper's Table 4 tries 0, 0.5 (its best), 1.
//
// Document prior instead of the positional one (ScoreParams::document_prior): pi(x_j) is replaced
// by a per-document value in [0, 1], the document's relevance as the reader's attention gives it
// (calibrated_prior.h: calibrated attention, min-max normalised over the question's documents),
// so rho_j = (1 - lambda) + lambda * prior[d] for every token of document d: the fixed shape
// assumes where evidence sits in a document, the calibrated one measures which document holds it.
//
// Ablations of Table 3. "w/o fine-grained scorer": Scorer::MeanVector, R = cos(mean query vector,
// mean sentence vector) - (1 - rho), identity tokens ignored. "w/o importance weighting" has two
// readings, both available and named for what they change: Alpha::Uniform (alpha_i = 1/n, the
// query tokens' "importance weights" of eq. 8, the paper's own name) and Weighting::Uniform
// (w_j = 1/|C|, the context tokens' relevance weights of eq. 6).
//
// Beyond the paper (the default ranker of `spotlight select`, docs/spotlight.md; all off in
// ScoreParams{} and under --paper-defaults):
//  - max_context_tokens: each context is cut after its first N encoder tokens (section 3.6: "each
//    context is truncated to 512 tokens"); sentences starting after the cut are not scored, a
//    sentence the cut passes through keeps its first tokens.
//  - title_context: the tokens of a context's title are context tokens of each of its sentences
//    (a HotpotQA sentence often never names the entity its paragraph is about).
//  - lexical_weight L and paragraph_weight P: the late-interaction R is min-max normalised over
//    the question's sentences and mixed with two min-max normalised BM25 scores (lexical.h):
//    of the sentence with its title ("title sentence"), and of its whole paragraph with its title
//    (over the question's paragraphs):  R' = (1 - L - P) R_n + L BM25_sentence,n + P BM25_par,n.
//    BM25 brings the term saturation and length normalisation static vectors lack.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "pipelines/spotlight/alpha.h"
#include "pipelines/spotlight/encoder.h"

namespace ragform::spotlight {

struct PositionalPrior {
  double head = 0.2, tail = 0.2, mid_floor = 0.5, tail_level = 0.75;
  double operator()(double x) const;  // pi(x), x in [0,1]
};

enum class Weighting { Softmax, Uniform };
enum class Scorer { FineGrained, MeanVector };

// The defaults here are the paper's (section 3.6, Table 4) except alpha, which is IDF here and
// uniform in paper_score_params(); the CLI's defaults are in default_score_params().
struct ScoreParams {
  int top_k = 5;        // k of equation (7)
  double lambda = 0.5;  // positional prior weight
  PositionalPrior prior;
  Alpha alpha = Alpha::Idf;
  std::shared_ptr<const LearnedAlpha> learned;  // the model of Alpha::Learned
  Weighting weighting = Weighting::Softmax;
  Scorer scorer = Scorer::FineGrained;
  int max_context_tokens = 0;  // 0 = whole contexts
  bool title_context = false;
  double lexical_weight = 0, paragraph_weight = 0;
  // Per document of the question, in [0, 1]: replaces the positional prior pi (see above);
  // empty = the positional prior. Set per question (it has one value per document).
  std::vector<double> document_prior;
};

// Relevance values (any scale) to a document prior in [0, 1]: min-max normalised, all 1 when they
// are all equal.
std::vector<double> document_prior_from_relevance(const std::vector<double>& relevance);

// The paper's settings (k = 5, lambda = 0.5, alpha uniform = 1/n, contexts cut at 512 tokens):
// what --paper-defaults and `reproduce spotlight` select. Alpha is the paper's stated fallback
// (section 3.4), not IDF, which the paper never names: --paper-defaults gives the same selections
// as --paper-defaults --alpha uniform.
ScoreParams paper_score_params();
// What `spotlight select` / `spotlight eval` use with no flags (chosen on HotpotQA dev,
// docs/spotlight.md).
ScoreParams default_score_params();

// --alpha SPEC: "idf", "uniform" or "learned:FILE" (an alpha file, alpha.h, loaded and
// validated here). Sets p.alpha and p.learned; UsageError for another spec. The one parser of
// the flag: every front end that takes an alpha spec should call it.
void set_alpha(ScoreParams& p, const std::string& spec);
// The spec of p's alpha: "idf", "uniform" or "learned:FILE".
std::string alpha_spec(const ScoreParams& p);

// The prior-weighted similarity s^ = s - (1 - rho) (see above).
double apply_prior(double s, double rho);

// One passage with its sentences as byte spans of `text` (given by the data or by
// text::split_sentences).
struct Document {
  std::string id, title, text;
  std::vector<text::TextSpan> sentences;
};

// A query token's best match inside one sentence (the match matrix row).
struct Match {
  std::string q, c;       // surface forms
  text::TextSpan c_span;  // bytes of c in its document's text
  double s = 0;           // s^_ij of the pair
};

struct SentenceScore {
  int doc = 0, sent = 0;
  double R = 0;                // equation (8) (with the prior folded into s^)
  double R_norm = 0;           // min-max normalised over the question's sentences, in [0,1]
  std::vector<Match> matches;  // one per query token (query order), best context token
};

struct ScoredQuestion {
  std::vector<SentenceScore> sentences;  // every scored sentence, document order
  size_t words = 0, oov = 0;             // encoder statistics over query + contexts
  size_t query_tokens = 0, context_tokens = 0;
};

// The pure equations over a precomputed similarity matrix, for tests and ablations.
// s: [n_q][n_c] (already prior-weighted), sentence_of: [n_c] in 0..n_sent-1, alpha: [n_q].
// Returns R per sentence; w (if given) receives equation (6)'s weights.
std::vector<double> sentence_relevance(const std::vector<std::vector<double>>& s,
                                       const std::vector<int>& sentence_of, int n_sent,
                                       const std::vector<double>& alpha, int top_k,
                                       Weighting weighting, std::vector<double>* w = nullptr);

// Eq. (7) before its division by k: sums[i][t] = sum_{c_j in T_k(q_i, t)} s_ij * w_j,
// [n_q][n_sent].
std::vector<std::vector<double>> top_k_sums(const std::vector<std::vector<double>>& s,
                                            const std::vector<int>& sentence_of, int n_sent,
                                            int top_k, Weighting weighting,
                                            std::vector<double>* w = nullptr);
// Eq. (8) from those sums: R(t) = sum_i alpha_i * sums[i][t] / k (sentence_relevance's
// arithmetic, term for term).
std::vector<double> weighted_relevance(const std::vector<std::vector<double>>& sums,
                                       const std::vector<double>& alpha, int top_k);

// Everything R of a question depends on except alpha, for fitting alpha (train_alpha.h): eq. (8)
// is linear in alpha, and the lexical blend only rescales R, so R for any alpha follows from these
// without encoding the question again. Fine-grained scorer only.
struct AlphaTerms {
  std::vector<std::vector<double>> sums;      // [n_q][n_sent] top_k_sums
  std::vector<double> idf;                    // [n_q] as Alpha::Idf, before normalising
  std::vector<TokenFeatures> features;        // [n_q] alpha.h
  std::vector<std::pair<int, int>> sent_ids;  // [n_sent] (doc, sentence) of each scored sentence
  std::vector<double> lexical, paragraph;     // [n_sent] min-max normalised BM25 (empty: no blend)
};
AlphaTerms alpha_terms(TokenEncoder& enc, const std::string& question,
                       const std::vector<Document>& docs, const ScoreParams& p);
// R of every scored sentence for `alpha`: what score_question gives with that alpha.
std::vector<double> relevance_for_alpha(const AlphaTerms& t, const std::vector<double>& alpha,
                                        const ScoreParams& p);

// Similarity of two encoded tokens: cosine of their vectors; identity tokens (no vector) are 1
// to an identity token with the same key, else 0.
double token_similarity(const EncodedText& a, const Token& ta, const EncodedText& b,
                        const Token& tb);

// The most query tokens x context tokens one question may score: the similarity matrix of eq. (5)
// holds one double per pair and each sentence keeps a match per query token, so a long question
// over many sentences grew without bound (issue 40, fourth pass: an 8,000-word question over 960
// sentences took 809 MB; 1 MiB of request would have asked for 100 GB). 2^22 (32 MiB of matrix)
// is ~100 times a retrieval prompt's (a 20-token question over 20 passages of 100 words: 40,000).
inline constexpr size_t kMaxSimilarities = size_t(1) << 22;

// Encodes question and documents and scores every sentence. UsageError, before the matrix is
// built, when query tokens x context tokens exceed kMaxSimilarities.
ScoredQuestion score_question(TokenEncoder& enc, const std::string& question,
                              const std::vector<Document>& docs, const ScoreParams& p);

}  // namespace ragform::spotlight

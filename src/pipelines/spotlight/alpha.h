// SpotlightRAG's query-token importance weights alpha_i (eq. 8): uniform, IDF, or learned — a
// small model over features of each query token, fitted on HotpotQA supporting-fact labels by
// `ragform spotlight train-alpha` (train_alpha.h). The paper's alpha comes from a ColBERT-style
// neural module; we have no trained late-interaction encoder, so the learned alpha is a
// log-linear model over token features instead (docs/spotlight.md).
//
// Model "softmax-linear": alpha_i = exp(w . f_i) / sum_j exp(w . f_j) over the query's tokens.
// w = 0 gives alpha_i = 1/n exactly (Alpha::Uniform); w = 1 on log_idf and 0 elsewhere gives
// alpha_i = idf_i / sum_j idf_j (Alpha::Idf, up to rounding): both fixed weightings are points of
// the model, so a fit that starts at IDF can only match or improve it on the data it fits.
//
// Features f_i of query token i of n (the encoder's tokens of the question):
//   log_idf      ln idf_i, idf_i = ln(1 + (N - df + 0.5) / (df + 0.5)) as Alpha::Idf (scoring.h)
//   position     i / (n - 1), 0 for a one-token query
//   stop_word    the token's lowercased, punctuation-stripped form is one of Lucene's 33 English
//                stop words (the set retrieval/ drops from BM25 queries)
//   wh_word      that form is a question word: what which who whom whose when where why how
//   capitalised  the token starts with an ASCII capital and is not the query's first token
//   temporal     the sentence tagger of select.h, run on the token alone, says temporal (a year,
//                a month or weekday name, century, BC/AD, ...)
//   numeric      the tagger says numeric (another digit, hundred/thousand/million, percent)
//   oov          the token has no vector (an identity token, encoder.h)
//
// File (JSON; docs/spotlight.md "Learned alpha"):
//   {"format": "ragform-spotlight-alpha", "version": 1, "model": "softmax-linear",
//    "features": ["log_idf", "position", ...], "weights": [1.0, 0.25, ...], "training": {...}}
// "features" names each feature at most once, in any order (a feature left out has weight 0);
// "weights" holds one finite number per feature; "training" (what train-alpha recorded: input
// hash, seed, recall) is kept but not interpreted. Anything else is an Error
// "FILE:LINE: <why>" (LINE: where the offending field starts).
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/spotlight/encoder.h"

namespace ragform::spotlight {

enum class Alpha { Uniform, Idf, Learned };

inline constexpr size_t kAlphaFeatures = 8;
using AlphaWeights = std::array<double, kAlphaFeatures>;  // w, in the order of the names below
using TokenFeatures = std::array<double, kAlphaFeatures>;

// "log_idf", "position", "stop_word", "wh_word", "capitalised", "temporal", "numeric", "oov".
const std::array<const char*, kAlphaFeatures>& alpha_feature_names();

// The weights that reproduce Alpha::Idf (1 on log_idf).
AlphaWeights idf_alpha_weights();

struct LearnedAlpha {
  AlphaWeights weights{};
  std::string source;  // the file it was read from ("" when built in memory)
  std::string sha256;  // of the file's bytes: part of a run's identity (run.h)
  nlohmann::json training = nlohmann::json::object();
};

// f_i of every query token (see above); idf: [n] as computed for Alpha::Idf.
std::vector<TokenFeatures> query_token_features(const std::vector<Token>& query,
                                                const std::vector<double>& idf);

// alpha of the model (see above) for tokens with these features; sums to 1 (empty for none).
std::vector<double> learned_alpha(const std::vector<TokenFeatures>& features,
                                  const AlphaWeights& w);

// The alpha file's text for `w` (every feature, fixed order) with a "training" object: the same
// weights and training give the same bytes.
std::string alpha_file_text(const AlphaWeights& w, const nlohmann::json& training);

// A training question's key in the alpha file's "training" object ("question_keys"): the first 16
// hex digits of the SHA-256 of the question under normalize_answer (case, punctuation, articles
// and spacing do not tell copies apart). `spotlight eval --alpha learned:FILE` leaves out the
// questions whose key the file lists, so a learned alpha is never measured on what it was fitted
// to (as tune drops held-out records that are also dev records, tune/run.h drop_dev_overlap).
std::string alpha_question_key(std::string_view question);
// The keys an alpha file's training object lists, sorted and unique (empty for a file written
// before they were).
std::vector<std::string> alpha_training_keys(const nlohmann::json& training);

// Parses and validates an alpha file's text; `name` (the path) prefixes errors.
LearnedAlpha parse_alpha_file(std::string_view text, const std::string& name);
// Reads `path` (FileError when unreadable), validates it and records its SHA-256.
LearnedAlpha load_alpha_file(const std::string& path);

}  // namespace ragform::spotlight

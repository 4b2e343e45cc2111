// Learned query-token weights: features, the softmax-linear model and its file (see alpha.h).
#include "pipelines/spotlight/alpha.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/json_file.h"
#include "base/json_keys.h"
#include "base/mapped_file.h"
#include "pipelines/spotlight/select.h"
#include "store/sha256.h"
#include "text/normalize.h"

namespace ragform::spotlight {

namespace {

constexpr const char* kFormat = "ragform-spotlight-alpha";
constexpr int kVersion = 1;
constexpr const char* kModel = "softmax-linear";

// Lucene's English stop set (EnglishAnalyzer), as retrieval/bm25_index.h drops from queries.
constexpr const char* kStopWords[] = {
    "a",   "an",    "and",  "are",   "as",    "at",   "be",   "but", "by",  "for",  "if",
    "in",  "into",  "is",   "it",    "no",    "not",  "of",   "on",  "or",  "such", "that",
    "the", "their", "then", "there", "these", "they", "this", "to",  "was", "will", "with"};
constexpr const char* kWhWords[] = {"what", "which", "who", "whom", "whose",
                                    "when", "where", "why", "how"};

template <size_t N>
bool one_of(const std::string& w, const char* const (&set)[N]) {
  return std::any_of(std::begin(set), std::end(set), [&](const char* s) { return w == s; });
}

// The lowercased, punctuation-stripped form of a token (encoder.h's step-3 key), whatever the
// encoder: hidden-state pieces have no such key of their own.
std::string plain_form(const std::string& text) {
  const std::vector<std::string> keys = word_keys(text);
  return keys.empty() ? std::string() : keys.back();
}

// 1-based line of the first `"key":` in `text` (1 when absent): where a bad field starts.
size_t line_of_key(std::string_view text, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  for (size_t at = text.find(quoted); at != std::string_view::npos;
       at = text.find(quoted, at + 1)) {
    size_t after = text.find_first_not_of(" \t\r\n", at + quoted.size());
    if (after == std::string_view::npos || text[after] != ':') continue;
    return size_t(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n')) + 1;
  }
  return 1;
}

}  // namespace

const std::array<const char*, kAlphaFeatures>& alpha_feature_names() {
  static const std::array<const char*, kAlphaFeatures> names = {
      "log_idf", "position", "stop_word", "wh_word", "capitalised", "temporal", "numeric", "oov"};
  return names;
}

AlphaWeights idf_alpha_weights() {
  AlphaWeights w{};
  w[0] = 1.0;
  return w;
}

std::vector<TokenFeatures> query_token_features(const std::vector<Token>& query,
                                                const std::vector<double>& idf) {
  if (idf.size() != query.size())
    throw Error("spotlight", "idf has " + std::to_string(idf.size()) + " entries for " +
                                 std::to_string(query.size()) + " query tokens");
  const size_t n = query.size();
  std::vector<TokenFeatures> out(n);
  for (size_t i = 0; i < n; ++i) {
    const Token& t = query[i];
    const std::string form = plain_form(t.text);
    const std::string category = categorize(t.text);
    const bool capital = !t.text.empty() && std::isupper(static_cast<unsigned char>(t.text[0]));
    out[i] = {std::log(idf[i]),
              n > 1 ? double(i) / double(n - 1) : 0.0,
              one_of(form, kStopWords) ? 1.0 : 0.0,
              one_of(form, kWhWords) ? 1.0 : 0.0,
              capital && i > 0 ? 1.0 : 0.0,
              category == "temporal" ? 1.0 : 0.0,
              category == "numeric" ? 1.0 : 0.0,
              t.vec < 0 ? 1.0 : 0.0};
  }
  return out;
}

std::vector<double> learned_alpha(const std::vector<TokenFeatures>& features,
                                  const AlphaWeights& w) {
  const size_t n = features.size();
  std::vector<double> logit(n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < kAlphaFeatures; ++k) logit[i] += w[k] * features[i][k];
  if (n == 0) return logit;
  // Shifted by the largest logit so exp never overflows; w = 0 still gives exactly 1/n.
  const double mx = *std::max_element(logit.begin(), logit.end());
  double z = 0;
  for (double& l : logit) z += (l = std::exp(l - mx));
  for (double& l : logit) l /= z;
  return logit;
}

std::string alpha_file_text(const AlphaWeights& w, const nlohmann::json& training) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["model"] = kModel;
  j["features"] = alpha_feature_names();
  j["weights"] = w;
  j["training"] = training;
  return j.dump(2) + "\n";
}

LearnedAlpha parse_alpha_file(std::string_view text, const std::string& name) {
  nlohmann::json j;
  try {
    j = parse_json_text(text);
  } catch (const JsonTextError& e) {
    throw Error(name + ":" + std::to_string(e.line()),
                "alpha file is not valid JSON: " + e.without_line());
  }
  auto fail = [&](const std::string& key, const std::string& why) {
    throw Error(name + ":" + std::to_string(line_of_key(text, key)), why);
  };
  if (!j.is_object()) throw Error(name + ":1", "an alpha file is a JSON object");
  // What alpha_file_text and train-alpha's training record write, a null key read as absent
  // (base/json_keys.h; pass 20: a misspelt "question_keys" left the training questions in the
  // evaluation without a word). An error of the file, as its other faults are.
  j = without_nulls(j);
  const auto known = [&](const nlohmann::json& o, std::initializer_list<const char*> keys,
                         const std::string& noun) {
    only_json_keys(o, keys, name, noun, KeyFault::runtime);
  };
  known(j, {"format", "version", "model", "features", "weights", "training"}, "an alpha file");
  for (const char* key : {"format", "version", "model", "features", "weights"})
    if (!j.contains(key)) fail(key, std::string("alpha file has no '") + key + "' field");
  if (j["format"] != kFormat) fail("format", std::string("'format' must be \"") + kFormat + "\"");
  if (!j["version"].is_number_integer() || j["version"].get<int64_t>() != kVersion)
    fail("version", "'version' is " + json_excerpt(j["version"]) + ", this ragform reads version " +
                        std::to_string(kVersion));
  if (j["model"] != kModel) fail("model", std::string("'model' must be \"") + kModel + "\"");
  const nlohmann::json& feats = j["features"];
  const nlohmann::json& ws = j["weights"];
  if (!feats.is_array()) fail("features", "'features' must be an array of feature names");
  if (!ws.is_array()) fail("weights", "'weights' must be an array of numbers");
  if (feats.size() != ws.size())
    fail("weights", "'weights' has " + std::to_string(ws.size()) + " numbers for " +
                        std::to_string(feats.size()) + " features");
  LearnedAlpha a;
  std::array<bool, kAlphaFeatures> seen{};
  const auto& names = alpha_feature_names();
  for (size_t i = 0; i < feats.size(); ++i) {
    const std::string f =
        feats[i].is_string() ? feats[i].get<std::string>() : json_excerpt(feats[i]);
    auto it = std::find_if(names.begin(), names.end(), [&](const char* n) { return f == n; });
    if (it == names.end()) fail("features", "unknown feature '" + excerpt(f) + "'");
    const size_t k = size_t(it - names.begin());
    if (seen[k]) fail("features", "feature '" + f + "' is listed twice");
    seen[k] = true;
    if (!ws[i].is_number() || !std::isfinite(ws[i].get<double>()))
      fail("weights", "weight " + std::to_string(i + 1) + " ('" + f + "') is " +
                          json_excerpt(ws[i]) + ", not a finite number");
    a.weights[k] = ws[i].get<double>();
  }
  if (j.contains("training")) {
    const nlohmann::json t = without_nulls(j["training"]);
    if (!t.is_object()) fail("training", "'training' must be an object");
    known(t,
          {"input", "input_sha256", "questions", "skipped", "encoder", "vectors_sha256",
           "score_params", "objective", "seed", "passes", "evaluations", "recall", "idf_recall",
           "uniform_recall", "question_keys"},
          "an alpha file's 'training'");
    if (t.contains("question_keys")) {
      bool strings = t["question_keys"].is_array();
      for (const auto& k : strings ? t["question_keys"] : nlohmann::json::array())
        strings = strings && k.is_string();
      if (!strings) fail("question_keys", "'question_keys' must be an array of strings");
    }
    a.training = t;
  }
  a.source = name;
  return a;
}

std::string alpha_question_key(std::string_view question) {
  return store::sha256_hex(text::normalize_answer(question)).substr(0, 16);
}

std::vector<std::string> alpha_training_keys(const nlohmann::json& training) {
  std::vector<std::string> out;
  if (!training.is_object() || !training.contains("question_keys") ||
      !training["question_keys"].is_array())
    return out;
  for (const auto& k : training["question_keys"])
    if (k.is_string()) out.push_back(k.get<std::string>());
  // Sorted for the binary searches of its callers, whatever order the file holds (pass 20: keys in
  // another order than train-alpha writes them left every training question in the evaluation).
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

LearnedAlpha load_alpha_file(const std::string& path) {
  const std::string text = read_file_bytes(path, kMaxTextFileBytes, "alpha file");
  LearnedAlpha a = parse_alpha_file(text, path);
  a.sha256 = store::sha256_hex(text);
  return a;
}

}  // namespace ragform::spotlight

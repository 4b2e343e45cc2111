// SpotlightRAG's learned query-token weights (alpha.h, train_alpha.h): the model contains uniform
// and IDF weighting, the features are what they say, the alpha file is validated, the fit is
// deterministic and improves on IDF when IDF is wrong, and a learned alpha enters the identity of
// a stored eval run.
#include <cmath>

#include <gtest/gtest.h>

#include "base/error.h"
#include "pipelines/spotlight/alpha.h"
#include "pipelines/spotlight/run.h"
#include "pipelines/spotlight/scoring.h"
#include "pipelines/spotlight/train_alpha.h"
#include "store/sha256.h"
#include "support/test_support.h"

namespace ragform::spotlight {
namespace {

WordVectors vectors() {
  const float r = static_cast<float>(1 / std::sqrt(2.0));
  return WordVectors::from_map({{"which", {1, 0, 0}},
                                {"city", {0, 1, 0}},
                                {"town", {0, r, r}},
                                {"the", {r, 0, r}},
                                {"river", {0, 0, 1}},
                                {"in", {r, r, 0}}});
}

std::vector<Document> documents() {
  return {{"d0", "Tulsa", "The city is in Oklahoma. The river runs in 1998.", {{0, 24}, {25, 49}}},
          {"d1", "Paris", "Which town? The Seine river.", {{0, 11}, {12, 28}}},
          {"d2", "", "Nothing here at all.", {{0, 20}}}};
}

const char* kQuestion = "Which city in Tulsa has the river of 1998 and 5 Zorbs?";

ScoreParams with_learned(ScoreParams p, const AlphaWeights& w) {
  auto a = std::make_shared<LearnedAlpha>();
  a->weights = w;
  p.alpha = Alpha::Learned;
  p.learned = a;
  return p;
}

// Every parameter set the scorer has: the paper's and the CLI's defaults (lexical blend on).
std::vector<ScoreParams> settings() { return {paper_score_params(), default_score_params()}; }

TEST(SpotlightAlpha, ZeroWeightsReproduceUniformExactly) {
  WordVectors v = vectors();
  StaticEncoder enc(v);
  for (ScoreParams base : settings()) {
    base.alpha = Alpha::Uniform;
    const ScoredQuestion u = score_question(enc, kQuestion, documents(), base);
    const ScoredQuestion l = score_question(enc, kQuestion, documents(), with_learned(base, {}));
    ASSERT_EQ(u.sentences.size(), l.sentences.size());
    for (size_t t = 0; t < u.sentences.size(); ++t) {
      EXPECT_EQ(u.sentences[t].R, l.sentences[t].R) << t;  // bit for bit, not near
      EXPECT_EQ(u.sentences[t].R_norm, l.sentences[t].R_norm) << t;
    }
  }
  // The model alone: w = 0 is 1/n for any features.
  const std::vector<TokenFeatures> f = {{3, 0, 1, 0, 0, 1, 0, 1}, {0.5, 1, 0, 1, 1, 0, 1, 0}, {}};
  for (double a : learned_alpha(f, {})) EXPECT_EQ(a, 1.0 / 3);
}

TEST(SpotlightAlpha, IdfWeightsReproduceIdf) {
  WordVectors v = vectors();
  StaticEncoder enc(v);
  for (ScoreParams base : settings()) {
    base.alpha = Alpha::Idf;
    const ScoredQuestion i = score_question(enc, kQuestion, documents(), base);
    const ScoredQuestion l =
        score_question(enc, kQuestion, documents(), with_learned(base, idf_alpha_weights()));
    ASSERT_EQ(i.sentences.size(), l.sentences.size());
    for (size_t t = 0; t < i.sentences.size(); ++t)
      EXPECT_NEAR(i.sentences[t].R, l.sentences[t].R, 1e-12) << t;
  }
}

TEST(SpotlightAlpha, TokenFeatures) {
  WordVectors v = vectors();
  StaticEncoder enc(v);
  const EncodedText q = enc.encode("Which city, the 1998 Paris of 5 Zorbs?");
  ASSERT_EQ(q.tokens.size(), 8u);
  std::vector<double> idf{1, 2, 0.5, 1, 1, 1, 1, std::exp(1.0)};
  const std::vector<TokenFeatures> f = query_token_features(q.tokens, idf);
  // log_idf, position, stop, wh, capitalised, temporal, numeric, oov
  EXPECT_EQ(f[0], (TokenFeatures{0, 0, 0, 1, 0, 0, 0, 0}));                    // Which: first word
  EXPECT_NEAR(f[1][0], std::log(2.0), 1e-15);                                  // city,
  EXPECT_EQ(f[1][1], 1.0 / 7);                                                 // position
  EXPECT_EQ(f[2], (TokenFeatures{std::log(0.5), 2.0 / 7, 1, 0, 0, 0, 0, 0}));  // the
  EXPECT_EQ(f[3][5], 1.0);                                                     // 1998: temporal
  EXPECT_EQ(f[3][6], 0.0);
  EXPECT_EQ(f[3][7], 1.0);  // not in the vocabulary
  EXPECT_EQ(f[4][4], 1.0);  // Paris: capitalised, not first
  EXPECT_EQ(f[5][2], 1.0);  // of: stop word
  EXPECT_EQ(f[6][6], 1.0);  // 5: numeric
  EXPECT_EQ(f[6][5], 0.0);
  EXPECT_EQ(f[7], (TokenFeatures{1, 1, 0, 0, 1, 0, 0, 1}));  // Zorbs?: last, capitalised, OOV
  EXPECT_THROW(query_token_features(q.tokens, {1.0}), Error);
}

TEST(SpotlightAlpha, FileRoundTripAndHash) {
  AlphaWeights w{1.5, -0.25, -1, 0.125, 0, 2, -3, 0.75};
  const std::string text = alpha_file_text(w, {{"seed", 3}});
  EXPECT_EQ(text, alpha_file_text(w, {{"seed", 3}}));
  const auto path = ragform::testing::temp_dir("spotlight-alpha") / "a.json";
  ragform::testing::write_file(path, text);
  const LearnedAlpha a = load_alpha_file(path.string());
  EXPECT_EQ(a.weights, w);
  EXPECT_EQ(a.sha256, store::sha256_hex(text));
  EXPECT_EQ(a.training["seed"], 3);
  ScoreParams p;
  set_alpha(p, "learned:" + path.string());
  EXPECT_EQ(p.alpha, Alpha::Learned);
  ASSERT_TRUE(p.learned);
  EXPECT_EQ(p.learned->weights, w);
  EXPECT_EQ(alpha_spec(p), "learned:" + path.string());
  set_alpha(p, "uniform");
  EXPECT_EQ(p.alpha, Alpha::Uniform);
  EXPECT_FALSE(p.learned);
  // A subset of the features in another order: the rest weigh 0.
  const LearnedAlpha b = parse_alpha_file(
      R"({"format": "ragform-spotlight-alpha", "version": 1, "model": "softmax-linear",
          "features": ["oov", "log_idf"], "weights": [2, 0.5]})",
      "b.json");
  EXPECT_EQ(b.weights, (AlphaWeights{0.5, 0, 0, 0, 0, 0, 0, 2}));
}

// The message of the Error parse_alpha_file throws for `text`.
std::string alpha_error(const std::string& text) {
  try {
    parse_alpha_file(text, "bad.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SpotlightAlpha, MalformedFileIsAClearError) {
  const std::string head = "{\n\"format\": \"ragform-spotlight-alpha\",\n\"version\": 1,\n";
  const std::string model = "\"model\": \"softmax-linear\",\n";
  const std::string ok_tail = "\"features\": [\"log_idf\"],\n\"weights\": [1]\n}";
  ASSERT_EQ(alpha_error(head + model + ok_tail), "(no error)");
  EXPECT_EQ(alpha_error("{\"format\": "),
            "bad.json:1: alpha file is not valid JSON: parse error at "
            "column 12: syntax error while parsing value - "
            "unexpected end of input; expected '[', '{', or a "
            "literal")
      << "the JSON error keeps its position";
  EXPECT_EQ(alpha_error("[1, 2]"), "bad.json:1: an alpha file is a JSON object");
  EXPECT_EQ(alpha_error("{\"format\": \"ragform-spotlight-alpha\"}"),
            "bad.json:1: alpha file has no 'version' field");
  EXPECT_EQ(alpha_error("{\n\"format\": \"other\",\n\"version\": 1,\n" + model + ok_tail),
            "bad.json:2: 'format' must be \"ragform-spotlight-alpha\"");
  EXPECT_EQ(alpha_error("{\n\"format\": \"ragform-spotlight-alpha\",\n\"version\": 2,\n" + model +
                        ok_tail),
            "bad.json:3: 'version' is 2, this ragform reads version 1");
  EXPECT_EQ(alpha_error(head + "\"model\": \"mlp\",\n" + ok_tail),
            "bad.json:4: 'model' must be \"softmax-linear\"");
  EXPECT_EQ(alpha_error(head + model +
                        "\"features\": [\"log_idf\", \"length\"],\n\"weights\": [1, 2]\n}"),
            "bad.json:5: unknown feature 'length'");
  EXPECT_EQ(alpha_error(head + model + "\"features\": [\"oov\", \"oov\"],\n\"weights\": [1, 2]\n}"),
            "bad.json:5: feature 'oov' is listed twice");
  EXPECT_EQ(alpha_error(head + model + "\"features\": [\"log_idf\"],\n\"weights\": [1, 2]\n}"),
            "bad.json:6: 'weights' has 2 numbers for 1 features");
  EXPECT_EQ(alpha_error(head + model + "\"features\": [\"log_idf\"],\n\"weights\": [\"1\"]\n}"),
            "bad.json:6: weight 1 ('log_idf') is \"1\", not a finite number");
  EXPECT_EQ(alpha_error(head + model + "\"features\": \"log_idf\",\n\"weights\": [1]\n}"),
            "bad.json:5: 'features' must be an array of feature names");
  // Issue 40, pass 20: a key the file does not have, at its top or in its training record, is
  // refused (a misspelt "question_keys" left the training questions in the evaluation), a null
  // one is absent, and the training keys are found whatever their order in the file.
  const std::string weights = "\"features\": [\"log_idf\"],\n\"weights\": [1]";
  EXPECT_NE(
      alpha_error(head + model + weights + ",\n\"bogus\": 1\n}").find("'bogus' is not supported"),
      std::string::npos);
  EXPECT_NE(alpha_error(head + model + weights + ",\n\"training\": {\"question_keyz\": []}\n}")
                .find("'question_keyz' is not supported (an alpha file's 'training' takes"),
            std::string::npos);
  EXPECT_NE(alpha_error(head + model + weights + ",\n\"training\": {\"question_keys\": [1]}\n}")
                .find("'question_keys' must be an array of strings"),
            std::string::npos);
  EXPECT_EQ(alpha_error(head + model + weights + ",\n\"bogus\": null,\n\"training\": null\n}"),
            "(no error)");
  const LearnedAlpha unsorted =
      parse_alpha_file(head + model + weights +
                           ",\n\"training\": {\"question_keys\": [\"c\", \"a\", \"b\", \"a\"]}\n}",
                       "t.json");
  EXPECT_EQ(alpha_training_keys(unsorted.training), (std::vector<std::string>{"a", "b", "c"}));
  // Through the flag: a missing file is a FileError naming it, another spec a UsageError.
  ScoreParams p;
  EXPECT_THROW(set_alpha(p, "learned:/nonexistent/alpha.json"), FileError);
  EXPECT_THROW(set_alpha(p, "learned:"), UsageError);
  EXPECT_THROW(set_alpha(p, "bm25"), UsageError);
  EXPECT_EQ(p.alpha, Alpha::Idf);  // unchanged by the failures
  // An endless file is refused after kMaxTextFileBytes (issue 40, third pass: read until the
  // memory ran out).
  try {
    load_alpha_file("/dev/zero");
    FAIL() << "no error for /dev/zero";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero: the alpha file is over the limit of 67108864"),
              std::string::npos)
        << e.what();
  }
}

TEST(SpotlightAlpha, RelevanceFromTermsIsScoreQuestions) {
  WordVectors v = vectors();
  StaticEncoder enc(v);
  const AlphaWeights w{0.7, -0.5, -1, -0.25, 0.5, 1, -1, 0.5};
  for (ScoreParams base : settings()) {
    const ScoreParams p = with_learned(base, w);
    const ScoredQuestion sq = score_question(enc, kQuestion, documents(), p);
    const AlphaTerms t = alpha_terms(enc, kQuestion, documents(), p);
    const std::vector<double> R = relevance_for_alpha(t, learned_alpha(t.features, w), p);
    ASSERT_EQ(R.size(), sq.sentences.size());
    for (size_t i = 0; i < R.size(); ++i) {
      EXPECT_EQ(R[i], sq.sentences[i].R) << i;
      EXPECT_EQ(t.sent_ids[i], std::make_pair(sq.sentences[i].doc, sq.sentences[i].sent));
    }
  }
}

// Two sentences per question: the gold one matches query token 1, a distractor matches token 0.
// Token 0 is a stop word with the larger idf, so IDF ranks the distractor first (recall@1 = 0);
// a weight below 0 on stop_word puts the gold sentence first.
std::vector<AlphaQuestion> stop_word_trap(int n) {
  std::vector<AlphaQuestion> qs;
  for (int i = 0; i < n; ++i) {
    AlphaTerms t;
    t.sums = {{0.0, 1.0}, {1.0, 0.0}};  // [token][sentence]
    t.idf = {2.0, 1.0 + 0.01 * i};
    t.features = {{std::log(t.idf[0]), 0, 1, 0, 0, 0, 0, 0},
                  {std::log(t.idf[1]), 1, 0, 0, 1, 0, 0, 0}};
    t.sent_ids = {{0, 0}, {0, 1}};
    qs.push_back(alpha_question(std::move(t), {{0, 0}}));
  }
  return qs;
}

TEST(SpotlightAlpha, FitBeatsIdfWhereIdfIsWrongAndIsDeterministic) {
  const auto qs = stop_word_trap(5);
  ScoreParams p;
  p.top_k = 1;
  FitOptions o;
  o.K = 1;
  EXPECT_EQ(fixed_alpha_objective(qs, Alpha::Idf, p, 1).recall, 0.0);
  const AlphaFit fit = fit_alpha(qs, p, o);
  EXPECT_EQ(fit.objective.recall, 1.0);
  EXPECT_EQ(alpha_objective(qs, fit.weights, p, 1).recall, 1.0);
  // The same data and seed: the same weights; every seed ends at a perfect fit here.
  for (uint64_t seed : {1, 2, 3}) {
    o.seed = seed;
    const AlphaFit a = fit_alpha(qs, p, o), b = fit_alpha(qs, p, o);
    EXPECT_EQ(a.weights, b.weights) << seed;
    EXPECT_EQ(a.passes, b.passes);
    EXPECT_EQ(a.objective.recall, 1.0);
  }
  EXPECT_THROW(fit_alpha({}, p, o), Error);
}

// A HotpotQA-like record: two one-sentence paragraphs, the second is the supporting fact.
eval::QaRecord tiny_record() {
  eval::QaRecord r;
  r.id = "q1";
  r.question = "Which city has the river?";
  r.answers = {"Tulsa"};
  for (const char* s : {"The town is in Oklahoma.", "The city river runs."}) {
    eval::Context c;
    c.title = s[4] == 't' ? "Town" : "City";
    c.text = s;
    c.sentences = {s};
    c.sentence_offsets = {0};
    r.ctxs.push_back(c);
  }
  eval::HotpotExtra h;
  h.supporting_facts.push_back({"City", 0, 1, true});
  r.hotpot = h;
  return r;
}

TEST(SpotlightAlpha, LearnedAlphaFileIsPartOfTheEvalRunIdentity) {
  const auto dir = ragform::testing::temp_dir("spotlight-alpha-identity");
  const AlphaWeights w{1, 0, -1, 0, 0, 0, 0, 0};
  ragform::testing::write_file(dir / "a.json", alpha_file_text(w, {{"seed", 1}}));
  ragform::testing::write_file(dir / "b.json", alpha_file_text(w, {{"seed", 2}}));
  WordVectors v = vectors();
  StaticEncoder enc(v);
  store::RunStore st((dir / "runs.sqlite").string());
  const std::vector<eval::QaRecord> recs{tiny_record()};
  auto run_with = [&](const std::string& spec) {
    RunOptions o;
    set_alpha(o.params, spec);
    return run_eval(enc, st, recs, o);
  };
  const RunSummary idf = run_with("idf");
  const RunSummary a = run_with("learned:" + (dir / "a.json").string());
  const RunSummary b = run_with("learned:" + (dir / "b.json").string());
  const RunSummary a2 = run_with("learned:" + (dir / "a.json").string());
  EXPECT_NE(a.run, idf.run);
  EXPECT_NE(a.run, b.run) << "same weights, other file bytes: another run";
  EXPECT_EQ(a2.run, a.run);  // the same file resumes its run
  EXPECT_EQ(a2.reused, 5u);
  EXPECT_EQ(a2.written, 0u);
}

}  // namespace
}  // namespace ragform::spotlight

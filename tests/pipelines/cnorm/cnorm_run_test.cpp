// C-NORM's store-backed runners (run.h) with a fake reader whose attention and answers are known:
// what they store, that a second call resumes without a model call, and that a shard answers only
// its questions.
#include "pipelines/cnorm/run.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "capital_items.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::cnorm {
namespace {

using ragform::testing::FakeReader;

using testing::capital_items;
using testing::kQaTemplate;

// One unit of mass on every token, plus `extra` on the first (the documents' span always holds
// some mass, as calibration_row_extra's mass_by_position needs).
std::vector<float> front_heavy(size_t T, float extra) {
  std::vector<float> a(T, 1.0f);
  a[0] += extra;
  return a;
}

// The text of the first "Document [i](Title: t) text" line: right only with the gold first.
std::string echo_first_document(const std::string& prompt) {
  const std::vector<std::string> docs = testing::document_texts(prompt);
  return docs.empty() ? "" : " " + docs.front();
}

// Prompts with '&' put most of the mass on the first token (mu near 0, ABS near 0); the others
// spread it evenly (mu = 1/2, ABS 1).
FakeReader attention_reader() {
  FakeReader r;
  r.heads = [](const std::string& p, size_t T) -> std::vector<std::vector<float>> {
    return {front_heavy(T, p.find('&') != std::string::npos ? 100.0f * float(T) : 0.0f)};
  };
  r.answer = echo_first_document;
  return r;
}

CalibrateOptions calibrate_options() {
  CalibrateOptions o;
  o.setup.task = Task::Qa;
  o.setup.tmpl = kQaTemplate;
  o.setup.candidates = parse_delimiter_list("&,-");
  o.setup.p = 1.0;
  o.samples = 2;
  o.k = 3;
  o.origin = {"test", "model.gguf", "abc"};
  return o;
}

size_t rows(store::RunStore& st, int64_t run) {
  size_t n = 0;
  st.for_each_result(run, [&](const store::Result&) { ++n; });
  return n;
}

TEST(CnormRun, CalibrateStoresEveryScoreAndResumes) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_calibrate");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r = attention_reader();
  const std::vector<Item> its = capital_items();
  CalibrateSummary first = run_calibrate(r, st, its, calibrate_options());
  EXPECT_EQ(r.attention_calls, 4);  // S x F
  EXPECT_EQ(rows(st, first.run), 4u);
  EXPECT_EQ(first.reused, 0u);
  EXPECT_EQ(first.profile.best.name, "-");  // ABS 1 against almost 0 for '&'
  EXPECT_EQ(first.profile.S, 2u);
  EXPECT_EQ(first.profile.model_sha256, "abc");
  EXPECT_EQ(first.profile.extra["k"], 3);

  std::vector<std::string> notes;
  CalibrateOptions again = calibrate_options();
  again.hooks.note = [&](const std::string& s) { notes.push_back(s); };
  CalibrateSummary second = run_calibrate(r, st, its, again);
  EXPECT_EQ(r.attention_calls, 4);  // nothing recomputed
  EXPECT_EQ(second.run, first.run);
  EXPECT_EQ(second.reused, 4u);
  EXPECT_EQ(profile_to_json(second.profile), profile_to_json(first.profile));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "cnorm calibrate: resuming run " + std::to_string(first.run) +
                          ": 4 scored prompts already stored");
}

TEST(CnormRun, CalibrateWithoutStoreUsesTheCache) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_cache");
  FakeReader r = attention_reader();
  CalibrateOptions o = calibrate_options();
  o.cache_dir = (dir / "cache").string();
  CalibrateSummary first = run_calibrate(r, capital_items(), o);
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(r.attention_calls, 4);
  CalibrateSummary second = run_calibrate(r, capital_items(), o);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(r.attention_calls, 4);
  EXPECT_EQ(profile_to_json(second.profile), profile_to_json(first.profile));
}

EvalOptions eval_options(const Profile& prof) {
  EvalOptions o;
  o.task = Task::Qa;
  o.tmpl = kQaTemplate;
  o.profile = prof;
  o.seeds = {1};
  o.k = 3;
  o.max_tokens = 8;
  o.origin = {"test", "model.gguf", "abc"};
  return o;
}

TEST(CnormRun, EvalSweepsEveryPositionAndResumes) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_eval");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r = attention_reader();
  const Profile prof = run_calibrate(r, capital_items(), calibrate_options()).profile;
  const EvalOptions o = eval_options(prof);
  EvalSummary first = run_eval(r, st, {capital_items()}, o);
  // 2 questions x 3 gold positions x 3 variants.
  EXPECT_EQ(r.generate_calls, 18);
  ASSERT_EQ(first.per_seed.size(), 1u);
  EXPECT_EQ(rows(st, first.per_seed[0].run), 18u);
  EXPECT_EQ(first.k, 3u);
  ASSERT_EQ(first.variants.size(), 3u);
  EXPECT_EQ(first.variants[1].format.delim.name, "-");  // C-NORM deploys the profile's f*
  // The reader answers with the first document: right exactly when the gold is first.
  for (const VariantSummary& v : first.average) {
    EXPECT_EQ(v.accuracy, (std::vector<double>{1.0, 0.0, 0.0})) << v.name;
    EXPECT_NEAR(v.oaa, 1.0 / 3.0, 1e-12) << v.name;
    EXPECT_EQ(v.opa, 1.0) << v.name;
  }
  EvalSummary second = run_eval(r, st, {capital_items()}, o);
  EXPECT_EQ(r.generate_calls, 18);  // every answer read back from the store
  EXPECT_EQ(eval_summary_json(second, o), eval_summary_json(first, o));
}

TEST(CnormRun, EvalShardAnswersOnlyItsQuestions) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_shard");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r = attention_reader();
  const Profile prof = run_calibrate(r, capital_items(), calibrate_options()).profile;
  EvalOptions o = eval_options(prof);
  o.keep = [](const std::string& id) { return id == "i2"; };
  EvalSummary s = run_eval(r, st, {capital_items()}, o);
  EXPECT_EQ(r.generate_calls, 9);
  EXPECT_EQ(s.items, 2u);  // the run's identity still counts every question
  // The whole evaluation continues the shard's run: only i1's 9 answers are new.
  o.keep = {};
  EXPECT_EQ(run_eval(r, st, {capital_items()}, o).per_seed[0].run, s.per_seed[0].run);
  EXPECT_EQ(r.generate_calls, 18);
}

TEST(CnormRun, EvalNeedsOneItemSetPerSeed) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_seeds");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r = attention_reader();
  const Profile prof = run_calibrate(r, capital_items(), calibrate_options()).profile;
  EvalOptions o = eval_options(prof);
  o.seeds = {1, 2};
  EXPECT_THROW(run_eval(r, st, {capital_items()}, o), Error);
}

}  // namespace
}  // namespace ragform::cnorm

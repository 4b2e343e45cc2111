// C-NORM's store-backed runners (run.h) with a fake reader whose attention and answers are known:
// what they store, that a second call resumes without a model call, and that a shard answers only
// its questions.
#include "pipelines/cnorm/run.h"

#include <gtest/gtest.h>

#include <set>

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

// A profile that deploys "original" builds its prompts from the text as it came, whatever its p:
// the summary lists the ratio deployed (0, as the profile's candidate row), not the profile's p,
// which Min-Token still uses (pass 20).
TEST(CnormRun, EvalListsTheRatioEachVariantDeploys) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_eval_p");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r = attention_reader();
  Profile prof = run_calibrate(r, capital_items(), calibrate_options()).profile;
  prof.best = original_delimiter();
  prof.p = 0.5;
  const EvalOptions o = eval_options(prof);
  const nlohmann::json j = eval_summary_json(run_eval(r, st, {capital_items()}, o), o);
  ASSERT_EQ(j["variants"].size(), 3u);
  EXPECT_EQ(j["variants"][1]["name"], "cnorm");
  EXPECT_EQ(j["variants"][1]["delimiter"], "original");
  EXPECT_EQ(j["variants"][1]["p"], 0.0);
  EXPECT_EQ(j["variants"][2]["p"], 0.5);  // Min-Token: the profile's p
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

// The paper's prompts changed the default qa and kv prompts: a run of the paper's prompt never
// resumes a run of lost-in-the-middle's (the template's hash is part of the identity).
TEST(CnormRun, EvalOfThePapersPromptIsANewRun) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_template");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r = attention_reader();
  const Profile prof = run_calibrate(r, capital_items(), calibrate_options()).profile;
  EvalOptions o = eval_options(prof);
  // lost-in-the-middle's qa_ordered_randomly.prompt, the default before.
  o.tmpl =
      "Write a high-quality answer for the given question using only the provided search results "
      "(some of which might be irrelevant). The search results are ordered randomly.\n\n"
      "{search_results}\n\nQuestion: {question}\nAnswer:";
  const int64_t before = run_eval(r, st, {capital_items()}, o).per_seed[0].run;
  o.tmpl = load_template(Task::Qa, "", "");
  const int64_t now = run_eval(r, st, {capital_items()}, o).per_seed[0].run;
  EXPECT_NE(now, before);
  EXPECT_EQ(r.generate_calls, 36);  // nothing reused across the two prompts
  st.for_each_result(now, [](const store::Result& row) {
    EXPECT_NE(row.prompt.find("\n\nSearch Results: Document [1]("), std::string::npos);
  });
}

// A profile calibrated on another prompt template than the evaluation's is said to be.
TEST(CnormRun, EvalNotesAProfileOfAnotherTemplate) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_profile_template");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r = attention_reader();
  const Profile prof = run_calibrate(r, capital_items(), calibrate_options()).profile;
  EvalOptions o = eval_options(prof);
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& s) { notes.push_back(s); };
  auto said = [&notes] {
    for (const auto& n : notes)
      if (n.find("calibrated with another prompt template") != std::string::npos) return true;
    return false;
  };
  run_eval(r, st, {capital_items()}, o);  // kQaTemplate, as calibrated
  EXPECT_FALSE(said());
  o.tmpl = load_template(Task::Qa, "", "");
  run_eval(r, st, {capital_items()}, o);
  EXPECT_TRUE(said());
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

// A LongBench-v2 profile by hand: f* = '&' among '&' and '-'.
Profile longbench_profile() {
  Profile prof;
  prof.model_sha256 = "abc";
  prof.task = "longbench";
  prof.p = 1.0;
  prof.best = {"&", "&"};
  CandidateScore amp, dash;
  amp.delim = {"&", "&"};
  dash.delim = {"-", "-"};
  prof.candidates = {amp, dash};
  return prof;
}

std::vector<McItem> longbench_items() {
  McItem a;
  a.id = "short";
  a.question = "Who went home?";
  a.choices = {"the cat", "the dog", "a bird", "no one"};
  a.answer = 'B';
  a.difficulty = "easy";
  a.length = "short";
  a.context = "The dog went home.";
  McItem b = a;
  b.id = "long";
  b.difficulty = "hard";
  b.length = "long";
  b.context = "At first the dog slept.";
  while (b.context.size() < 4000) b.context += " The cat played in the garden all day.";
  b.context += " In the end the dog went home.";
  return {a, b};
}

// A question over the context has the middle of its context cut (the default), the run's
// identity says so, and the rows, summary and run metadata count the tokens removed. A Drop run
// is another run: its identity has no "overflow", as the runs made before the option (which
// dropped); neither resumes the other.
TEST(CnormRun, LongbenchCutsTheMiddleOfLongContexts) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_longbench");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r;
  r.answer = [](const std::string&) { return std::string("The correct answer is (B)"); };
  LongbenchOptions o;
  o.profile = longbench_profile();
  o.ctx = 600;
  o.max_tokens = 8;
  o.origin = {"test", "model.gguf", "abc"};
  LongbenchSummary cut = run_longbench(r, st, longbench_items(), o);
  EXPECT_EQ(cut.items, 2u);
  EXPECT_EQ(cut.left_out, 0u);
  EXPECT_EQ(r.generate_calls, 6);
  EXPECT_EQ(cut.truncation.questions, (std::set<std::string>{"long"}));
  EXPECT_EQ(cut.truncation.prompts, 3u);
  st.for_each_result(cut.run, [&](const store::Result& row) {
    EXPECT_LE(*row.prompt_tokens, 600 - 8) << row.variant;
    EXPECT_NE(row.prompt.find("Question: Who went home?\n\nChoices:\n(A) the cat\n(B) the dog"),
              std::string::npos);
    const size_t removed = row.extra["tokens_removed"].get<size_t>();
    EXPECT_EQ(removed > 0, row.instance == "long") << row.instance;
    if (row.variant == "baseline" && row.instance == "long") {
      EXPECT_NE(row.prompt.find("<text>\nAt first the dog slept."), std::string::npos);
      EXPECT_NE(row.prompt.find("In the end the dog went home.\n</text>"), std::string::npos);
    }
  });
  EXPECT_EQ(st.run(cut.run)->config["overflow"], "truncate-middle");
  EXPECT_EQ(st.run_meta(cut.run, "truncation"), cut.truncation.to_json());
  const nlohmann::json j = longbench_summary_json(cut);
  EXPECT_EQ(j["overflow"], "truncate-middle");
  EXPECT_EQ(j["truncated"]["questions"], 1);
  EXPECT_EQ(j["truncated"]["prompts"], 3);
  EXPECT_GT(j["truncated"]["tokens_removed"]["max"].get<size_t>(), 3000u);

  // Rerun: resumed, nothing generated again, the same counts from the store.
  LongbenchSummary again = run_longbench(r, st, longbench_items(), o);
  EXPECT_EQ(again.run, cut.run);
  EXPECT_EQ(r.generate_calls, 6);
  EXPECT_EQ(again.truncation.to_json(), cut.truncation.to_json());

  o.overflow = Overflow::Drop;
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& s) { notes.push_back(s); };
  LongbenchSummary drop = run_longbench(r, st, longbench_items(), o);
  EXPECT_NE(drop.run, cut.run);
  EXPECT_EQ(drop.items, 1u);
  EXPECT_EQ(drop.left_out, 1u);
  EXPECT_EQ(r.generate_calls, 9);
  // Exactly the configuration a run had before the option: such a store resumes under drop.
  std::set<std::string> keys;
  const nlohmann::json drop_config = st.run(drop.run)->config;
  for (const auto& [k, v] : drop_config.items()) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"task", "items", "input_sha256", "max_tokens", "p",
                                         "cnorm_delimiter", "min_token_delimiter", "format_seed"}));
  EXPECT_EQ(drop.truncation.prompts, 0u);
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes[0].find("1 of 2 questions left out"), std::string::npos) << notes[0];
}

// --extract: a reader that writes the letter in lower-case prose is right under ragform's
// lenient rules and unparsed under LongBench-v2's strict pred.py rule. The two are separate runs
// (rows are graded when answered): the strict run names "extract" in its identity, the lenient
// one keeps the identity runs had before the option; each reruns into itself.
TEST(CnormRun, LongbenchExtractModesAreSeparateRuns) {
  const auto dir = ragform::testing::temp_dir("cnorm_run_longbench_extract");
  store::RunStore st(dir / "runs.sqlite");
  FakeReader r;
  r.answer = [](const std::string&) { return std::string("the correct answer is (B)"); };
  LongbenchOptions o;
  o.profile = longbench_profile();
  o.ctx = 600;
  o.max_tokens = 8;
  o.origin = {"test", "model.gguf", "abc"};
  EXPECT_EQ(o.extract, Extract::Lenient);  // the default `cnorm eval` takes
  const LongbenchSummary lenient = run_longbench(r, st, longbench_items(), o);
  o.extract = Extract::Strict;
  const LongbenchSummary strict = run_longbench(r, st, longbench_items(), o);
  EXPECT_NE(strict.run, lenient.run);
  EXPECT_EQ(r.generate_calls, 12);
  for (const auto& s : lenient.summaries) EXPECT_EQ(s.accuracy, 1.0) << s.variant;
  for (const auto& s : strict.summaries) EXPECT_EQ(s.accuracy, 0.0) << s.variant;
  EXPECT_FALSE(st.run(lenient.run)->config.contains("extract"));
  EXPECT_EQ(st.run(strict.run)->config["extract"], "strict");
  EXPECT_EQ(longbench_summary_json(lenient)["extract"], "lenient");
  EXPECT_EQ(longbench_summary_json(strict)["extract"], "strict");
  st.for_each_result(strict.run, [](const store::Result& row) {
    EXPECT_EQ(row.extra["extracted"], "") << row.variant;
  });
  // Rerun in each mode: resumed, nothing generated.
  EXPECT_EQ(run_longbench(r, st, longbench_items(), o).run, strict.run);
  o.extract = Extract::Lenient;
  EXPECT_EQ(run_longbench(r, st, longbench_items(), o).run, lenient.run);
  EXPECT_EQ(r.generate_calls, 12);
}

// A LongBench calibration cuts its prompts the same way (budget: the whole context, nothing is
// generated) and names the overflow in its identity; Drop passes the long question over.
TEST(CnormRun, LongbenchCalibrationCutsTooAndNamesIt) {
  FakeReader r;
  r.heads = [](const std::string&, size_t T) -> std::vector<std::vector<float>> {
    return {std::vector<float>(T, 1.0f)};
  };
  std::vector<Item> items;
  for (const McItem& mc : longbench_items()) items.push_back(mc_to_item(mc));
  CalibrateOptions o;
  o.setup.task = Task::Longbench;
  o.setup.tmpl = longbench_template();
  o.setup.candidates = parse_delimiter_list("&,-");
  o.samples = 2;
  o.k = 1;
  o.ctx = 600;
  o.origin = {"test", "model.gguf", "abc"};
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& s) { notes.push_back(s); };
  const auto dir = ragform::testing::temp_dir("cnorm_run_longbench_cal");
  store::RunStore st(dir / "runs.sqlite");
  CalibrateSummary cut = run_calibrate(r, st, items, o);
  EXPECT_EQ(cut.profile.S, 2u);
  EXPECT_EQ(cut.profile.extra["overflow"], "truncate-middle");
  EXPECT_EQ(cut.truncation.questions, (std::set<std::string>{"long"}));
  EXPECT_EQ(cut.truncation.prompts, 2u);  // one per candidate
  st.for_each_result(cut.run, [&](const store::Result& row) {
    EXPECT_LE(*row.prompt_tokens, 600);
    EXPECT_EQ(row.extra["tokens_removed"].get<size_t>() > 0, row.instance == "long");
  });
  EXPECT_EQ(st.run_meta(cut.run, "truncation"), cut.truncation.to_json());
  bool said = false;
  for (const auto& n : notes) said = said || n.find("cut in the middle") != std::string::npos;
  EXPECT_TRUE(said);

  o.overflow = Overflow::Drop;
  CalibrateSummary drop = run_calibrate(r, st, items, o);
  EXPECT_NE(drop.run, cut.run);
  EXPECT_EQ(drop.profile.S, 1u);
  EXPECT_FALSE(drop.profile.extra.contains("overflow"));
}

}  // namespace
}  // namespace ragform::cnorm

// Calibration (section 4.2) with a fake reader whose attention is known: ABS per prompt, mean and
// spread per candidate, argmax, attention options, profiles and the cache.
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/detail/numeric.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "base/json_keys.h"
#include "fake_reader.h"
#include "pipelines/cnorm/system_prompts.h"
#include "support/test_support.h"

namespace ragform::cnorm {

using detail::argmax_mean;
using detail::mean_std;
namespace {

using testing::FakeReader;

// Mass w0 on the first token and w1 on the last: mu = w1 / (w0 + w1).
std::vector<float> ends(size_t T, float w0, float w1) {
  std::vector<float> a(T, 0.0f);
  a[0] += w0;
  a[T - 1] += w1;
  return a;
}

Item item(const std::string& id, const std::string& q) {
  Item it;
  it.id = id;
  it.question = q;
  it.answers = {"x"};
  it.gold = {"G", "a b c."};
  it.distractors = {{"D", "d e f."}};
  return it;
}

}  // namespace

TEST(CnormCalibrate, MeanStdAndArgmax) {
  auto [m, s] = mean_std({0.2, 0.4, 0.6});
  EXPECT_NEAR(m, 0.4, 1e-15);
  EXPECT_NEAR(s, 0.2, 1e-15);  // sample std: sqrt((0.04 + 0 + 0.04) / 2)
  EXPECT_EQ(mean_std({0.7}).second, 0.0);
  std::vector<CandidateScore> c(3);
  c[0].mean = 0.5;
  c[1].mean = 0.7;
  c[2].mean = 0.7;
  EXPECT_EQ(argmax_mean(c), 1u);  // first on ties
  EXPECT_THROW(argmax_mean({}), Error);
}

TEST(CnormCalibrate, ScoresEveryCandidateOnEverySample) {
  FakeReader r;
  // '&'-formatted prompts: balanced (ABS 1). '-': ABS 1 for question q2, 0.5 otherwise. Else ABS 0.
  r.heads = [](const std::string& p, size_t T) -> std::vector<std::vector<float>> {
    if (p.find('&') != std::string::npos) return {ends(T, 1, 1)};
    if (p.find('-') != std::string::npos)
      return {p.find("q2") != std::string::npos ? ends(T, 1, 1) : ends(T, 3, 1)};
    return {ends(T, 1, 0)};
  };
  Item a = item("i1", "q1"), b = item("i2", "q2");
  CalibrationSetup setup;
  setup.task = Task::Qa;
  setup.tmpl = "{search_results}\n{question}";
  setup.candidates = parse_delimiter_list("none,-,&");
  setup.p = 1.0;
  std::vector<PromptSpec> specs = {{&a, 2, 0}, {&b, 2, 1}};
  std::vector<std::string> seen;
  auto cal = calibrate(r, setup, specs, [&](size_t f, size_t s, const Prompt& p, double) {
    seen.push_back(std::to_string(f) + ":" + std::to_string(s));
    if (f == 2 && s == 1) {
      EXPECT_EQ(p.text, "Document [1](Title: D) d&e&f.\nDocument [2](Title: G) a&b&c.\nq2");
    }
  });
  EXPECT_EQ(r.attention_calls, 6);  // |S| x |F|
  EXPECT_EQ(seen, (std::vector<std::string>{"0:0", "0:1", "1:0", "1:1", "2:0", "2:1"}));
  ASSERT_EQ(cal.candidates.size(), 3u);
  EXPECT_EQ(cal.candidates[0].abs, (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(cal.candidates[1].abs, (std::vector<double>{0.5, 1.0}));
  EXPECT_NEAR(cal.candidates[1].mean, 0.75, 1e-12);
  EXPECT_NEAR(cal.candidates[1].std, std::sqrt(0.125), 1e-12);
  EXPECT_NEAR(cal.candidates[2].mean, 1.0, 1e-12);
  EXPECT_EQ(cal.best, 2u);
  EXPECT_EQ(cal.candidates[cal.best].delim.name, "&");
}

TEST(CnormCalibrate, OriginalIsOneCandidateAndWinsWhenTheTextBalancesBest) {
  FakeReader r;
  // Prompts with '-' put 3/4 of the mass on the first token (mu = 1/4, ABS = 1 - 2|1/4 - 1/2| =
  // 0.5); the unformatted prompt is balanced (ABS 1).
  r.heads = [](const std::string& p, size_t T) -> std::vector<std::vector<float>> {
    return {p.find('-') != std::string::npos ? ends(T, 3, 1) : ends(T, 1, 1)};
  };
  Item a = item("i1", "q1");
  CalibrationSetup setup;
  setup.task = Task::Qa;
  setup.tmpl = "{search_results}\n{question}";
  setup.candidates = parse_delimiter_list("-,original");
  setup.p_grid = {0.5, 1.0};
  // One "original" whatever the grid: it does not depend on p.
  auto list = candidate_list(setup);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].label(), "-@p=0.5");
  EXPECT_EQ(list[1].label(), "original");
  EXPECT_EQ(list[1].p, 0.0);
  EXPECT_EQ(list[2].label(), "-@p=1");
  std::vector<PromptSpec> specs = {{&a, 2, 0}};
  std::vector<std::string> texts;
  auto cal = calibrate(r, setup, specs,
                       [&](size_t, size_t, const Prompt& p, double) { texts.push_back(p.text); });
  EXPECT_EQ(texts[1], "Document [1](Title: G) a b c.\nDocument [2](Title: D) d e f.\nq1");
  EXPECT_DOUBLE_EQ(cal.candidates[0].mean, 0.5);
  EXPECT_DOUBLE_EQ(cal.candidates[1].mean, 1.0);
  EXPECT_EQ(cal.best, 1u);
  // In the profile it is an entry like the delimiters, and round-trips as the original.
  Profile p;
  p.model_sha256 = "m";
  p.task = "qa";
  p.S = 1;
  p.candidates = cal.candidates;
  p.best = cal.candidates[1].delim;
  nlohmann::json j = profile_to_json(p);
  EXPECT_EQ(j["best"], "original");
  EXPECT_EQ(j["candidates"][1]["delimiter"], "original");
  Profile q = profile_from_json(j, "mem");
  EXPECT_TRUE(q.best.original);
  EXPECT_EQ(format_text(Task::Qa, "x y. z w.", profile_format(q)), "x y. z w.");
}

TEST(CnormCalibrate, ProfileBelongsToOneModelAndTask) {
  Profile p;
  p.model_sha256 = std::string(64, 'a');
  p.task = "qa";
  EXPECT_EQ(profile_mismatch(p, std::string(64, 'a'), "qa"), "");
  EXPECT_EQ(profile_mismatch(p, std::string(64, 'a'), "longbench"),
            "the profile was calibrated for task qa, not longbench");
  EXPECT_EQ(profile_mismatch(p, std::string(64, 'b'), "qa"),
            "the profile was calibrated on another model (sha256 aaaaaaaaaaaa, this model "
            "bbbbbbbbbbbb)");
  p.model_sha256 = "";
  EXPECT_NE(profile_mismatch(p, std::string(64, 'a'), "qa").find("sha256 none"), std::string::npos);
}

TEST(CnormCalibrate, NamedSystemPrompt) {
  const std::string& s = system_prompt_preset("llama2-chat");
  EXPECT_EQ(
      s.rfind("You are a helpful, respectful and honest assistant. Always answer as helpfully "
              "as possible, while being safe. Please ensure",
              0),
      0u);
  EXPECT_NE(s.find("If a question does not make any sense"), std::string::npos);
  EXPECT_EQ(s.substr(s.size() - 37), "please don't share false information.");
  EXPECT_THROW(system_prompt_preset("llama3"), UsageError);
  EXPECT_EQ(system_prompt_presets(), std::vector<std::string>{"llama2-chat"});
}

TEST(CnormCalibrate, HeadModesAndContextSpan) {
  FakeReader r;
  r.heads = [](const std::string&, size_t T) -> std::vector<std::vector<float>> {
    return {ends(T, 1, 0), ends(T, 0, 1)};
  };
  Prompt p{"xxDOCyy", 2, 5};
  AbsOptions o;
  EXPECT_NEAR(prompt_abs(r, p, o), 1.0, 1e-7);  // the head mean is balanced
  o.heads = HeadMode::PerHead;
  EXPECT_NEAR(prompt_abs(r, p, o), 0.0, 1e-7);  // each head is not
  o.heads = HeadMode::Single;
  o.head = 1;
  EXPECT_NEAR(prompt_abs(r, p, o), 0.0, 1e-7);
  o.head = 5;
  EXPECT_THROW(prompt_abs(r, p, o), Error);

  // T = 8 tokens (BOS + 7 bytes); weights on tokens 3 and 5. Whole row: mu = (3/7 + 5/7) / 2 = 4/7,
  // ABS = 6/7. The documents "DOC" are tokens [count("xx"), count("xxDOC")) = [3, 6): mu = 0.5.
  r.heads = [](const std::string&, size_t T) -> std::vector<std::vector<float>> {
    std::vector<float> a(T, 0.0f);
    a[3] = a[5] = 1.0f;
    return {a};
  };
  AbsOptions whole, span;
  span.context_span = true;
  EXPECT_NEAR(prompt_abs(r, p, whole), 6.0 / 7.0, 1e-7);
  EXPECT_NEAR(prompt_abs(r, p, span), 1.0, 1e-7);
  r.mode = "chatml";
  EXPECT_THROW(prompt_abs(r, p, span), UsageError);
}

TEST(CnormCalibrate, ProfileJsonRoundTripsWithNineDigits) {
  Profile p;
  p.model_sha256 = std::string(64, 'a');
  p.task = "needle";
  p.p = 0.5;
  p.seed = 7;
  p.S = 3;
  CandidateScore c1{{"none", ""}, {0.1, 0.2, 0.3}, 0.2, 0.1};
  CandidateScore c2{{"&", "&"}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, 1.0 / 3, 0.0};
  p.candidates = {c1, c2};
  p.best = c2.delim;
  nlohmann::json j = profile_to_json(p);
  EXPECT_NE(j.dump().find("\"abs_mean\":0.333333333,"), std::string::npos) << j.dump();
  EXPECT_EQ(j["best"], "&");
  EXPECT_EQ(j["candidates"][0]["delimiter"], "none");
  Profile q = profile_from_json(j, "mem");
  EXPECT_EQ(q.best, p.best);
  EXPECT_EQ(q.candidates.size(), 2u);
  EXPECT_EQ(q.candidates[0].delim.text, "");
  EXPECT_DOUBLE_EQ(q.candidates[1].mean, 0.333333333);
  EXPECT_EQ(q.S, 3u);

  nlohmann::json bad = j;
  bad["best"] = "~";
  EXPECT_THROW(profile_from_json(bad, "mem"), Error);
  bad = j;
  bad["p"] = 1.5;
  EXPECT_THROW(profile_from_json(bad, "mem"), Error);
  bad = j;
  bad.erase("candidates");
  try {
    profile_from_json(bad, "f.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "f.json: profile: missing field 'candidates'");
  }
  // A key the profile does not have is refused, at the top and in a candidate (issue 40,
  // pass 18: a misspelt key was ignored); a null one is a key not given.
  bad = j;
  bad["bset"] = "&";
  EXPECT_THROW(profile_from_json(bad, "mem"), UnknownKeyError);
  bad = j;
  bad["candidates"][1]["abs_maen"] = 0.5;
  try {
    profile_from_json(bad, "f.json");
    FAIL();
  } catch (const UnknownKeyError& e) {
    EXPECT_NE(
        std::string(e.what()).find("f.json: profile: 'abs_maen' is not supported (a candidate "
                                   "of 'candidates' takes delimiter, abs_mean"),
        std::string::npos)
        << e.what();
  }
  bad = j;
  bad["bset"] = nullptr;
  bad["candidates"][0]["other"] = nullptr;
  EXPECT_EQ(profile_from_json(bad, "mem").best, p.best);
  // Pass 19: null is a key not given in a candidate too, and every key read is of its type
  // (they were dropped or ignored silently); every fault is one class, a UsageError.
  bad = j;
  for (const char* k : {"p", "format", "name", "eliminated_in_round", "abs"})
    bad["candidates"][1][k] = nullptr;
  bad["config"] = nullptr;
  EXPECT_EQ(profile_from_json(bad, "mem").candidates.size(), 2u);
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"abs", "junk"}, {"abs", {1, "x"}}, {"eliminated_in_round", "x"}}) {
    bad = j;
    bad["candidates"][0][key] = value;
    EXPECT_THROW(profile_from_json(bad, "mem"), UsageError) << key << " " << value;
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"best_format", 5}, {"config", 5}, {"search", "x"}, {"p", 1.5}}) {
    bad = j;
    bad[key] = value;
    EXPECT_THROW(profile_from_json(bad, "mem"), UsageError) << key << " " << value;
  }
}

TEST(CnormCalibrate, CacheIsKeyedByIdentity) {
  auto dir = ragform::testing::temp_dir("cnorm_cache").string();
  nlohmann::json id1 = {{"model_sha256", "x"}, {"task", "qa"}, {"p", 0.5}};
  nlohmann::json id2 = id1;
  id2["p"] = 0.6;
  EXPECT_EQ(cache_key(id1), cache_key(nlohmann::json::parse(id1.dump())));
  EXPECT_NE(cache_key(id1), cache_key(id2));
  EXPECT_EQ(cache_key(id1).size(), 64u);
  EXPECT_FALSE(cache_lookup(dir, cache_key(id1)));
  Profile p;
  p.model_sha256 = "x";
  p.task = "qa";
  p.S = 1;
  p.candidates = {CandidateScore{{"-", "-"}, {0.25}, 0.25, 0}};
  p.best = p.candidates[0].delim;
  cache_store(dir, cache_key(id1), p);
  auto got = cache_lookup(dir, cache_key(id1));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->best.name, "-");
  EXPECT_DOUBLE_EQ(got->candidates[0].mean, 0.25);
  EXPECT_FALSE(cache_lookup(dir, cache_key(id2)));
}

}  // namespace ragform::cnorm

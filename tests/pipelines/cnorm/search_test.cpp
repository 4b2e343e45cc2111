// Beyond the paper's calibration: the candidate list of a joint (f, p) search with SURE document
// wrappers, successive halving (schedule, pass count, same f* as exhaustive), the per-prompt
// measurement the run store keeps (mu, mass by tenth of the context span) and profiles that carry
// p, format and name per candidate.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "base/error.h"
#include "fake_reader.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/sure/formats.h"

namespace ragform::cnorm {
namespace {

using testing::FakeReader;

Item item(const std::string& id) {
  Item it;
  it.id = id;
  it.question = "q " + id;
  it.answers = {"x"};
  it.gold = {"G", "a b c."};
  it.distractors = {{"D", "d e f."}};
  return it;
}

CalibrationSetup base_setup(const std::string& delims) {
  CalibrationSetup s;
  s.task = Task::Qa;
  s.tmpl = "{search_results}\n{question}";
  s.candidates = parse_delimiter_list(delims);
  s.p = 1.0;
  return s;
}

}  // namespace

TEST(CnormSearch, CandidateListCoversTheGridThenTheWrappers) {
  CalibrationSetup s = base_setup("none,-");
  auto one = candidate_list(s);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1].label(), "-");  // one p: the plain delimiter name
  EXPECT_EQ(one[1].p, 1.0);
  s.p_grid = {0.25, 1};
  s.wrappers = {"json", "yaml"};
  auto c = candidate_list(s);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0].label(), "none@p=0.25");
  EXPECT_EQ(c[1].label(), "-@p=0.25");
  EXPECT_EQ(c[2].label(), "none@p=1");
  EXPECT_EQ(c[3].label(), "-@p=1");
  EXPECT_EQ(c[3].p, 1.0);
  EXPECT_EQ(c[4].label(), "json");
  EXPECT_EQ(c[4].wrapper, "json");
  EXPECT_EQ(c[4].p, 0.0);
  EXPECT_EQ(c[5].wrapper, "yaml");
  s.wrappers = {"json", "json"};
  EXPECT_THROW(candidate_list(s), UsageError);
  s.wrappers = {"html"};
  EXPECT_THROW(candidate_list(s), UsageError);
  s.wrappers = {};
  s.p_grid = {1.5};
  EXPECT_THROW(candidate_list(s), UsageError);
}

TEST(CnormSearch, WrappersRenderSureDocuments) {
  Item it = item("i1");
  Format f{{"none", ""}, 0.0, 0, "json"};
  Prompt p = render(Task::Qa, "{search_results}\n{question}", it, arrange(it, 2, 1), f);
  EXPECT_EQ(p.text, "Document [1] " + sure::to_json_doc("D", "d e f.") + "\nDocument [2] " +
                        sure::to_json_doc("G", "a b c.") + "\nq i1");
  // The wrapped text really parses back.
  EXPECT_EQ(sure::validate_format(sure::DocFormat::Json, sure::to_json_doc("G", "a b c.")).text,
            "a b c.");
  Item n;
  n.id = "n";
  n.question = "The dog's name was";
  n.gold = {"", "There was a dog named Max."};
  Prompt pn = render(Task::Needle, needle_template(), n, arrange(n, 1, 0),
                     Format{{"none", ""}, 0.0, 0, "markdown"});
  EXPECT_EQ(pn.text, "# Document 1\nThere was a dog named Max. The dog's name was");
  EXPECT_THROW(render(Task::Kv, "{formatted_kv_records} {key}", it, arrange(it, 1, 0), f),
               UsageError);
}

TEST(CnormSearch, HalvingScheduleAndPassCount) {
  // 9 candidates, 6 prompts: R = 4 rounds on 1, 2, 3, 6 prompts; survivors 9, 5, 3, 2.
  CalibrationSetup s = base_setup("none,-,_,:,~,+,/,&,=");
  s.search = Search::Halving;
  std::vector<Item> items;
  for (int i = 0; i < 6; ++i) items.push_back(item("i" + std::to_string(i)));
  std::vector<PromptSpec> specs;
  for (const auto& it : items) specs.push_back({&it, 2, 0});
  // Candidate c scores 0.1 * c on every prompt, except that '=' (c = 8) is poor on prompt 0 and
  // best afterwards, and '&' (c = 7) scores high only on prompt 0.
  auto score = [](size_t c, size_t s_, const Prompt&) {
    if (c == 8) return s_ == 0 ? 0.0 : 1.0;
    if (c == 7) return s_ == 0 ? 0.95 : 0.0;
    return 0.1 * double(c);
  };
  std::map<std::pair<size_t, size_t>, int> calls;
  auto counted = [&](size_t c, size_t s_, const Prompt& p) {
    ++calls[{c, s_}];
    return score(c, s_, p);
  };
  Calibration h = run_calibration(s, specs, counted);
  for (const auto& [k, n] : calls) EXPECT_EQ(n, 1) << k.first << "," << k.second;  // no re-scoring
  // Round 0 (1 prompt): ranks & (0.95), /, +, ~, : (0.6 .. 0.4) kept; _, -, none, = dropped.
  EXPECT_EQ(h.candidates[8].eliminated_in_round, 0);
  EXPECT_EQ(h.candidates[0].eliminated_in_round, 0);
  // Round 1 (2 prompts): / 0.6, + 0.5, & 0.475, ~ 0.4, : 0.3 -> /, +, & kept.
  EXPECT_EQ(h.candidates[4].eliminated_in_round, 1);
  // Round 2 (3 prompts): / 0.6, + 0.5, & 0.3167 -> /, + kept; round 3 (6 prompts): / wins.
  EXPECT_EQ(h.candidates[7].eliminated_in_round, 2);
  EXPECT_EQ(h.candidates[5].eliminated_in_round, -1);
  EXPECT_EQ(h.candidates[h.best].delim.name, "/");
  EXPECT_EQ(h.passes, 9u * 1 + 5 * 1 + 3 * 1 + 2 * 3);
  EXPECT_EQ(h.search["forward_passes"], 23);
  EXPECT_EQ(h.search["exhaustive_passes"], 54);
  EXPECT_EQ(h.search["method"], "halving");
  ASSERT_EQ(h.search["rounds"].size(), 4u);
  EXPECT_EQ(h.search["rounds"][0], (nlohmann::json{{"candidates", 9}, {"prompts", 1}}));
  EXPECT_EQ(h.search["rounds"][3], (nlohmann::json{{"candidates", 2}, {"prompts", 6}}));
  EXPECT_EQ(h.candidates[5].abs.size(), 6u);
  EXPECT_EQ(h.candidates[0].abs.size(), 1u);
  // Exhaustive picks '=' (mean 5/6), which halving dropped after its poor first prompt: the
  // price of the budget, shown here on purpose.
  s.search = Search::Exhaustive;
  Calibration e = run_calibration(s, specs, score);
  EXPECT_EQ(e.passes, 54u);
  EXPECT_EQ(e.candidates[e.best].delim.name, "=");
  // With consistent scores both searches agree.
  auto steady = [](size_t c, size_t, const Prompt&) { return c == 3 ? 0.9 : 0.1; };
  s.search = Search::Halving;
  EXPECT_EQ(run_calibration(s, specs, steady).best, 3u);
  s.search = Search::Exhaustive;
  EXPECT_EQ(run_calibration(s, specs, steady).best, 3u);
}

TEST(CnormSearch, HalvingWithFewCandidates) {
  CalibrationSetup s = base_setup("none");
  s.search = Search::Halving;
  Item a = item("a"), b = item("b"), c = item("c");
  std::vector<PromptSpec> specs = {{&a, 2, 0}, {&b, 2, 0}, {&c, 2, 0}};
  auto one = run_calibration(s, specs, [](size_t, size_t, const Prompt&) { return 0.5; });
  EXPECT_EQ(one.passes, 3u);  // a lone candidate is scored on every prompt
  s.candidates = parse_delimiter_list("none,-");
  auto two = run_calibration(s, specs, [](size_t f, size_t, const Prompt&) { return f * 0.5; });
  EXPECT_EQ(two.passes, 6u);
  EXPECT_EQ(two.best, 1u);
}

TEST(CnormSearch, MeasurePromptMuMassAndTokens) {
  FakeReader r;
  // Prompt "xxDOCDOCDOCDyy": the documents are bytes [2, 12) = tokens [3, 13) (BOS + 1 per byte).
  // Weight 1 on tokens 3 and 12 and 2 on token 8: span mass 4, tenths of 10 tokens: 1 token each.
  r.heads = [](const std::string&, size_t T) -> std::vector<std::vector<float>> {
    std::vector<float> a(T, 0.0f);
    a[3] = 1;
    a[8] = 2;
    a[12] = 1;
    return {a};
  };
  Prompt p{"xxDOCDOCDOCDyy", 2, 12};
  PromptMeasure m = measure_prompt(r, p, AbsOptions{});
  ASSERT_EQ(m.attention.size(), 15u);
  EXPECT_TRUE(m.span_is_context);
  EXPECT_EQ(m.span_begin, 3u);
  EXPECT_EQ(m.span_end, 13u);
  std::vector<double> want = {0.25, 0, 0, 0, 0, 0.5, 0, 0, 0, 0.25};
  ASSERT_EQ(m.mass_by_position.size(), 10u);
  for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(m.mass_by_position[i], want[i], 1e-12) << i;
  // Whole prompt T = 15: mu = (3/14 + 2 * 8/14 + 12/14) / 4 = 31/56; ABS = 1 - 2 |31/56 - 1/2|.
  EXPECT_NEAR(m.mu, 31.0 / 56.0, 1e-7);
  EXPECT_NEAR(m.abs, 1 - 2 * (31.0 / 56.0 - 0.5), 1e-7);
  EXPECT_NEAR(m.abs, prompt_abs(r, p, AbsOptions{}), 1e-12);
  // A chat template hides the span: the whole prompt is used.
  r.mode = "chatml";
  PromptMeasure c = measure_prompt(r, p, AbsOptions{});
  EXPECT_FALSE(c.span_is_context);
  EXPECT_EQ(c.span_end, 15u);
  // 15 tokens in tenths: token t goes to floor(10 t / 15): 3 -> 2, 8 -> 5, 12 -> 8.
  EXPECT_NEAR(c.mass_by_position[2], 0.25, 1e-12);
  EXPECT_NEAR(c.mass_by_position[5], 0.5, 1e-12);
  EXPECT_NEAR(c.mass_by_position[8], 0.25, 1e-12);
  EXPECT_THROW(mass_by_tenth({0, 0, 0}, 0, 3), Error);
  EXPECT_THROW(mass_by_tenth({1, 1}, 2, 2), Error);
}

TEST(CnormSearch, ProfileKeepsPFormatAndName) {
  Profile p;
  p.model_sha256 = "ab";
  p.task = "needle";
  p.p = 0.25;
  p.S = 2;
  CandidateScore a{{"-", "-"}, {0.5, 0.5}, 0.5, 0};
  a.p = 0.25;
  a.name = "-@p=0.25";
  CandidateScore b{{"none", ""}, {0.2}, 0.2, 0};
  b.p = 0;
  b.wrapper = "yaml";
  b.name = "yaml";
  b.eliminated_in_round = 0;
  p.candidates = {a, b};
  p.best = a.delim;
  p.best_name = a.name;
  p.search = {{"method", "halving"}, {"forward_passes", 3}};
  nlohmann::json j = profile_to_json(p);
  EXPECT_EQ(j["best"], "-@p=0.25");
  EXPECT_EQ(j["candidates"][1]["format"], "yaml");
  EXPECT_EQ(j["candidates"][1]["eliminated_in_round"], 0);
  EXPECT_EQ(j["search"]["forward_passes"], 3);
  Profile q = profile_from_json(j, "mem");
  EXPECT_EQ(q.best.name, "-");
  EXPECT_EQ(q.best_name, "-@p=0.25");
  EXPECT_EQ(q.best_wrapper, "");
  EXPECT_EQ(q.candidates[1].wrapper, "yaml");
  EXPECT_EQ(q.candidates[0].p, 0.25);
  Format f = profile_format(q);
  EXPECT_EQ(f.delim.text, "-");
  EXPECT_EQ(f.p, 0.25);
  j["best"] = "yaml";
  Profile w = profile_from_json(j, "mem");
  EXPECT_EQ(w.best_wrapper, "yaml");
  j["candidates"][1]["format"] = "html";
  EXPECT_THROW(profile_from_json(j, "mem"), Error);
}

}  // namespace ragform::cnorm

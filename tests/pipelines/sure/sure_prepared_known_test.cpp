// `sure eval` keeps the Known/Unknown verdict `sure prepare` decided (issue 43: 12 of 80 questions
// moved when eval re-decided it with its own closed-book answers): pairs that carry it
// (Pair::known, written by `sure perturb` from prepare's rows) are labelled with it and get no
// closed-book row; pairs without it are decided as before; --redecide-known decides every question
// again.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/perturb_plan.h"
#include "pipelines/sure/prepare.h"
#include "pipelines/sure/prompts.h"
#include "pipelines/sure/rule_pairs.h"
#include "store/run_store.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::sure {
namespace {

// Four questions, one document each (it holds the answer: Golden), two rule-based kinds. The
// reader knows question 1 closed-book and no other.
std::vector<Pair> pairs() {
  return testing::rule_pairs(4, [](int q) {
    return Document{"Title", "First fact about thing " + std::to_string(q) + ". Answer" +
                                 std::to_string(q) + " is here. Last one."};
  });
}

std::map<std::string, std::string> subsets(const std::vector<Outcome>& out) {
  std::map<std::string, std::string> by;
  for (const Outcome& o : out) by[o.pair_id.substr(0, o.pair_id.rfind('#'))] = to_string(o.subset);
  return by;
}

TEST(SurePreparedKnown, PreparedVerdictsAreKeptAndOthersDecided) {
  testing::FakeReader rd;
  rd.answer = [](const std::string& p) {
    return p.find("thing 1") != std::string::npos ? "answer1" : "no";
  };
  std::vector<Pair> ps = pairs();
  // Prepare decided q0 Known and q1 Unknown: the opposite of this reader's closed-book answers.
  for (Pair& p : ps) {
    if (p.instance == "q0") p.known = true;
    if (p.instance == "q1") p.known = false;
  }
  const PromptSet prompts = load_prompts();
  auto dir = testing::temp_dir("sure-prepared-known");
  store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::create);
  for (bool redecide : {false, true}) {
    EvalRunOptions o;
    o.eval.redecide_known = redecide;
    std::vector<std::string> notes;
    o.hooks.note = [&](const std::string& line) { notes.push_back(line); };
    const EvalSummary s = run_eval(rd, st, prompts, ps, o);
    auto by = subsets(s.outcomes);
    ASSERT_EQ(s.outcomes.size(), ps.size());
    EXPECT_EQ(by["q0"], redecide ? "U-G" : "K-G");
    EXPECT_EQ(by["q1"], redecide ? "K-G" : "U-G");
    EXPECT_EQ(by["q2"], "U-G");  // no verdict in the pairs: this run's closed-book answer
    EXPECT_EQ(by["q3"], "U-G");
    // Closed-book rows only for the questions decided here.
    std::vector<std::string> closed;
    for (const auto& r : st.results(s.run))
      if (r.variant == "closed-book") closed.push_back(r.instance);
    EXPECT_EQ(closed.size(), redecide ? 4u : 2u);
    for (const auto& r : st.results(s.run))
      if (r.variant != "closed-book" && r.variant != "original") {
        const std::string q = r.instance.substr(0, r.instance.rfind('#'));
        EXPECT_EQ(r.extra.value("known_from", ""),
                  (q == "q0" || q == "q1") && !redecide ? "prepare" : "closed-book")
            << r.instance;
      }
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("2 of 4 questions carry sure prepare's Known/Unknown verdict"),
              std::string::npos)
        << notes[0];
    EXPECT_NE(notes[0].find(redecide ? "decided again" : "kept"), std::string::npos) << notes[0];
    // Resumed: nothing new, the same labels (read back from the store).
    const EvalSummary again = run_eval(rd, st, prompts, ps, o);
    EXPECT_EQ(again.run, s.run);
    EXPECT_EQ(again.stats.generated, 0);
    EXPECT_EQ(subsets(again.outcomes), by);
  }
}

TEST(SurePreparedKnown, PairsCarryTheVerdictThroughJson) {
  Pair p = pairs()[0];
  EXPECT_FALSE(pair_to_json(p).contains("known"));  // older pair files hash as before
  p.known = false;
  const nlohmann::json j = pair_to_json(p);
  EXPECT_EQ(j["known"], false);
  EXPECT_EQ(pair_from_json(j, "x").known, std::optional<bool>(false));
  nlohmann::json bad = j;
  bad["known"] = "yes";
  try {
    pair_from_json(bad, "pairs.jsonl:3");
    FAIL() << "a non-boolean known was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("field 'known'"), std::string::npos) << e.what();
  }
}

TEST(SurePreparedKnown, PreparedKnownReadsPrepareRows) {
  auto dir = testing::temp_dir("sure-prepared-known-file");
  const auto path = dir / "prepared.jsonl";
  {
    std::ofstream f(path);
    f << R"({"id": "q0|K-G", "question": "a?", "answers": ["x"], "ctxs": [], "known": true})"
      << "\n"
      << R"({"id": "q1|U-N", "question": "b?", "answers": ["y"], "ctxs": [], "known": false})"
      << "\n"
      << R"({"id": "plain", "question": "c?", "answers": ["z"], "ctxs": []})"
      << "\n";
  }
  const std::map<std::string, bool> k = prepared_known(path.string());
  EXPECT_EQ(k, (std::map<std::string, bool>{{"q0|K-G", true}, {"q1|U-N", false}}));
}

}  // namespace
}  // namespace ragform::sure

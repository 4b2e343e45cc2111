// Reading pairs JSONL (pairs.h): a bad field is an error naming the file and line, never a value
// changed on the way in.
#include "pipelines/sure/pairs.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/prompts.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::sure {
namespace {

std::string read_error(const std::string& jsonl) {
  const auto path = ragform::testing::temp_dir("sure_pairs") / "pairs.jsonl";
  ragform::testing::write_file(path, jsonl);
  try {
    read_pairs(path.string());
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// A valid pair (JSON document formatting of one passage).
Pair sample_pair() {
  Pair p;
  p.id = "q1#0";
  p.perturbation = "format/json";
  p.question = "Where?";
  p.answers = {"Paris"};
  p.title = "T";
  p.original = "In Paris.";
  p.perturbed = "{\"text\": \"In Paris.\"}";
  return p;
}

// A valid pair's JSON line with its "doc" field replaced by `doc` (JSON text).
std::string pair_line(const std::string& doc) {
  nlohmann::json j = nlohmann::json::parse(pair_to_json(sample_pair()).dump());
  j["doc"] = nlohmann::json::parse(doc);
  return j.dump();
}

TEST(SurePairs, DocIndexOutOfIntRangeIsAnError) {
  const std::string ok = pair_line("2147483647");
  const auto path = ragform::testing::temp_dir("sure_pairs_ok") / "pairs.jsonl";
  ragform::testing::write_file(path, ok + "\n");
  std::vector<Pair> pairs = read_pairs(path.string());
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].doc, 2147483647);

  std::string err = read_error("\n" + pair_line("4294967296") + "\n");
  EXPECT_NE(err.find("pairs.jsonl:2"), std::string::npos) << err;
  EXPECT_NE(err.find("field 'doc': 4294967296 is out of range for an int"), std::string::npos)
      << err;
  err = read_error(pair_line("-2147483649") + "\n");
  EXPECT_NE(err.find("field 'doc': -2147483649 is out of range for an int"), std::string::npos)
      << err;
}

// The pairs are part of a sure eval run's identity: a store evaluated on one pairs file and then
// on another with the same instance ids holds two runs, never one whose rows were skipped.
// Issue 40, third pass: a question's pairs with different verdicts were accepted and the first
// pair read decided for all.
TEST(SurePairs, AQuestionsPairsCarryOneVerdict) {
  Pair a = sample_pair(), b = sample_pair();
  a.instance = b.instance = "q1";
  b.id = "q1#1";
  EXPECT_NO_THROW(check_known_agrees({a, b}));  // neither has one
  a.known = b.known = true;
  EXPECT_NO_THROW(check_known_agrees({a, b}));
  b.known = false;
  try {
    check_known_agrees({a, b});
    ADD_FAILURE() << "different verdicts accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "question 'q1': pair 'q1#0' has known: true, pair 'q1#1' has known: false"),
              std::string::npos)
        << e.what();
  }
  b.known.reset();
  EXPECT_THROW(check_known_agrees({a, b}), Error);
  b.instance = "q2";  // another question may say otherwise
  EXPECT_NO_THROW(check_known_agrees({a, b}));
  // Read from a file, the refusal names both lines.
  a.instance = "q1";
  a.known = true;
  Pair c = a;
  c.id = "q1#2";
  c.known = false;
  const std::string m = read_error(pair_to_json(a).dump() + "\n\n" + pair_to_json(c).dump() + "\n");
  EXPECT_NE(m.find("pairs.jsonl:3: sure pairs: question 'q1': pair 'q1#0' has known: true, pair "
                   "'q1#2' has known: false"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("(the first of them on line 1)"), std::string::npos) << m;
}

// Issue 40, pass 20: a pair is what pair_to_json writes: another key is refused (a misspelt
// "knwon" counted the pair as Unknown), a null one is a key not given.
TEST(SurePairs, AKeyAPairDoesNotHaveIsRefusedAndNullIsAbsent) {
  nlohmann::json j = nlohmann::json::parse(pair_to_json(sample_pair()).dump());
  j["knwon"] = true;
  try {
    pair_from_json(j, "pairs.jsonl:3");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pairs.jsonl:3: 'knwon' is not supported (a pair takes"),
              std::string::npos)
        << e.what();
  }
  j.erase("knwon");
  j["title"] = nullptr;
  j["note"] = nullptr;
  j["other"] = nullptr;
  EXPECT_EQ(pair_from_json(j, "t").title, "");
}

TEST(SurePairs, TheirIdentityIsPartOfTheEvalRun) {
  // As read (pair_from_json fills what the perturbation implies: category, embeds_title).
  const auto read_back = [](const Pair& p) {
    return pair_from_json(nlohmann::json::parse(pair_to_json(p).dump()), "t");
  };
  const Pair a = read_back(sample_pair());
  Pair b = a;
  b.perturbed = "{\"text\": \"In Rome.\"}";
  const std::string ha = pairs_sha256({a}), hb = pairs_sha256({b});
  EXPECT_EQ(ha.size(), 64u);
  EXPECT_NE(ha, hb);
  EXPECT_NE(pairs_sha256({a, b}), pairs_sha256({b, a}));  // order is part of the input
  // Read back from its JSON line, a pair has the same identity (file, stdin and Python agree).
  EXPECT_EQ(pairs_sha256({read_back(a)}), ha);

  PromptSet ps = load_prompts();
  EvalOptions eo;
  EXPECT_NE(store::run_key(eval_run_config(eo, ps, ha)),
            store::run_key(eval_run_config(eo, ps, hb)));
  EXPECT_EQ(store::run_key(eval_run_config(eo, ps, ha)),
            store::run_key(eval_run_config(eo, ps, ha)));
  EXPECT_EQ(eval_run_config(eo, ps, ha).config.at("pairs_sha256"), ha);
}

// Issue 40, third pass: a --prompts directory is read file by file up to kMaxTextFileBytes (a
// template linked to /dev/zero was read until the memory ran out), and a version number too long
// for an int is not a version (std::stoi's out_of_range ended the run as "ragform: stoi").
TEST(SurePrompts, EndlessTemplatesAndHugeVersionsAreRefused) {
  namespace fs = std::filesystem;
  const fs::path dir = testing::temp_dir("sure_prompts_bounds");
  for (const auto& e : fs::directory_iterator(default_prompts_dir()))
    fs::copy_file(e.path(), dir / e.path().filename());
  testing::write_file(dir / "nli.v99999999999.txt", "ignored");
  const PromptSet ps = load_prompts(dir.string());
  EXPECT_EQ(ps.get("nli"), load_prompts().get("nli"));
  fs::create_symlink("/dev/zero", dir / "judge.v999999.txt");
  try {
    load_prompts(dir.string());
    FAIL() << "no error for a template linked to /dev/zero";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the SURE prompt template is over the limit of 67108864"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ragform::sure

// SURE end to end through the CLI on the native engine with the one real trained fixture model
// (stories260K: it cannot answer NQ or judge entailment — this checks mechanics, not quality):
// perturb (rule-based without a reader; all 15 with -m), filter, eval (run store, resume), sig,
// attention and export on short NQ passages.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"
#include "pipelines/sure/nq_pairs_input.h"
#include "pipelines/sure/perturb_rules.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;
using ragform::testing::json_lines;
using ragform::testing::quoted;
using ragform::testing::read_file;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

TEST(SureCli, EndToEndOnStories260K) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("sure_cli");
  // Three NQ questions, each with its gold passage (first two sentences) and the next question's
  // passage as noise: the fixture model's context is small.
  std::string input = ragform::testing::nq_pairs_input(nq, 3);
  write_file(dir / "qa.jsonl", input);

  // Rule-based kinds need no reader; reader kinds are skipped with a note.
  auto r = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") +
                       " --kinds logic,format,metadata");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rule_pairs = json_lines(r.out);
  EXPECT_EQ(rule_pairs.size(), 3u * 2 * 10);
  EXPECT_NE(r.err.find("skipping logic/llm-ranked"), std::string::npos) << r.err;
  // A kind named on its own without its reader is refused, as Python refuses it (one policy, in
  // the library: sure::kinds_to_run); through its category it is skipped with the note.
  auto named = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") +
                           " --kinds logic/reverse,style/simple");
  EXPECT_EQ(named.exit_code, 2) << named.err;
  EXPECT_EQ(named.err.rfind("ragform: --kinds: style/simple needs a reader: give "
                            "--perturb-model, -m or --reader openai",
                            0),
            0u)
      << named.err;
  auto category = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") +
                              " --kinds logic/reverse,style");
  EXPECT_EQ(category.exit_code, 0) << category.err;
  EXPECT_NE(category.err.find("skipping style/simple"), std::string::npos) << category.err;
  for (const auto& p : rule_pairs)
    for (const char* k : {"id", "perturbation", "original", "perturbed", "answers"})
      EXPECT_TRUE(p.contains(k)) << k;

  // All 15 with the fixture model as both readers.
  r = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") + " -m " + quoted(model) +
                  " --ctx 1024 --max-tokens 48");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto all_pairs = json_lines(r.out);
  ASSERT_EQ(all_pairs.size(), 3u * 2 * 15);
  std::set<std::string> names;
  for (const auto& p : all_pairs) names.insert(p["perturbation"].get<std::string>());
  EXPECT_EQ(names.size(), 15u);
  write_file(dir / "pairs.jsonl", r.out);

  r = run_ragform("sure filter --input " + quoted(dir / "pairs.jsonl") + " -m " + quoted(model) +
                  " --ctx 1024 --counts " + quoted(dir / "counts.json") + " --rejected " +
                  quoted(dir / "rejected.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto counts = nlohmann::json::parse(read_file(dir / "counts.json"));
  EXPECT_EQ(counts["input"], 90);
  EXPECT_EQ(counts["input"].get<int>(),
            counts["kept"].get<int>() +
                static_cast<int>(json_lines(read_file(dir / "rejected.jsonl")).size()));
  // Every kind is NLI-checked by default (SURE 3.4): each pair that passed the answer check.
  EXPECT_EQ(counts["nli_checked"].get<int>(),
            counts["input"].get<int>() - counts["failed_perturbation"].get<int>() -
                counts["golden_lost_answer"].get<int>() - counts["noise_gained_answer"].get<int>());
  EXPECT_GT(counts["nli_checked"].get<int>(), 0);

  // Evaluate the rule-based pairs (kept by the answer check), resumable.
  write_file(dir / "rule_pairs.jsonl", [&] {
    std::string s;
    for (const auto& p : rule_pairs) s += p.dump() + "\n";
    return s;
  }());
  std::string ev = "sure eval --input " + quoted(dir / "rule_pairs.jsonl") + " -m " +
                   quoted(model) + " --ctx 1024 -n 8 --store " + quoted(dir / "run.sqlite");
  r = run_ragform(ev);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto report = json_lines(r.out);
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report[0]["scope"], "overall");
  EXPECT_EQ(report[0]["n"], 60);
  r = run_ragform(ev);  // resume: nothing recomputed, same report
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(" 0 generated"), std::string::npos) << r.err;
  EXPECT_EQ(json_lines(r.out), report);
  {
    store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::read_only);
    auto c = st.counts(st.runs().at(0).id);
    EXPECT_EQ(c.rows, 3 + 6 + 60);  // closed-book + originals + perturbed
  }

  r = run_ragform("sure sig --stores " + quoted(dir / "run.sqlite") + " --pairs " +
                  quoted(dir / "rule_pairs.jsonl") + " -N 2 -o " + quoted(dir / "sig.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_ragform("sure attention --input " + quoted(dir / "rule_pairs.jsonl") + " -m " +
                  quoted(model) + " --ctx 1024 --store " + quoted(dir / "run.sqlite") +
                  " --per-group 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto att = nlohmann::json::parse(r.out);
  ASSERT_EQ(att["groups"].size(), 3u);
  // The default draws up to 3 Golden pairs per feature category (logic, format, metadata: 3
  // golden documents x 2, 4 and 4 kinds); stories260K is robust everywhere, so --sample-by
  // outcome draws 3 Robust pairs and nothing else. The sampling is printed with the numbers.
  EXPECT_EQ(att["sampling"]["by"], "category");
  EXPECT_EQ(att["sampling"]["per_group"], 3);
  EXPECT_EQ(att["sampling"]["drawn"],
            nlohmann::json({{"format", 3}, {"logic", 3}, {"metadata", 3}}));
  auto measured = [](const nlohmann::json& a) {
    int64_t n = 0;
    for (const auto& g : a["groups"]) n += g["n"].get<int64_t>();
    return n;
  };
  EXPECT_EQ(measured(att) + std::stoll(r.err.substr(r.err.rfind("measured, ") + 10)), 9);
  r = run_ragform("sure attention --input " + quoted(dir / "rule_pairs.jsonl") + " -m " +
                  quoted(model) + " --ctx 1024 --store " + quoted(dir / "run.sqlite") +
                  " --per-group 3 --sample-by outcome");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto by_outcome = nlohmann::json::parse(r.out);
  EXPECT_EQ(by_outcome["sampling"]["by"], "outcome");
  EXPECT_EQ(by_outcome["sampling"]["drawn"], nlohmann::json({{"Robust", 3}}));
  EXPECT_EQ(
      by_outcome["groups"][1]["n"].get<int64_t>() + by_outcome["groups"][2]["n"].get<int64_t>(), 0);
  EXPECT_EQ(measured(by_outcome) + std::stoll(r.err.substr(r.err.rfind("measured, ") + 10)), 3);
  r = run_ragform("sure export --store " + quoted(dir / "run.sqlite") + " --sft " +
                  quoted(dir / "sft.jsonl") + " --dpo " + quoted(dir / "dpo.jsonl"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_lines(read_file(dir / "sft.jsonl")).size(),
            json_lines(read_file(dir / "dpo.jsonl")).size());
  // Bad input is a clear error with file and line.
  write_file(dir / "bad.jsonl", "{\"id\": \"x\"}\n");
  r = run_ragform("sure eval --input " + quoted(dir / "bad.jsonl") + " -m " + quoted(model) +
                  " --store " + quoted(dir / "b.sqlite"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.jsonl:1"), std::string::npos) << r.err;
}

// The reader set-up shared by the reader-using verbs: a clear usage error (exit 2), before any
// input is read, when no reader is given, for an unknown --reader, and for --reader openai
// without --base-url.
TEST(SureCli, ReaderFlagUsageErrors) {
  auto dir = temp_dir("sure_cli_usage");
  write_file(dir / "pairs.jsonl", "");
  write_file(dir / "qa.jsonl", "");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"sure attention --input " + quoted(dir / "pairs.jsonl") + " --store " +
           quoted(dir / "none.sqlite"),
       "sure attention: needs a reader"},  // before the (missing) store is opened
      {"sure eval --input " + quoted(dir / "pairs.jsonl") + " --store " + quoted(dir / "r.sqlite"),
       "sure eval: needs a reader: -m MODEL.gguf, or --reader openai --base-url URL"},
      {"sure eval --input " + quoted(dir / "pairs.jsonl") + " --store " + quoted(dir / "r.sqlite") +
           " --reader openai",
       "--base-url: --reader openai needs --base-url URL"},
      {"sure eval --input " + quoted(dir / "pairs.jsonl") + " --store " + quoted(dir / "r.sqlite") +
           " --reader foo -m x.gguf",
       "--reader: 'foo' is not native or openai"},
      {"sure oracle --input " + quoted(dir / "qa.jsonl"),
       "sure oracle: needs a reader: -m MODEL.gguf, or --reader openai --base-url URL"},
  };
  for (const auto& c : cases) {
    auto r = run_ragform(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
}

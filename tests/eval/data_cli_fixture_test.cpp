// `ragform data check` on every QA file of ../shared/data: exit 0, the right format and row count
// (MANIFEST.md), and per-row counts that match the files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using ragform::testing::run_ragform;

nlohmann::json check(const std::filesystem::path& p) {
  auto r = run_ragform("data check --json '" + p.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(DataCliFixture, EveryDataFileChecksClean) {
  struct Case {
    const char* rel;
    const char* format;
    int rows;
  };
  const Case cases[] = {
      {"data/lost-in-the-middle/nq-open-oracle.jsonl.gz", "litm-qa", 2655},
      {"data/lost-in-the-middle/kv-retrieval-75_keys.jsonl.gz", "litm-kv", 500},
      {"data/nq-open/NQ-open.dev.jsonl", "nq-open", 3610},
      {"data/hotpotqa-distractor/dev.jsonl", "hotpotqa", 300},
      {"data/hotpotqa-distractor/train.jsonl", "hotpotqa", 300},
      {"data/poisonedrag/nq.json", "poisonedrag", 100},
      {"data/poisonedrag/hotpotqa.json", "poisonedrag", 100},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.rel);
    REQUIRE_SHARED(path, c.rel);
    auto o = check(path);
    EXPECT_EQ(o["format"], c.format);
    EXPECT_EQ(o["rows"], c.rows);
    EXPECT_EQ(o["bad_rows"], 0);
    EXPECT_EQ(o["duplicate_ids"], 0);
  }
}

TEST(DataCliFixture, CountsMatchTheFiles) {
  REQUIRE_SHARED(litm, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto a = check(litm);
  EXPECT_EQ(a["gzip"], true);
  EXPECT_EQ(a["fields"]["nq_annotated_gold"], 2655);
  EXPECT_EQ(a["contexts_per_row"]["min"], 1);
  EXPECT_EQ(a["contexts_per_row"]["max"], 1);
  EXPECT_EQ(a["answers_per_row"]["max"], 13);
  EXPECT_NEAR(a["answers_per_row"]["mean"].get<double>(), 4654.0 / 2655.0, 1e-12);

  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  auto h = check(hotpot);
  EXPECT_EQ(h["contexts_per_row"]["min"], 2);
  EXPECT_EQ(h["contexts_per_row"]["max"], 10);
  EXPECT_NEAR(h["contexts_per_row"]["mean"].get<double>(), 2987.0 / 300.0, 1e-12);
  EXPECT_EQ(h["gold_contexts_per_row"]["min"], 2);
  EXPECT_EQ(h["gold_contexts_per_row"]["max"], 2);
  EXPECT_NEAR(h["supporting_facts_per_row"]["mean"].get<double>(), 735.0 / 300.0, 1e-12);
  EXPECT_EQ(h["labels"]["type=bridge"], 230);
  EXPECT_EQ(h["labels"]["type=comparison"], 70);

  REQUIRE_SHARED(kv, "data/lost-in-the-middle/kv-retrieval-75_keys.jsonl.gz");
  auto k = check(kv);
  EXPECT_EQ(k["kv_records_per_row"]["min"], 75);
  EXPECT_EQ(k["kv_records_per_row"]["max"], 75);

  REQUIRE_SHARED(poison, "data/poisonedrag/nq.json");
  auto p = check(poison);
  EXPECT_EQ(p["layout"], "json-object");
  EXPECT_EQ(p["adversarial_contexts_per_row"]["min"], 5);
}

TEST(DataCliFixture, HumanReport) {
  REQUIRE_SHARED(path, "data/nq-open/NQ-open.dev.jsonl");
  auto r = run_ragform("data check '" + path.string() + "'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("rows                          3610 good, 0 bad, 0 blank lines"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("fields (rows having them)     answer 3610, question 3610"),
            std::string::npos)
      << r.err;
}

}  // namespace

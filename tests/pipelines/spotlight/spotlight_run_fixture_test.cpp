// The Spotlight rows the demo stores (pipelines/spotlight/run.h) against `ragform spotlight eval`:
// on the first 30 HotpotQA dev questions with GloVe, the mean recall@6 of every method in the
// store equals the recall the command prints, the spotlight rows carry the selection with its
// matches, and a second call reuses every row.
#include "pipelines/spotlight/run.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>

#include "eval/datasets.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace ragform;

TEST(SpotlightRuns, MatchesSpotlightEvalAndResumes) {
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  eval::LoadOptions lo;
  lo.limit = 30;
  auto recs = eval::load_qa_file(hotpot.string(), lo).records;
  auto wv = spotlight::WordVectors::load(glove.string());
  spotlight::StaticEncoder enc(wv);
  fs::path db = ragform::testing::temp_dir("spotlight-runs") / "s.sqlite";
  store::RunStore st(db, store::RunStore::Mode::create, store::RunStore::Durability::normal);
  spotlight::RunOptions opt;
  opt.recall_ks = {2, 6};
  auto stats = spotlight::run_eval(enc, st, recs, opt);
  EXPECT_EQ(stats.questions + stats.skipped, 30u);
  EXPECT_EQ(stats.written, stats.questions * 5);

  auto r = ragform::testing::run_ragform("spotlight eval --input '" + hotpot.string() +
                                         "' --vectors '" + glove.string() + "' --limit 30 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  size_t compared = 0;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") != "recall" || j.value("group", "") != "main" || j.value("K", 0) != 6)
      continue;
    std::string key = j["method"].get<std::string>() + "@6";
    ASSERT_TRUE(stats.mean_recall.count(key)) << key;
    EXPECT_NEAR(stats.mean_recall[key], j["recall"].get<double>(), 1e-8) << key;
    ++compared;
  }
  EXPECT_EQ(compared, 5u);

  // The spotlight rows: K = 6 selected sentences, each match inside its sentence.
  size_t rows = 0;
  st.for_each_result(stats.run, [&](const store::Result& row) {
    if (row.variant != "spotlight") return;
    ++rows;
    ASSERT_TRUE(row.extra.contains("selected"));
    EXPECT_EQ(row.extra["selected"].size(), 6u) << row.instance;
    EXPECT_NE(row.prompt.find("Question: "), std::string::npos);
    for (const auto& s : row.extra["selected"]) {
      std::string text = s["text"].get<std::string>();
      for (const auto& m : s["matches"]) {
        size_t b = m["begin"].get<size_t>(), e = m["end"].get<size_t>();
        ASSERT_LE(e, text.size());
        EXPECT_EQ(text.substr(b, e - b), m["c"].get<std::string>());
      }
    }
  });
  EXPECT_EQ(rows, stats.questions);

  auto again = spotlight::run_eval(enc, st, recs, opt);
  EXPECT_EQ(again.run, stats.run);
  EXPECT_EQ(again.written, 0u);
  EXPECT_EQ(again.reused, stats.written);
  EXPECT_EQ(again.mean_recall, stats.mean_recall);
}

// `ragform spotlight eval --store` runs the same runner: a second identical call computes nothing
// (every row is reused), and its printed means equal the store-less command's.
TEST(SpotlightRuns, EvalStoreFlagResumes) {
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  const fs::path db = ragform::testing::temp_dir("spotlight-store-flag") / "s.sqlite";
  const std::string base = "spotlight eval --input '" + hotpot.string() + "' --vectors '" +
                           glove.string() + "' --json --store '" + db.string() + "'";
  auto first = ragform::testing::run_ragform(base + " --limit 20");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto second = ragform::testing::run_ragform(base + " --limit 20");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  auto plain =
      ragform::testing::run_ragform("spotlight eval --input '" + hotpot.string() + "' --vectors '" +
                                    glove.string() + "' --limit 20 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::map<std::string, double> stored, printed;
  for (const auto& j : ragform::testing::json_lines(second.out))
    if (j.value("kind", "") == "recall") stored[j["method"].get<std::string>()] = j["recall"];
  for (const auto& j : ragform::testing::json_lines(plain.out))
    if (j.value("kind", "") == "recall" && j.value("group", "") == "main")
      printed[j["method"].get<std::string>()] = j["recall"];
  ASSERT_EQ(stored.size(), 5u) << second.out;
  for (const auto& [m, v] : stored) EXPECT_NEAR(v, printed.at(m), 1e-8) << m;
  // The second call computed nothing: every row the first wrote is reused.
  // "..., N rows written, M reused" on stderr.
  auto counts = [](const std::string& err) {
    size_t written = 0, reused = 0;
    const auto at = err.rfind(", ", err.find(" rows written, "));
    EXPECT_NE(at, std::string::npos) << err;
    if (at != std::string::npos) {
      EXPECT_EQ(std::sscanf(err.c_str() + at, ", %zu rows written, %zu reused", &written, &reused),
                2)
          << err;
    }
    return std::make_pair(written, reused);
  };
  const size_t first_written = counts(first.err).first;
  EXPECT_EQ(counts(second.err), std::make_pair(size_t(0), first_written));
  EXPECT_GT(first_written, 0u);
  // --sweeps and --generate are not stored: refused with --store.
  auto bad = ragform::testing::run_ragform(base + " --limit 2 --sweeps");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

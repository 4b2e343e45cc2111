// Metrics on real NQ-open data. Expected totals were computed with lost-in-the-middle's
// src/lost_in_the_middle/metrics.py (normalize_answer, best_subspan_em; Python 3.11, regex)
// plus the SQuAD v2.0 script's compute_f1 over the same files.
#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "text/metrics.h"

namespace ragform::text {
namespace {

std::vector<nlohmann::json> read_gz_jsonl(const std::filesystem::path& p) {
  gzFile f = gzopen(p.string().c_str(), "rb");
  EXPECT_NE(f, nullptr) << p;
  std::string text;
  if (f) {
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    gzclose(f);
  }
  std::vector<nlohmann::json> rows;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) rows.push_back(nlohmann::json::parse(text.substr(start, nl - start)));
    start = nl + 1;
  }
  return rows;
}

TEST(MetricsFixture, NqOracleTotalsMatchThePythonReference) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto rows = read_gz_jsonl(path);
  ASSERT_EQ(rows.size(), 2655u);
  double sub_passage = 0, em_title = 0, f1_title = 0;
  for (const auto& row : rows) {
    auto answers = row.at("answers").get<std::vector<std::string>>();
    const auto& ctx = row.at("ctxs").at(0);
    sub_passage += substring_match(ctx.at("text").get<std::string>(), answers, kSquadReference);
    std::string title = ctx.at("title").get<std::string>();
    em_title += exact_match(title, answers, kSquadReference);
    f1_title += token_f1(title, answers, kSquadReference);
    // Every gold answer matches itself and itself inside a sentence.
    for (const auto& a : answers) {
      EXPECT_EQ(exact_match(a, answers), 1.0) << a;
      EXPECT_EQ(substring_match("I believe it is " + a + ".", answers), 1.0) << a;
    }
  }
  // Reference: every oracle passage contains a gold answer (best_subspan_em = 1 for all 2655);
  // the passage title as a prediction scores EM 229 and F1 sum 407.6965367965.
  EXPECT_EQ(sub_passage, 2655.0);
  EXPECT_EQ(em_title, 229.0);
  EXPECT_NEAR(f1_title, 407.6965367965, 1e-8);
}

TEST(MetricsFixture, NqOpenDevAnswersAreConsistent) {
  REQUIRE_SHARED(path, "data/nq-open/NQ-open.dev.jsonl");
  std::string text = testing::read_file(path);
  size_t rows = 0;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    if (nl > start) {
      auto row = nlohmann::json::parse(text.substr(start, nl - start));
      auto answers = row.at("answer").get<std::vector<std::string>>();
      ++rows;
      for (const auto& a : answers) {
        AnswerScores s = score_answer(a, answers);
        EXPECT_EQ(s.exact_match, 1.0) << a;
        EXPECT_EQ(s.substring_match, 1.0) << a;
        EXPECT_EQ(s.token_f1, 1.0) << a;
        // Normalisation is idempotent.
        EXPECT_EQ(normalize_answer(normalize_answer(a)), normalize_answer(a)) << a;
      }
    }
    start = nl + 1;
  }
  EXPECT_EQ(rows, 3610u);
}

}  // namespace
}  // namespace ragform::text

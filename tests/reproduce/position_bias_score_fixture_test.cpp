// `ragform position-bias --score` (reproduce/calibrated_scores.h): HotpotQA records written back
// with each paragraph's calibrated relevance as its score, the ranking those scores give is the
// calibrated ranking `position-bias --rank` stores, and the file loads as the same records.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;

TEST(PositionBiasScore, ScoresGiveTheCalibratedRanking) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  const auto dir = temp_dir("position_bias_score");
  auto c = run_ragform("position-bias -m " + quoted(model) + " --task needle -k 10 --limit 2 -o " +
                       quoted(dir / "curve.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string common =
      " -m " + quoted(model) + " --ctx 8192 --limit 3 --bias " + quoted(dir / "curve.json");
  auto s = run_ragform("position-bias --score " + quoted(hotpot) + common + " -o " +
                       quoted(dir / "scored.jsonl"));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto r = run_ragform("position-bias --rank " + quoted(hotpot) + common + " --store " +
                       quoted(dir / "rank.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  ragform::eval::LoadOptions lo;
  lo.limit = 3;
  const auto orig = ragform::eval::load_qa_file(hotpot.string(), lo).records;
  const auto scored = ragform::eval::load_qa_file((dir / "scored.jsonl").string()).records;
  ASSERT_EQ(scored.size(), 3u);
  ragform::store::RunStore st(dir / "rank.sqlite", ragform::store::RunStore::Mode::read_only);
  const auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 3u);
  for (size_t i = 0; i < scored.size(); ++i) {
    SCOPED_TRACE(scored[i].id);
    EXPECT_EQ(scored[i].id, orig[i].id);
    EXPECT_EQ(scored[i].question, orig[i].question);
    ASSERT_EQ(scored[i].ctxs.size(), orig[i].ctxs.size());
    std::vector<double> sc;
    for (size_t d = 0; d < scored[i].ctxs.size(); ++d) {
      EXPECT_EQ(scored[i].ctxs[d].text, orig[i].ctxs[d].text);
      EXPECT_EQ(scored[i].ctxs[d].isgold, orig[i].ctxs[d].isgold);
      ASSERT_TRUE(scored[i].ctxs[d].score.has_value());
      sc.push_back(*scored[i].ctxs[d].score);
    }
    // Descending score, ties in file order: the stored calibrated ranking.
    std::vector<size_t> order(sc.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sc[a] > sc[b]; });
    const auto row = std::find_if(rows.begin(), rows.end(),
                                  [&](const auto& x) { return x.instance == scored[i].id; });
    ASSERT_NE(row, rows.end());
    EXPECT_EQ(json(order), row->extra["calibrated"]);
  }
  // Without a curve there is nothing to calibrate with.
  EXPECT_EQ(
      run_ragform("position-bias --score " + quoted(hotpot) + " -m " + quoted(model)).exit_code, 2);
}

}  // namespace

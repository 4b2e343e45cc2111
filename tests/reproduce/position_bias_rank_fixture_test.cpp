// `ragform position-bias --rank` (reproduce/rank_recall.h) on stories260K with records the test
// writes: the raw ranking is the one `ragform attention --doc-spans` gives layer by layer, the
// calibrated one moves a slot with a large bias to the end, BM25 finds the paragraph sharing the
// question's words, recall@K is 1, a record without K paragraphs is left out, a rerun resumes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;

json record(const std::string& id, const std::string& name, size_t n_ctxs) {
  const std::vector<std::string> others = {"The dog ran to the big tree.",
                                           "It was a sunny day at the park.",
                                           "Mom made a cake for the party."};
  json ctxs = json::array();
  for (size_t i = 0; i + 1 < n_ctxs; ++i)
    ctxs.push_back({{"title", "Story"}, {"text", others[i]}, {"isgold", false}});
  // The gold paragraph in the middle slot of three.
  ctxs.insert(ctxs.begin() + long(std::min<size_t>(1, ctxs.size())),
              json{{"title", "Kite"}, {"text", name + " owned the red kite."}, {"isgold", true}});
  return {{"id", id}, {"question", "Who owned the red kite?"}, {"answers", {name}}, {"ctxs", ctxs}};
}

TEST(PositionBiasRank, RanksByAttentionCalibratedAndBm25) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_rank");
  write_file(dir / "records.jsonl", record("a", "Lily", 3).dump() + "\n" +
                                        record("short", "Sue", 2).dump() + "\n" +
                                        record("b", "Tom", 3).dump() + "\n");
  // Slot 0's bias exceeds any mass a document can get: calibrated, it always ranks last.
  write_file(dir / "curve.json", R"({"curve": [1.0, 0.0, 0.0]})");
  const std::string args = "position-bias -m " + quoted(model) + " --rank " +
                           quoted(dir / "records.jsonl") + " --bias " + quoted(dir / "curve.json") +
                           " --store " + quoted(dir / "run.sqlite") + " --json";
  auto r = run_ragform(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["records"], 2);
  EXPECT_EQ(j["skipped"], 1);
  EXPECT_NE(r.err.find("1 records left out: not 3 paragraphs"), std::string::npos) << r.err;
  for (const char* m : {"raw", "calibrated", "bm25"}) {
    ASSERT_EQ(j["recall"][m].size(), 3u) << m;
    EXPECT_EQ(j["recall"][m][2], 1.0) << m;
  }
  EXPECT_EQ(j["recall"]["bm25"][0], 1.0);  // only the gold paragraph has "owned", "red", "kite"

  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  const auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    EXPECT_EQ(row.extra["gold"], json::array({1}));
    EXPECT_EQ(row.extra["calibrated"][2], 0) << row.instance;
    EXPECT_EQ(row.extra["bm25"][0], 1) << row.instance;
  }

  // The raw ranking of record "a" from `ragform attention --doc-spans`, layer by layer (the mean
  // over stories260K's five layers).
  const auto& row = rows[0].instance == "a" ? rows[0] : rows[1];
  write_file(dir / "prompt.txt", row.prompt);
  std::string spans;
  for (const char* text :
       {"The dog ran to the big tree.", "Lily owned the red kite.", "It was a sunny day"}) {
    const size_t at = row.prompt.find(text);
    ASSERT_NE(at, std::string::npos) << text;
    const size_t end = std::string(text) == "It was a sunny day"
                           ? at + std::string("It was a sunny day at the park.").size()
                           : at + std::string(text).size();
    spans += (spans.empty() ? "" : ",") + std::to_string(at) + ":" + std::to_string(end);
  }
  std::vector<double> mass(3, 0.0);
  for (int l = 0; l < 5; ++l) {
    auto a = run_ragform("attention -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                         " --json --layer " + std::to_string(l) + " --doc-spans " + spans);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const json aj = json::parse(a.out);
    for (size_t d = 0; d < 3; ++d) mass[d] += aj["documents"][d]["mass"].get<double>() / 5;
  }
  std::vector<size_t> order(3);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return mass[x] > mass[y]; });
  EXPECT_EQ(row.extra["raw"], json(order));

  // A rerun reads both rows from the store.
  auto again = run_ragform(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("resuming run 1: 2 of 2 records already stored"), std::string::npos)
      << again.err;
  EXPECT_EQ(json::parse(again.out), j);

  auto bad = run_ragform("position-bias -m " + quoted(model) + " --rank " +
                         quoted(dir / "records.jsonl") + " --store " + quoted(dir / "x.sqlite"));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;  // --rank needs --bias
}

}  // namespace

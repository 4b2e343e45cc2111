// The gold-position sweep (section 5.1) with a fake reader that answers with the first document
// (or the last one when the prompt holds '&'), so every accuracy is known in advance.
#include "pipelines/cnorm/sweep.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "capital_items.h"
#include "fake_reader.h"

namespace ragform::cnorm {
namespace {

using testing::FakeReader;

using testing::capital_items;
using testing::kQaTemplate;

// The text of the first (or last) "Document [i](Title: t) text" line.
std::string echo_document(const std::string& prompt) {
  const std::vector<std::string> docs = testing::document_texts(prompt);
  if (docs.empty()) return "";
  return " " + (prompt.find('&') != std::string::npos ? docs.back() : docs.front()) + "\nmore text";
}

SweepSetup setup3() {
  SweepSetup s;
  s.task = Task::Qa;
  s.tmpl = kQaTemplate;
  s.k = 3;
  s.variants = {{"baseline", {{"none", ""}, 0.0, 1}},
                {"cnorm", {{"&", "&"}, 1.0, 1}},
                {"min-token", {{"none", ""}, 1.0, 1}}};
  return s;
}

}  // namespace

TEST(CnormSweep, LayoutIsItemPositionVariant) {
  auto cells = sweep_layout(2, 3, 2);
  ASSERT_EQ(cells.size(), 12u);
  EXPECT_EQ(cells[0], (Cell{0, 0, 0}));
  EXPECT_EQ(cells[1], (Cell{0, 0, 1}));
  EXPECT_EQ(cells[2], (Cell{0, 1, 0}));
  EXPECT_EQ(cells[5], (Cell{0, 2, 1}));
  EXPECT_EQ(cells[6], (Cell{1, 0, 0}));
  EXPECT_EQ(variant_key("cnorm", 7), "cnorm@7");
}

TEST(CnormSweep, FirstLine) {
  EXPECT_EQ(first_line("  Paris\nLondon"), "Paris");
  EXPECT_EQ(first_line("\n\n Paris  \r\n"), "Paris");
  EXPECT_EQ(first_line(""), "");
}

TEST(CnormSweep, AccuracyByGoldPositionOaaOpa) {
  FakeReader r;
  r.answer = echo_document;
  auto its = capital_items();
  auto s = setup3();
  std::vector<CellAnswer> got;
  run_sweep(r, s, its, {}, [&](const CellAnswer& a) { got.push_back(a); });
  ASSERT_EQ(got.size(), 18u);  // 2 items x 3 positions x 3 variants
  EXPECT_EQ(r.generate_calls, 18);
  auto cells = sweep_layout(2, 3, 3);
  for (size_t c = 0; c < cells.size(); ++c) {
    EXPECT_EQ(got[c].instance, its[cells[c].item].id);
    EXPECT_EQ(got[c].position, cells[c].position);
    EXPECT_EQ(got[c].variant, s.variants[cells[c].variant].name);
  }
  // Gold of i1 at position 1, C-NORM variant: the '&' prompt, answered with the last document.
  EXPECT_EQ(
      got[4].prompt,
      "Document [1](Title: D1) Rome&is&old.\nDocument [2](Title: G1) "
      "The&answer&is&Paris.\nDocument [3](Title: D2) Oslo&is&cold.\nQ: capital of France?\nA:");
  EXPECT_EQ(got[4].answer, "Oslo&is&cold.");
  EXPECT_FALSE(got[4].correct);
  EXPECT_EQ(got[0].answer, "The answer is Paris.");
  EXPECT_TRUE(got[0].correct);
  EXPECT_EQ(got[0].prompt_tokens, int(got[0].prompt.size()) + 1);

  std::vector<Graded> g;
  for (const auto& a : got) g.push_back({a.variant, a.position, a.correct});
  auto sum = summarize(g, {"baseline", "cnorm", "min-token"}, 3);
  EXPECT_EQ(sum[0].accuracy, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(sum[1].accuracy,
            (std::vector<double>{0, 0, 1}));  // "The&answer&is&Paris." still matches
  EXPECT_EQ(sum[2].accuracy, (std::vector<double>{1, 0, 0}));
  for (const auto& v : sum) {
    EXPECT_NEAR(v.oaa, 1.0 / 3, 1e-15);
    EXPECT_EQ(v.opa, 1.0);
    EXPECT_EQ(v.n, (std::vector<size_t>{2, 2, 2}));
  }
  EXPECT_EQ(sum[0].best_position, 0u);
  EXPECT_EQ(sum[1].best_position, 2u);
}

TEST(CnormSweep, SkipsFinishedCells) {
  FakeReader r;
  r.answer = echo_document;
  size_t n = 0;
  run_sweep(
      r, setup3(), capital_items(),
      [](const std::string& inst, const std::string& v) { return inst == "i2" || v == "cnorm@1"; },
      [&](const CellAnswer& a) {
        EXPECT_EQ(a.instance, "i1");
        EXPECT_FALSE(a.variant == "cnorm" && a.position == 1);
        ++n;
      });
  EXPECT_EQ(n, 8u);
  EXPECT_EQ(r.generate_calls, 8);
}

TEST(CnormSweep, SummarizeHandRows) {
  std::vector<Graded> rows = {
      {"a", 0, true}, {"a", 0, false}, {"a", 1, true}, {"a", 1, true}, {"b", 2, true}};
  auto s = summarize(rows, {"a", "b"}, 3);
  EXPECT_EQ(s[0].accuracy, (std::vector<double>{0.5, 1.0, 0.0}));
  EXPECT_EQ(s[0].n, (std::vector<size_t>{2, 2, 0}));
  EXPECT_DOUBLE_EQ(s[0].oaa, 0.75);  // over the positions that have answers
  EXPECT_DOUBLE_EQ(s[0].opa, 1.0);
  EXPECT_EQ(s[0].best_position, 1u);
  EXPECT_DOUBLE_EQ(s[1].oaa, 1.0);
  EXPECT_EQ(s[1].best_position, 2u);
  EXPECT_THROW(summarize({{"a", 3, true}}, {"a"}, 3), Error);
}

TEST(CnormSweep, AverageOverSeeds) {
  auto s1 = summarize({{"a", 0, true}, {"a", 1, false}}, {"a"}, 2);                  // acc 1, 0
  auto s2 = summarize({{"a", 0, false}, {"a", 1, true}, {"a", 1, true}}, {"a"}, 2);  // acc 0, 1
  auto s3 = summarize({{"a", 0, false}, {"a", 1, true}}, {"a"}, 2);                  // acc 0, 1
  auto avg = average_over_seeds({s1, s2, s3});
  ASSERT_EQ(avg.size(), 1u);
  EXPECT_NEAR(avg[0].accuracy[0], 1.0 / 3, 1e-15);
  EXPECT_NEAR(avg[0].accuracy[1], 2.0 / 3, 1e-15);
  EXPECT_EQ(avg[0].n, (std::vector<size_t>{3, 4}));
  EXPECT_NEAR(avg[0].oaa, 0.5, 1e-15);  // every seed has OAA 0.5
  EXPECT_NEAR(avg[0].opa, 1.0, 1e-15);  // and OPA 1
  EXPECT_EQ(avg[0].best_position, 1u);
  EXPECT_THROW(average_over_seeds({}), Error);
  EXPECT_THROW(average_over_seeds({s1, summarize({}, {"b"}, 2)}), Error);
  EXPECT_THROW(average_over_seeds({s1, summarize({}, {"a"}, 3)}), Error);
}

TEST(CnormSweep, MinTokenPicksTheShortestFormatting) {
  FakeReader r;
  auto its = capital_items();
  EXPECT_EQ(
      min_token_index(r, Task::Qa, kQaTemplate, its, 3, parse_delimiter_list("&,none,||"), 1.0, 1),
      1u);
  EXPECT_EQ(min_token_index(r, Task::Qa, kQaTemplate, its, 3, parse_delimiter_list("-,&"), 1.0, 1),
            0u);  // tie: first
}

TEST(CnormSweep, FitKShrinksToTheBudget) {
  FakeReader r;
  auto its = capital_items();
  std::vector<Format> f = {{{"none", ""}, 0.0, 1}};
  auto longest = [&](size_t k) {
    size_t m = 0;
    for (const auto& it : its)
      m = std::max(
          m,
          size_t(r.count_tokens(render(Task::Qa, kQaTemplate, it, arrange(it, k, 0), f[0]).text)));
    return m;
  };
  EXPECT_EQ(fit_k(r, Task::Qa, kQaTemplate, its, 3, f, longest(3)), 3u);
  EXPECT_EQ(fit_k(r, Task::Qa, kQaTemplate, its, 3, f, longest(3) - 1), 2u);
  EXPECT_EQ(fit_k(r, Task::Qa, kQaTemplate, its, 3, f, longest(1)), 1u);
  EXPECT_THROW(fit_k(r, Task::Qa, kQaTemplate, its, 3, f, longest(1) - 1), Error);
}

}  // namespace ragform::cnorm

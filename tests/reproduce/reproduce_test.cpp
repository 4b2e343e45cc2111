// reproduce/: the experiment catalogue and plan, the Wilson interval, and the model matching of
// report/paper_numbers.h.
#include <gtest/gtest.h>

#include "base/error.h"
#include "report/paper_numbers.h"
#include "reproduce/reproduce.h"
#include "support/test_support.h"

namespace {

using namespace ragform;

TEST(Reproduce, WilsonInterval) {
  auto [lo, hi] = reproduce::wilson(0, 12);
  EXPECT_EQ(lo, 0.0);
  EXPECT_NEAR(hi, 0.2425, 1e-4);  // 95% Wilson upper end of 0/12
  auto [lo2, hi2] = reproduce::wilson(5, 10);
  EXPECT_NEAR(lo2, 0.2366, 1e-4);
  EXPECT_NEAR(hi2, 0.7634, 1e-4);
  auto [lo3, hi3] = reproduce::wilson(7, 7);
  EXPECT_EQ(hi3, 1.0);
  EXPECT_LT(lo3, 1.0);
}

TEST(Reproduce, MatchesThePapersModelsByName) {
  EXPECT_EQ(report::match_paper_model("", "llama-2-7b-chat.Q4_K_M.gguf"), "LLaMA-2-7B-Chat");
  // Punctuation and case do not matter; the longest name wins (-Instruct over the base model).
  EXPECT_EQ(report::match_paper_model("qwen2.5 1.5b", "qwen2.5-1.5b-q8_0.gguf"), "Qwen2.5-1.5B");
  EXPECT_EQ(report::match_paper_model("Qwen2.5 1.5B Instruct", "x.gguf"), "Qwen2.5-1.5B-Instruct");
  // LLaMA-2-7B (base) has no number in the papers' text (Figure 5 only), so it is not matched.
  EXPECT_EQ(report::match_paper_model("LLaMA v2", "llama-2-7b.Q8_0.gguf"), "");
  EXPECT_EQ(report::match_paper_model("Qwen2.5-1.5B-Instruct", "x.gguf"), "Qwen2.5-1.5B-Instruct");
  EXPECT_EQ(report::match_paper_model("Mistral-7B-Instruct-v0.3", ""), "Mistral-7B-Instruct-v0.3");
  EXPECT_EQ(report::match_paper_model("llama", "stories260K.gguf"), "");
}

TEST(Reproduce, PlanNamesMissingData) {
  reproduce::Options opt;
  opt.paper = "cnorm";
  opt.shared_dir = ragform::testing::temp_dir("reproduce-plan").string();  // holds no data/
  auto p = reproduce::plan(opt);
  ASSERT_EQ(p.size(), 3u);
  for (const auto& x : p) EXPECT_FALSE(x.missing.empty()) << x.info.name;
  EXPECT_NE(p[2].missing.find("LongBench-v2"), std::string::npos) << p[2].missing;
  EXPECT_NE(p[2].missing.find("--data DIR/longbench-v2.json"), std::string::npos);
  opt.experiment = "nope";
  EXPECT_THROW(reproduce::plan(opt), UsageError);
  opt.paper = "other";
  opt.experiment = "";
  EXPECT_THROW(reproduce::plan(opt), UsageError);
  opt.paper = "cnorm";
  opt.experiment = "longbench";
  EXPECT_THROW(reproduce::make_job(reproduce::plan(opt)[0], opt), Error);
}

}  // namespace

namespace ragform::reproduce {
namespace {

// Each size of the study scale lies between smoke's and the paper's (0 = all the data: largest),
// so a study run is never a smoke run by another name nor a paper run in disguise.
TEST(Reproduce, StudySizesLieBetweenSmokeAndPaper) {
  EXPECT_EQ(parse_scale("study"), Scale::Study);
  EXPECT_STREQ(scale_name(parse_scale("paper")), "paper");
  EXPECT_THROW(parse_scale("huge"), OptionError);
  const Sizes &a = sizes_of(Scale::Smoke), &b = sizes_of(Scale::Study), &c = sizes_of(Scale::Paper);
  auto size = [](size_t v) { return v == 0 ? SIZE_MAX : v; };
  for (auto field : {&Sizes::nq_items, &Sizes::nq_seeds, &Sizes::kv_items, &Sizes::kv_records,
                     &Sizes::calibration_S, &Sizes::longbench_items, &Sizes::spotlight_items,
                     &Sizes::sure_questions, &Sizes::sure_per_cell}) {
    EXPECT_LE(size(a.*field), size(b.*field));
    EXPECT_LE(size(b.*field), size(c.*field));
  }
  // The sizes docs/results.md asks of a sweep: 30-50 questions per cell.
  EXPECT_GE(b.nq_items, 30u);
  EXPECT_LE(b.nq_items, 50u);
  EXPECT_EQ(c.nq_items, 500u);  // section 5.1
  EXPECT_EQ(c.calibration_S, 8u);
}

}  // namespace
}  // namespace ragform::reproduce

// tune is a strict generalisation of C-NORM's calibration: with the space restricted to C-NORM's
// dimensions (delimiter at one p) and --objective abs, the search picks the delimiter `cnorm
// calibrate` picks on the same prompts, with the same mean ABS per candidate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/stable_hash.h"
#include "pipelines/cnorm/cnorm.h"
#include "store/run_store.h"
#include "support/fake_reader.h"
#include "support/test_support.h"
#include "tune/run.h"
#include "tune/tune.h"

namespace {

using namespace ragform;

// Attention with mass at the first and last token in a proportion drawn from the prompt's hash,
// so every (candidate, prompt) has its own ABS.
std::vector<std::vector<float>> hashed_heads(const std::string& prompt, size_t T) {
  std::vector<float> a(T, 0.0f);
  const float w1 = float(fnv1a64(prompt) % 1000) / 1000.0f;
  a[0] += 1.0f - w1;
  a[T - 1] += w1 + 0.001f;
  return {a, a};
}

TEST(TuneCnormAbs, ReproducesCalibrateChoice) {
  const size_t n = 6, k = 4;
  const uint64_t seed = 11;
  const std::string delims = "original,none,-,_,:,~,+";
  for (double p : {0.5, 1.0}) {
    ragform::testing::FakeReader r1, r2;
    r1.heads = r2.heads = hashed_heads;

    cnorm::CalibrationSetup setup;
    setup.task = cnorm::Task::Needle;
    setup.tmpl = cnorm::needle_template();
    setup.candidates = cnorm::parse_delimiter_list(delims);
    setup.p = p;
    setup.seed = 0;
    const std::vector<cnorm::Item> items = cnorm::make_needle_items(n, k, seed);
    std::vector<cnorm::PromptSpec> specs;
    for (const auto& it : items) specs.push_back({&it, k, it.natural_position});
    cnorm::Calibration cal = cnorm::calibrate(r1, setup, specs);

    tune::TuneOptions o;
    o.task = tune::Task::Needle;
    o.tmpl = tune::template_for(tune::Task::Needle);
    o.dev = tune::needle_records(n, k, seed);
    o.space = tune::default_space(tune::Task::Needle);
    tune::set_dimension(o.space, "delimiter", delims);
    tune::set_dimension(o.space, "p", p == 0.5 ? "0.5" : "1");
    tune::set_dimension(o.space, "format", "plain");
    tune::set_dimension(o.space, "order", "retrieved");
    tune::set_dimension(o.space, "k", "all");
    tune::set_dimension(o.space, "spotlight", "off");
    o.objective = tune::Objective::Abs;
    o.search.abs_prompts = n;
    o.budget = setup.candidates.size() * n;
    auto dir = ragform::testing::temp_dir("tune_cnorm_abs");
    store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create,
                       store::RunStore::Durability::normal);
    tune::TuneSummary s = tune::run_tune(r2, st, o);

    ASSERT_EQ(s.candidates.size(), cal.candidates.size());
    for (size_t c = 0; c < cal.candidates.size(); ++c) {
      EXPECT_EQ(s.candidates[c].presentation.delimiter, cal.candidates[c].delim.name);
      ASSERT_TRUE(s.candidates[c].score.abs);
      EXPECT_DOUBLE_EQ(*s.candidates[c].score.abs, cal.candidates[c].mean) << c;
    }
    EXPECT_EQ(s.winner, cal.best) << "p = " << p;
    EXPECT_EQ(s.candidates[s.winner].presentation.delimiter, cal.candidates[cal.best].delim.name);
    EXPECT_EQ(r2.attention_calls, int(cal.passes));
  }
}

}  // namespace

// The reproduce runners over a reader that fails (reader/measured.h): SpotlightRAG's generation
// stops with the server's error when nothing can be measured (a refused key: after the first
// question), and with some questions measured it gives their value and counts the others.
#include <gtest/gtest.h>

#include "reader/http_json.h"
#include "reader/measured.h"
#include "reproduce/reproduce.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::reproduce {
namespace {

// A reader whose generate fails for the prompts `fails` picks, with `error`.
class FailingReader : public testing::FakeReader {
 public:
  std::function<bool(const std::string&)> fails;
  std::function<void()> error;
  reader::Generation generate(const std::string& prompt, const reader::GenerateParams& p) override {
    if (fails && fails(prompt)) {
      ++generate_calls;
      error();
    }
    return FakeReader::generate(prompt, p);
  }
};

Options spotlight_options(std::vector<std::string>& notes) {
  Options opt;
  opt.paper = "spotlight";
  opt.shared_dir = testing::shared_dir().string();
  opt.hooks.note = [&notes](const std::string& s) { notes.push_back(s); };
  return opt;
}

TEST(ReproduceRunners, SpotlightWithARefusedKeyStopsWithTheServersError) {
  std::vector<std::string> notes;
  const Options opt = spotlight_options(notes);
  const Job job = make_job(plan(opt).at(0), opt);
  FailingReader rd;
  rd.answer = [](const std::string&) { return "yes"; };
  rd.fails = [](const std::string&) { return true; };
  rd.error = [] { throw reader::RequestFailed("HTTP 401 from /v1/completions: bad key", 401, 1); };
  store::RunStore st(testing::temp_dir("reproduce-runners-401") / "run.sqlite");
  try {
    run_job(rd, st, job, opt);
    FAIL() << "no error";
  } catch (const reader::NothingMeasured& e) {
    EXPECT_EQ(std::string(e.what()),
              "spotlight generate: 1 of 1 rows unmeasured: openai reader: HTTP 401 from "
              "/v1/completions: bad key");
  }
  EXPECT_EQ(rd.generate_calls, 1);  // stopped after the first question
  for (const auto& run : st.runs()) EXPECT_NE(run.pipeline, "reproduce");  // no figure stored
}

TEST(ReproduceRunners, SpotlightWithSomeQuestionsMeasuredCountsTheOthers) {
  std::vector<std::string> notes;
  const Options opt = spotlight_options(notes);
  const Job job = make_job(plan(opt).at(0), opt);
  ASSERT_GE(job.prompts, 3u);
  FailingReader rd;
  rd.answer = [](const std::string&) { return "yes"; };
  int seen = 0;
  rd.fails = [&seen](const std::string&) { return seen++ == 1; };  // the second question
  rd.error = [] { throw Error("reader", "prompt of 9000 tokens exceeds the context"); };
  store::RunStore st(testing::temp_dir("reproduce-runners-some") / "run.sqlite");
  auto res = run_job(rd, st, job, opt);
  ASSERT_EQ(res.values.size(), 1u);
  EXPECT_TRUE(res.values[0].measured());
  EXPECT_EQ(res.values[0].n, job.prompts - 1);
  bool counted = false;
  for (const auto& n : notes)
    counted |=
        n.rfind("spotlight generate: 1 of " + std::to_string(job.prompts) + " questions unmeasured",
                0) == 0;
  EXPECT_TRUE(counted);
}

}  // namespace
}  // namespace ragform::reproduce

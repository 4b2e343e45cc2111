// reader::check_generate_params, the one range rule of a generation's settings that the CLI's
// `generate` and Python's Reader.generate apply: the first setting out of range is named in the
// front end's own spelling, with the same reason everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "reader/generate_params.h"

namespace ragform::reader {
namespace {

// The message check_generate_params throws for p ("" when it accepts p).
std::string problem(const GenerateParams& p, const GenerateParamNames& names = {}) {
  try {
    check_generate_params(p, names);
    return "";
  } catch (const UsageError& e) {
    return e.what();
  }
}

TEST(GenerateParams, AcceptsTheBoundsThemselves) {
  GenerateParams p;
  EXPECT_EQ(problem(p), "");
  p.max_tokens = 0;
  p.temperature = kMaxTemperature;
  p.top_p = 1e-9;
  p.top_k = 0;
  EXPECT_EQ(problem(p), "");
  p.temperature = 0;
  p.top_p = 1;
  EXPECT_EQ(problem(p), "");
}

TEST(GenerateParams, NamesTheFirstSettingOutOfRange) {
  GenerateParams p;
  p.max_tokens = -1;
  EXPECT_EQ(problem(p), "max_tokens: must be >= 0");
  p = {};
  p.temperature = kMaxTemperature * 1.01;
  EXPECT_EQ(problem(p), "temperature: must be in [0, 100]");
  p.temperature = -0.1;
  EXPECT_EQ(problem(p), "temperature: must be in [0, 100]");
  p.temperature = std::nan("");
  EXPECT_EQ(problem(p), "temperature: must be in [0, 100]");
  p = {};
  p.top_p = 1.5;
  EXPECT_EQ(problem(p), "top_p: must be in (0, 1]");
  // An empty nucleus: the sampler refuses it, so the rule does before any model is opened.
  p.top_p = 0;
  EXPECT_EQ(problem(p), "top_p: must be in (0, 1]");
  p.top_p = std::nan("");
  EXPECT_EQ(problem(p), "top_p: must be in (0, 1]");
  p = {};
  p.top_k = -3;
  EXPECT_EQ(problem(p), "top_k: must be >= 0");
  // In the documented order: max_tokens before temperature before top_p before top_k.
  p.max_tokens = -1;
  p.temperature = -1;
  p.top_p = -1;
  EXPECT_EQ(problem(p), "max_tokens: must be >= 0");
}

TEST(GenerateParams, SpeaksTheFrontEndsNames) {
  const GenerateParamNames python = {"n_predict", "temp", "top_k", "top_p"};
  GenerateParams p;
  p.temperature = 101;
  EXPECT_EQ(problem(p, python), "temp: must be in [0, 100]");
  p = {};
  p.max_tokens = -5;
  EXPECT_EQ(problem(p, python), "n_predict: must be >= 0");
  const GenerateParamNames cli = {"-n", "--temp", "--top-k", "--top-p"};
  p = {};
  p.top_k = -1;
  EXPECT_EQ(problem(p, cli), "--top-k: must be >= 0");
}

}  // namespace
}  // namespace ragform::reader

// reader::generate_params, the one check of a generation's declared options
// (reader/generate_options.h) that the CLI's `generate` and Python's Reader.generate apply: the
// first option out of its declared range is named by its key (OptionError), which each front end
// spells its way (--top-k, top_k=), with the same reason everywhere; the reader's GenerateParams
// takes its defaults from the declaration.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "base/error.h"
#include "reader/generate_params.h"

namespace ragform::reader {
namespace {

// The message generate_params throws for o ("" when it accepts o).
std::string problem(const GenerateRequest& o) {
  try {
    generate_params(o);
    return "";
  } catch (const OptionError& e) {
    return e.what();
  }
}

TEST(GenerateParams, AcceptsTheBoundsThemselves) {
  GenerateRequest o;
  EXPECT_EQ(problem(o), "");
  o.n_predict = 0;
  o.temp = kMaxTemperature;
  o.top_p = 1e-9;
  o.top_k = 0;
  EXPECT_EQ(problem(o), "");
  o.temp = 0;
  o.top_p = 1;
  EXPECT_EQ(problem(o), "");
}

TEST(GenerateParams, NamesTheFirstOptionOutOfRange) {
  GenerateRequest o;
  o.n_predict = -1;
  EXPECT_EQ(problem(o), "n_predict: value out of range: -1 (accepted: 0 or more)");
  o = {};
  o.temp = kMaxTemperature * 1.01;
  EXPECT_EQ(problem(o), "temp: value too large: 101 (largest accepted: 100)");
  o.temp = -0.1;
  EXPECT_EQ(problem(o), "temp: value out of range: -0.1 (accepted: 0..100)");
  o.temp = std::nan("");
  EXPECT_EQ(problem(o), "temp: value out of range: nan (accepted: 0..100)");
  o = {};
  o.top_p = 1.5;
  EXPECT_EQ(problem(o), "top_p: value too large: 1.5 (largest accepted: 1)");
  // An empty nucleus: the sampler refuses it, so the declaration does before any model is opened.
  o.top_p = 0;
  EXPECT_EQ(problem(o), "top_p: must be above 0: an empty nucleus holds no token");
  o = {};
  o.top_k = -3;
  EXPECT_EQ(problem(o), "top_k: value out of range: -3 (accepted: 0 or more)");
  o = {};
  o.stop = {""};
  EXPECT_EQ(problem(o).rfind("stop: ", 0), 0u) << problem(o);
  // In the declared order: n_predict before temp before top_k before top_p.
  o = {};
  o.n_predict = -1;
  o.temp = -1;
  o.top_p = -1;
  EXPECT_EQ(problem(o), "n_predict: value out of range: -1 (accepted: 0 or more)");
}

TEST(GenerateParams, TheReadersDefaultsAreTheDeclarations) {
  const GenerateRequest o;
  const GenerateParams p = generate_params(o), plain;
  EXPECT_EQ(p.max_tokens, plain.max_tokens);
  EXPECT_EQ(p.max_tokens, int(o.n_predict));
  EXPECT_EQ(p.temperature, plain.temperature);
  EXPECT_EQ(p.top_k, plain.top_k);
  EXPECT_EQ(p.top_p, plain.top_p);
  EXPECT_EQ(p.seed, plain.seed);
  EXPECT_EQ(p.ignore_eos, plain.ignore_eos);
  EXPECT_TRUE(p.stop.empty());
  EXPECT_EQ(p.stop_after_line, plain.stop_after_line);
}

// A reader that cannot stop while decoding cuts its text where stop_after_line stops: at the
// first newline after text, never at a leading one; without the option the text is left whole.
TEST(GenerateParams, CutAfterLineKeepsTheFirstNonEmptyLine) {
  GenerateRequest o;
  o.stop_after_line = true;
  const GenerateParams on = generate_params(o), off;
  Generation g;
  g.text = "\n \nParis\nQuestion: next";
  g.finish_reason = "length";
  cut_after_line(g, on);
  EXPECT_EQ(g.text, "\n \nParis");
  EXPECT_EQ(g.finish_reason, "stop");
  Generation blank;
  blank.text = "\n\n";
  blank.finish_reason = "length";
  cut_after_line(blank, on);
  EXPECT_EQ(blank.text, "\n\n");
  EXPECT_EQ(blank.finish_reason, "length");
  Generation whole;
  whole.text = "a\nb";
  cut_after_line(whole, off);
  EXPECT_EQ(whole.text, "a\nb");
}

}  // namespace
}  // namespace ragform::reader

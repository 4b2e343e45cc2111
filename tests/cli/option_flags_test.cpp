// The declaration's builders that bind differently per front end (base/options.h): a key with its
// own Python spelling (.py), a bool whose CLI flag turns it off (.flag_off), a repeatable list
// never split (.repeated), and the CLI's binding of each (cli/option_flags.h); with the declared
// verbs that use them (spotlight select, generate, attention's document relevance).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/options.h"
#include "cli/args.h"
#include "cli/option_flags.h"
#include "pipelines/cnorm/position_bias.h"
#include "pipelines/spotlight/select.h"
#include "pipelines/spotlight/select_options.h"
#include "pipelines/sure/prepare.h"
#include "reader/generate_params.h"
#include "support/test_support.h"

namespace ragform::cli {
namespace {

struct Probe {
  double lambda = 0.5;
  bool special = true;
  std::vector<std::string> stop;
  int64_t layer = -1;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"lambda", "--lambda", "W", "weight"}.real(0, 1).py("lam"), lambda);
    v(OptionDecl{"special", "--no-special", "", "leave it out"}.flag_off("keep it"), special);
    v(OptionDecl{"stop", "--stop", "TEXT", "stop text"}.repeated(), stop);
    v(OptionDecl{"layer", "--layer", "L", "layer"}.count(-2147483648.0, 2147483647), layer);
  }
};

Probe parsed(const std::vector<std::string>& argv) {
  Probe p;
  Args a("probe", "test");
  OptionFlags<Probe> flags(a, p);
  EXPECT_TRUE(a.parse(argv));
  flags.apply();
  return p;
}

TEST(OptionFlags, AKeysPythonSpellingIsItsOwnAndTheCliKeepsTheFlag) {
  const auto infos = option_infos<Probe>();
  EXPECT_EQ(infos[0].decl.key, "lambda");
  EXPECT_EQ(infos[0].decl.python_key(), "lam");
  EXPECT_EQ(infos[1].decl.python_key(), "special");  // no spelling of its own: the key
  EXPECT_DOUBLE_EQ(parsed({"--lambda", "0.25"}).lambda, 0.25);
}

TEST(OptionFlags, ANegatedSwitchTurnsTheOptionOff) {
  EXPECT_TRUE(parsed({}).special);
  EXPECT_FALSE(parsed({"--no-special"}).special);
  EXPECT_EQ(option_infos<Probe>()[1].default_text, "true");
}

TEST(OptionFlags, ARepeatedListTakesOneValuePerUseAndNeverSplits) {
  EXPECT_TRUE(parsed({}).stop.empty());
  EXPECT_EQ(parsed({"--stop", "a,b"}).stop, std::vector<std::string>{"a,b"});
  EXPECT_EQ(parsed({"--stop", "a", "--stop", "b"}).stop, (std::vector<std::string>{"a", "b"}));
}

TEST(OptionFlags, TheWholeIntRangeIsAnyValue) {
  EXPECT_EQ(range_words(option_infos<Probe>()[3].decl), "any value");
  EXPECT_EQ(parsed({"--layer", "-3"}).layer, -3);
}

TEST(DeclaredVerbs, SpotlightSelectTheSameDefaultsEverywhere) {
  // SelectParams (what select_and_annotate takes) defaults to the declaration's.
  const spotlight::SelectOptions o;
  const spotlight::SelectParams p = spotlight::select_params(o.score, o.prompt), plain;
  EXPECT_EQ(p.top_K, plain.top_K);
  EXPECT_EQ(p.special_tokens, plain.special_tokens);
  EXPECT_EQ(p.order, plain.order);
  // k and lambda unset: the ranker's own.
  const spotlight::ScoreParams sp =
      spotlight::score_params(o.score, spotlight::default_score_params());
  EXPECT_EQ(sp.top_k, spotlight::default_score_params().top_k);
  EXPECT_EQ(sp.lambda, spotlight::default_score_params().lambda);
}

TEST(DeclaredVerbs, SpotlightSelectChecksNameTheKey) {
  auto why = [](spotlight::SelectOptions o) -> std::string {
    try {
      spotlight::check_select_options(o);
      return "";
    } catch (const OptionError& e) {
      return e.what();
    }
  };
  spotlight::SelectOptions o;
  EXPECT_EQ(why(o), "");
  o.prompt.order = "best";
  EXPECT_EQ(why(o), "order: expected doc or score, got 'best'");
  o = {};
  o.encoder.oov = "keep";
  EXPECT_EQ(why(o), "oov: expected match or skip, got 'keep'");
  o = {};
  o.score.lambda = 1.5;
  EXPECT_EQ(why(o), "lambda: value too large: 1.5 (largest accepted: 1)");
  o = {};
  o.score.K = 0;
  EXPECT_EQ(why(o), "K: value out of range: 0 (accepted: 1 or more)");
  o = {};
  o.encoder.layer = -1;  // the reader's: negative from the end
  EXPECT_EQ(why(o), "");
}

TEST(DeclaredVerbs, DocumentRelevanceReadsTheDeclaredRow) {
  cnorm::RelevanceRequest r;
  r.layer = -2;
  r.query = 5;
  const reader::AttentionQuery q = cnorm::relevance_query(r);
  EXPECT_EQ(q.layers, std::vector<int>{-2});
  EXPECT_EQ(q.query_positions, std::vector<int>{5});
  r.layer = int64_t(1) << 40;
  EXPECT_THROW(cnorm::relevance_query(r), OptionError);
}

// `sure prepare` (a verb of the CLI alone): its --help shows each declared flag with the
// declaration's default and range, a value out of range is refused by the flag and by the
// library's check, each naming the option its way.
TEST(DeclaredVerbs, SurePrepareFlagsAreTheDeclaration) {
  const auto r = testing::run_ragform("sure prepare --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const OptionInfo& o : option_infos<sure::PrepareOptions>()) {
    const OptionDecl& d = o.decl;
    const size_t at = r.out.find("  " + d.flag + " ");
    ASSERT_NE(at, std::string::npos) << d.flag;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find(d.help), std::string::npos) << line;
    EXPECT_NE(line.find("[default: " + o.default_text), std::string::npos) << line;
    if (d.lo != 0 || d.hi < 9.2e18) {
      EXPECT_NE(line.find(range_words(d) + "]"), std::string::npos) << line;
    }
  }
  const auto bad = testing::run_ragform(
      "sure prepare --index /nonexistent --input /nonexistent --temperature 101");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("ragform: --temperature: value too large: 101 (largest accepted: 100)"),
            std::string::npos)
      << bad.err;
  sure::PrepareOptions o;
  o.temperature = 101;
  try {
    check_options(o);
    ADD_FAILURE() << "101 accepted";
  } catch (const OptionError& e) {
    EXPECT_STREQ(e.what(), "temperature: value too large: 101 (largest accepted: 100)");
  }
}

}  // namespace
}  // namespace ragform::cli

// Python's ragform.bias against the CLI on stories260K: document_relevance gives the documents and
// ranking `ragform attention --doc-spans --calibrated --bias` prints, and position_bias the curve
// of `ragform position-bias --json` (the same items, fillers and layers).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

using nlohmann::json;

const std::string kPrompt =
    "Lily had a red ball. Tom had a big dog. Sue liked to eat cake. The dog's name was";

TEST(CalibratedRelevancePython, SameAsTheCli) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto module = python_module();
  if (module.empty()) GTEST_SKIP() << "no Python module in " << RAGFORM_BINARY_DIR << "/python";
  const auto dir = temp_dir("calibrated-relevance-py-files");
  write_file(dir / "prompt.txt", kPrompt);

  auto curve =
      run_ragform("position-bias -m " + quoted(model) +
                  " --task needle -k 3 --limit 2 --seed 4 --json -o " + quoted(dir / "curve.json"));
  ASSERT_EQ(curve.exit_code, 0) << curve.err;
  auto cli = run_ragform("attention -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                         " --layer 3 --json --doc-spans 0:20,21:39,40:62 --calibrated --bias " +
                         quoted(dir / "curve.json"));
  ASSERT_EQ(cli.exit_code, 0) << cli.err;

  auto py =
      run_python("calibrated-relevance-py", module, R"(import json, sys
import ragform, ragform.bias
m = ragform.Model(sys.argv[1])
prompt = open(sys.argv[2], encoding="utf-8").read()
rel = ragform.bias.document_relevance(m, prompt, [(0, 20), (21, 39), (40, 62)], bias=sys.argv[3],
                                      layer=3)
curve = ragform.bias.position_bias(m, task="needle", k=3, limit=2, seed=4)
sums = ragform.bias.position_bias(m, task="needle", k=3, limit=2, seed=4, measure="sum")
try:
    ragform.bias.position_bias(m, task="needle", k=3, limit=1, measure="max")
    bad = "accepted"
except ValueError as e:
    bad = str(e)
print(json.dumps({"relevance": rel, "curve": curve, "sums": sums, "bad": bad}))
)",
                 {model.string(), (dir / "prompt.txt").string(), (dir / "curve.json").string()});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  const json pj = json::parse(py.out);
  const json cj = json::parse(cli.out);
  EXPECT_EQ(pj["relevance"]["documents"], cj["documents"]);
  EXPECT_EQ(pj["relevance"]["ranking"], cj["ranking"]);
  EXPECT_EQ(pj["relevance"]["layer"], 3);
  const json cc = json::parse(curve.out);
  EXPECT_EQ(pj["curve"]["curve"], cc["curve"]);
  EXPECT_EQ(pj["curve"]["layers"], cc["layers"]);
  EXPECT_EQ(pj["curve"]["prompts"], 2 * 3 * 3);
  EXPECT_EQ(pj["curve"]["measure"], "mean");
  // measure= is the CLI's --measure.
  auto sums = run_ragform("position-bias -m " + quoted(model) +
                          " --task needle -k 3 --limit 2 --seed 4 --json --measure sum");
  ASSERT_EQ(sums.exit_code, 0) << sums.err;
  EXPECT_EQ(pj["sums"]["curve"], json::parse(sums.out)["curve"]);
  EXPECT_EQ(pj["sums"]["measure"], "sum");
  EXPECT_NE(pj["sums"]["curve"], pj["curve"]["curve"]);
  EXPECT_NE(pj["bad"].get<std::string>().find("measure"), std::string::npos) << pj["bad"];
}

}  // namespace
}  // namespace ragform::testing

// One SURE perturbation plan from the CLI (`ragform sure perturb`) and from Python
// (ragform.sure.perturb with the built module): both call pipelines/sure's run_perturb, so the
// pairs are the same bytes — rule-based kinds, a perturber's rewrite (--perturb-model /
// perturb_model=, another model file, so that a front end asking the wrong reader shows) and the
// reader under test's own passage (-m / model=).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "pipelines/sure/nq_pairs_input.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

// Python's pairs of the records in `input`, one JSON line each as the CLI prints them (compact,
// UTF-8), by Debian's python3 with this checkout's package and the built module copied into a
// temporary directory.
RunResult python_perturb(const fs::path& module, const fs::path& input, const fs::path& model,
                         const fs::path& perturber) {
  return run_python("sure-perturb-py", module, R"(import json, sys
import ragform, ragform.sure
with open(sys.argv[1], encoding="utf-8") as f:
    recs = [json.loads(line) for line in f]
model = ragform.Model(sys.argv[2], ctx=1024)
perturber = ragform.Model(sys.argv[3], ctx=1024)
got = ragform.sure.perturb(recs, kinds="style/simple,source/self-generated,logic/llm-ranked,format/json",
                           seed=3, docs=1, model=model, perturb_model=perturber, max_tokens=16,
                           batch=3)
for p in got:
    sys.stdout.write(json.dumps(p, ensure_ascii=False, separators=(",", ":")) + "\n")
)",
                    {input.string(), model.string(), perturber.string()});
}

TEST(SurePerturbPythonFixture, CliAndPythonWriteTheSamePairs) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(perturber, "fixtures/models/tiny-llama.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  const fs::path module = python_module();
  if (module.empty()) GTEST_SKIP() << "no Python module in " << RAGFORM_BINARY_DIR << "/python";
  auto dir = temp_dir("sure-perturb-py-in");
  write_file(dir / "qa.jsonl", nq_pairs_input(nq, 2));

  auto cli = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") + " -m " +
                         quoted(model) + " --perturb-model " + quoted(perturber) +
                         " --ctx 1024 --kinds style/simple,source/self-generated,logic/llm-ranked,"
                         "format/json --seed 3 --docs 1 --max-tokens 16 --batch 3");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  ASSERT_EQ(json_lines(cli.out).size(), 2u * 4);
  auto py = python_perturb(module, dir / "qa.jsonl", model, perturber);
  ASSERT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, cli.out);
}

}  // namespace
}  // namespace ragform::testing

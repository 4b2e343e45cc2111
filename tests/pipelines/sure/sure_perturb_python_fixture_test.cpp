// One SURE perturbation plan from the CLI (`ragform sure perturb`) and from Python
// (ragform.sure.perturb with the built module): both call pipelines/sure's run_perturb, so the
// pairs are the same bytes — rule-based kinds, a perturber's rewrite (--perturb-model /
// perturb_model=, another model file, so that a front end asking the wrong reader shows) and the
// reader under test's own passage (-m / model=).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <cstdio>
#include <filesystem>
#include <string>

#include "pipelines/sure/nq_pairs_input.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

// The built Python module (<build>/python/_ragform*.so), or "" when this tree has none.
fs::path python_module() {
  const fs::path dir = fs::path(RAGFORM_BINARY_DIR) / "python";
  if (!fs::is_directory(dir)) return {};
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("_ragform", 0) == 0 && e.path().extension() == ".so")
      return e.path();
  return {};
}

// `cmd` through /bin/sh: its stdout, stderr and exit code.
RunResult run_shell(const std::string& cmd) {
  RunResult r;
  const fs::path err = temp_dir("sure-perturb-py-sh") / "stderr";
  FILE* p = popen(("(" + cmd + ") 2>" + quoted(err)).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = read_file(err);
  return r;
}

// Python's pairs of the records in `input`, one JSON line each as the CLI prints them (compact,
// UTF-8), by Debian's python3 with this checkout's package and the built module copied into a
// temporary directory.
RunResult python_perturb(const fs::path& module, const fs::path& input, const fs::path& model,
                         const fs::path& perturber) {
  const fs::path dir = temp_dir("sure-perturb-py");
  fs::create_directories(dir / "ragform");
  for (const auto& e : fs::directory_iterator(fs::path(RAGFORM_SOURCE_DIR) / "python" / "ragform"))
    if (e.path().extension() == ".py")
      fs::copy_file(e.path(), dir / "ragform" / e.path().filename());
  fs::copy_file(module, dir / "ragform" / module.filename());
  write_file(dir / "perturb.py", R"(import json, sys
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
)");
  return run_shell("cd " + quoted(dir) + " && PYTHONPATH=" + quoted(dir) +
                   " /usr/bin/python3 perturb.py " + quoted(input) + " " + quoted(model) + " " +
                   quoted(perturber));
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

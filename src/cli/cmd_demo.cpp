// ragform demo: the README's main command. Until the full demo (C-NORM calibration, SURE
// perturbations, Spotlight selection and the HTML report) lands, it runs the engine end to end on
// the real trained stories260K model: greedy generation checked against llama2.c's golden text,
// the final token's attention with C-NORM's ABS, and SURE-style log-prob scoring.
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/paths.h"
#include "cli/command.h"
#include "cli/reader_flags.h"
#include "pipelines/cnorm/abs.h"

namespace ragform::cli {
namespace {

int run_demo(const std::vector<std::string>& argv) {
  Args a(
      "demo", "Run ragform end to end on the real stories260K model (or -m MODEL).",
      "Shared data is found through --shared DIR, then $RAGFORM_SHARED, then the ../shared beside\n"
      "the source tree recorded at build time.");
  auto& model = a.opt<std::string>(
      "-m,--model", "FILE", "GGUF model (default: <shared>/fixtures/models/stories260K.gguf)", "");
  auto& shared =
      a.opt<std::string>("--shared", "DIR", "the shared folder holding fixtures/ and data/", "");
  if (!a.parse(argv)) return 0;
  std::string path = model.value;
  std::string shared_dir;
  if (path.empty()) {
    shared_dir = find_shared_dir(shared.value);
    path = shared_dir + "/fixtures/models/stories260K.gguf";
    if (!std::filesystem::exists(path))
      throw Error("demo", path + " not found; pass -m MODEL.gguf or --shared DIR");
  }
  reader::NativeReader r(path, {});
  std::fprintf(stderr, "ragform demo: model %s\n", path.c_str());

  // 1. Greedy generation.
  const std::string prompt = "Lily and Tom went to the park";
  reader::GenerateParams gp;
  gp.max_tokens = 48;
  auto g = r.generate(prompt, gp);
  std::printf("== generate (greedy, %zu tokens)\n%s%s\n", g.ids.size(), prompt.c_str(),
              g.text.c_str());
  if (!shared_dir.empty()) {
    std::string golden = read_file_bytes(
        shared_dir + "/fixtures/models/stories260K.greedy64.prompt_lily_tom.expected.txt");
    bool same = golden.compare(0, prompt.size() + g.text.size(), prompt + g.text) == 0;
    std::printf("   llama2.c golden text: %s\n", same ? "identical prefix" : "DIFFERS");
  }

  // 2. Attention of the final token and C-NORM's Attention Balance Score, for two formats of the
  //    same context (plain, and whitespace replaced by '-' as a C-NORM candidate would).
  std::printf("\n== attention balance (last layer, final token, mean over heads)\n");
  for (const std::string& ctx :
       {std::string("Tom had a red ball. Lily had a big dog. The dog was happy."),
        std::string("Tom-had-a-red-ball. Lily-had-a-big-dog. The-dog-was-happy.")}) {
    std::string p = ctx + " Who had a dog?";
    auto at = r.attention(p, {});
    std::printf("   ABS %.4f  tokens %3zu  %s\n", cnorm::attention_balance_score(at.rows[0].mean),
                at.ids.size(), ctx.c_str());
  }

  // 3. Log-probability scoring of two continuations (SURE's oracle score).
  std::printf("\n== score: log p(continuation | prompt)\n");
  for (const std::string& c :
       {std::string(" They played with a ball."), std::string(" They computed eigenvalues.")}) {
    auto s = r.score(prompt + ".", c);
    std::printf("   %9.4f  over %2zu tokens: %s\n", s.sum, s.tokens.size(), c.c_str());
  }
  return 0;
}

RAGFORM_COMMAND("demo", "run ragform end to end on the real stories260K model", run_demo, 1);

}  // namespace
}  // namespace ragform::cli

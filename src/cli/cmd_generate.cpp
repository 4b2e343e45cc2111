// ragform generate: continue a prompt with the native engine.
#include <cstdio>

#include "base/error.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "cli/steer_flags.h"
#include "reader/generate_params.h"

namespace ragform::cli {
namespace {

int run_generate(const std::vector<std::string>& argv) {
  Args a("generate", "Continue a prompt with the model (greedy unless --temp > 0).",
         "The prompt is tokenised with BOS as the vocabulary asks and special-token parsing off.\n"
         "Text goes to stdout; with --json one object {\"text\", \"ids\", \"finish_reason\", "
         "\"prompt_tokens\"}\n"
         "holding the continuation only.");
  ReaderFlags rf(a);
  RemoteFlags xf(a);
  PromptFlags pf(a);
  SteerFlags sf(a);
  auto& n = a.opt<int>("-n,--n-predict", "N", "maximum tokens to generate", 64);
  auto& temp = a.opt<double>("--temp", "T", "sampling temperature (0 = greedy)", 0.0)
                   .range(0.0, reader::kMaxTemperature);
  auto& top_k = a.opt<int>("--top-k", "K", "sample from the K most likely tokens (0 = all)", 0);
  auto& top_p = a.opt<double>("--top-p", "P", "nucleus sampling mass", 1.0).range(0.0, 1.0);
  auto& seed = a.opt<long long>("--seed", "S", "random seed for sampling", 0);
  auto& stop =
      a.opt<std::vector<std::string>>("--stop", "TEXT", "stop before this text (repeatable)");
  auto& ignore_eos = a.flag("--ignore-eos", "keep generating past end-of-generation tokens");
  auto& json = a.flag("--json", "print one JSON object on stdout");
  if (!a.parse(argv)) return 0;
  if (std::string why = reader::stop_strings_problem(stop.value); !why.empty())
    throw UsageError("--stop", why);
  const reader::SteeringParams steer = sf.params();
  std::string prompt = pf.read();
  auto reader = xf.open(rf);
  reader->steering = steer;
  reader::GenerateParams p;
  p.max_tokens = n.value;
  p.temperature = temp.value;
  p.top_k = top_k.value;
  p.top_p = top_p.value;
  p.seed = uint64_t(seed.value);
  p.stop = stop.value;
  p.ignore_eos = ignore_eos.value;
  reader::check_generate_params(p, {"-n", "--temp", "--top-k", "--top-p"});
  auto g = reader->generate(prompt, p);
  if (json.value) {
    print_json_line({{"text", g.text},
                     {"ids", g.ids},
                     {"finish_reason", g.finish_reason},
                     {"prompt_tokens", g.prompt_tokens}});
  } else {
    std::fwrite(g.text.data(), 1, g.text.size(), stdout);
    std::fputc('\n', stdout);
    std::fprintf(stderr, "generate: %zu tokens, finish: %s\n", g.ids.size(),
                 g.finish_reason.c_str());
  }
  return 0;
}

RAGFORM_COMMAND("generate", "continue a prompt (greedy or seeded sampling)", run_generate, 30);

}  // namespace
}  // namespace ragform::cli

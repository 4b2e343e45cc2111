// ragform generate: continue a prompt with the native engine.
#include <cstdio>

#include "base/error.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
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
  reader::GenerateRequest go;  // -n, --temp, --stop, --top-k, --top-p, --seed, --ignore-eos
  OptionFlags<reader::GenerateRequest> go_flags(a, go);
  auto& json = a.flag("--json", "print one JSON object on stdout");
  if (!a.parse(argv)) return 0;
  go_flags.apply();
  reader::GenerateParams p;
  try {
    p = reader::generate_params(go);
  } catch (const OptionError& e) {
    throw go_flags.spell(e);
  }
  const reader::SteeringParams steer = sf.params();
  std::string prompt = pf.read();
  auto reader = xf.open(rf);
  reader->steering = steer;
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

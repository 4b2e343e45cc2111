// ragform logits: raw logits as float32 little-endian [n_positions][n_vocab] (the fixtures'
// layout).
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "cli/command.h"
#include "cli/option_flags.h"
#include "cli/output_file.h"
#include "cli/reader_flags.h"
#include "cli/steer_flags.h"
#include "reader/prompt_logits.h"

namespace ragform::cli {
namespace {

int run_logits(const std::vector<std::string>& argv) {
  Args a("logits", "Write the prompt's logits as float32 little-endian [n_positions][n_vocab].",
         "One row of n_vocab floats per prompt position, the layout of llama.cpp's logits dumps. "
         "--positions last writes one row.");
  ReaderFlags rf(a);
  PromptFlags pf(a);
  SteerFlags sf(a);
  reader::LogitsRequest req;
  OptionFlags<reader::LogitsRequest> flags(a, req);  // --positions, declared in prompt_logits.h
  auto& out = a.opt<std::string>("-o,--output", "FILE", "output file").required();
  if (!a.parse(argv)) return 0;
  flags.apply();
  try {
    reader::all_positions(req);  // refused before the model is opened
  } catch (const OptionError& e) {
    throw flags.spell(e);
  }
  const reader::SteeringParams steer = sf.params();
  const std::vector<InputFile> inputs = {{"-m", rf.model.value}, {"--file", pf.file.value}};
  check_not_input(out.value, "-o", inputs);
  std::string prompt = pf.read();
  auto reader = rf.open_native();
  const reader::PromptLogits res =
      reader::prompt_logits(*reader, prompt, req, rf.native_options().kv_f16, steer);
  write_output(out.value, "-o",
               std::string_view(reinterpret_cast<const char*>(res.logits.data()),
                                res.logits.size() * sizeof(float)),
               inputs);
  std::fprintf(stderr, "logits: wrote %zu x %d logits to %s\n", res.rows, res.n_vocab,
               out.value.c_str());
  return 0;
}

RAGFORM_COMMAND("logits", "write raw logits (float32 [n_positions][n_vocab])", run_logits, 33);

}  // namespace
}  // namespace ragform::cli

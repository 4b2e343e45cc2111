// ragform logits: raw logits as float32 little-endian [n_positions][n_vocab] (the fixtures'
// layout).
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "cli/command.h"
#include "cli/reader_flags.h"
#include "cli/steer_flags.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"

namespace ragform::cli {
namespace {

int run_logits(const std::vector<std::string>& argv) {
  Args a("logits", "Write the prompt's logits as float32 little-endian [n_positions][n_vocab].",
         "One row of n_vocab floats per prompt position, the layout of llama.cpp's logits dumps. "
         "--positions last writes one row.");
  ReaderFlags rf(a);
  PromptFlags pf(a);
  SteerFlags sf(a);
  auto& positions = a.opt<std::string>("--positions", "WHICH", "last or all", "last");
  auto& out = a.opt<std::string>("-o,--output", "FILE", "output file").required();
  if (!a.parse(argv)) return 0;
  if (positions.value != "last" && positions.value != "all")
    throw UsageError("--positions", "expected last or all, got '" + positions.value + "'");
  const reader::SteeringParams steer = sf.params();
  std::string prompt = pf.read();
  auto reader = rf.open_native();
  const reader::TokenizedPrompt tokens = reader->tokenize_prompt(prompt);
  const std::vector<int32_t>& ids = tokens.ids;
  runtime::ContextParams cp;
  cp.n_ctx = std::max<int>(int(ids.size()), 1);
  cp.kv_type = rf.native_options().kv_f16 ? runtime::KvType::F16 : runtime::KvType::F32;
  cp.pool = reader->pool();
  runtime::Context ctx(reader->model(), cp);
  runtime::SeqInput in;
  in.seq = ctx.new_sequence();
  ctx.set_steering(in.seq, reader->resolve_steering(prompt, tokens, steer, prompt.size()));
  in.tokens = ids;
  in.logits = positions.value == "all" ? runtime::LogitsMode::All : runtime::LogitsMode::Last;
  auto res = ctx.eval({in});
  std::ofstream f(out.value, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(out.value, "cannot open for writing");
  f.write(reinterpret_cast<const char*>(res[0].logits.data()),
          std::streamsize(res[0].logits.size() * sizeof(float)));
  if (!f) throw Error(out.value, "write failed");
  std::fprintf(stderr, "logits: wrote %zu x %d logits to %s\n", res[0].logit_positions.size(),
               reader->model().hp().n_vocab, out.value.c_str());
  return 0;
}

RAGFORM_COMMAND("logits", "write raw logits (float32 [n_positions][n_vocab])", run_logits, 33);

}  // namespace
}  // namespace ragform::cli

#include "cli/reader_flags.h"

#include <cstdio>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/engine_env.h"
#include "engine/model/model.h"
#include "engine/model/model_card.h"
#include "reader/prefill_meter.h"

namespace ragform::cli {

Opt<std::string>& f16_gemm_flag(Args& a) {
  // The errors are the ones measured on the F16 fixtures (docs/engine.md, accuracy table).
  return a.opt<std::string>(
      "--f16-gemm", "HOW",
      "F16/BF16 products: exact (default; a prompt's logits do not depend on its batch) or int16 "
      "(approximate, AVX512-VNNI only: faster prefill, F16 fixture logits 2.1e-3 from llama.cpp's "
      "against 1.4e-3, batch-dependent)",
      "");
}

ReaderFlags::ReaderFlags(Args& a, bool model_required)
    : model(a.opt<std::string>("-m,--model", "FILE", "GGUF model file")),
      ctx(a.opt<int>("--ctx", "N",
                     "context size in tokens per sequence (the model's training context when "
                     "that is smaller than the default)",
                     4096)
              .range(1, kMaxInt)),
      kv(a.opt<std::string>("--kv", "TYPE", "KV cache type: f32 or f16 (half the memory)", "f32")),
      threads(a.opt<int>("-t,--threads", "N", "worker threads (0 = all cores)", 0)
                  .range(0, max_threads(), "0..4 x the cores")),
      f16_gemm(f16_gemm_flag(a)),
      chat(a.flag("--chat", "wrap the prompt as the user turn of the model's chat template")),
      system(a.opt<std::string>("--system", "TEXT", "system message in --chat mode", "")),
      truncate(a.opt<std::string>("--truncate", "POLICY",
                                  "prompt longer than --ctx: error, or left (keep BOS and the end)",
                                  "error")),
      prefix_cache(a.opt<std::string>(
          "--prefix-cache", "on|off",
          "reuse the KV rows of prompt prefixes prefilled before (exact: same numbers)", "on")),
      prefix_cache_mb(a.opt<int>("--prefix-cache-mb", "N",
                                 "prefix cache bound in MiB (LRU; 0 = 1/8 of RAM, at most 2048)", 0)
                          .range(0, 1 << 20)) {
  if (model_required) model.required();
}

void ReaderFlags::resolve_ctx() const {
  if (ctx_resolved_ || model.value.empty()) return;
  ctx_resolved_ = true;
  const int train = model::training_context(model.value);
  if (train <= 0) return;
  if (!ctx.seen && train < ctx.value) {
    // Positions past the training context are ones the model never saw (RoPE extrapolation):
    // default to what it was trained on.
    std::fprintf(stderr, "note: --ctx defaults to %d, the model's training context\n", train);
    ctx.value = train;
  } else if (ctx.seen && ctx.value > train) {
    std::fprintf(stderr,
                 "note: --ctx %d exceeds the model's training context %d; positions past %d are "
                 "ones it never saw\n",
                 ctx.value, train, train);
  }
}

reader::NativeOptions ReaderFlags::native_options() const {
  // Every flag is checked before the --ctx note, so a usage error is the only thing printed.
  reader::NativeOptions o;
  if (kv.value != "f32" && kv.value != "f16")
    throw UsageError("--kv", "expected f32 or f16, got '" + kv.value + "'");
  o.kv_f16 = kv.value == "f16";
  o.engine = engine_options_from_env(threads.value, f16_gemm.value);
  o.chat = chat.value;
  o.system_prompt = system.value;
  if (truncate.value == "error")
    o.overflow = reader::Overflow::Error;
  else if (truncate.value == "left")
    o.overflow = reader::Overflow::TruncateLeft;
  else
    throw UsageError("--truncate", "expected error or left, got '" + truncate.value + "'");
  if (prefix_cache.value != "on" && prefix_cache.value != "off")
    throw UsageError("--prefix-cache", "expected on or off, got '" + prefix_cache.value + "'");
  o.prefix_cache = prefix_cache.value == "on";
  o.prefix_cache_bytes = size_t(prefix_cache_mb.value) << 20;
  resolve_ctx();
  o.n_ctx = ctx.value;
  return o;
}

std::unique_ptr<reader::NativeReader> ReaderFlags::open_native() const {
  auto r = std::make_unique<reader::NativeReader>(model.value, native_options());
  // What loading accepted but a user should know (engine/model/model.h warnings()).
  for (const std::string& w : r->model().warnings())
    std::fprintf(stderr, "ragform: warning: %s\n", w.c_str());
  return r;
}

void note_prefill(const reader::Reader& r) {
  if (auto c = r.prefill_counts()) std::fprintf(stderr, "%s\n", reader::prefill_line(*c).c_str());
}

PromptFlags::PromptFlags(Args& a)
    : text(a.opt<std::string>("-p,--prompt", "TEXT", "prompt text")),
      file(a.opt<std::string>("-f,--file", "FILE", "read the prompt from FILE (exact bytes)")) {}

std::string PromptFlags::read() const {
  if (text.seen && file.seen) throw UsageError("prompt", "give either -p or --file, not both");
  if (text.seen) return text.value;
  if (file.seen) return read_file_bytes(file.value);
  throw UsageError("prompt", "missing prompt: give -p TEXT or --file FILE");
}

}  // namespace ragform::cli

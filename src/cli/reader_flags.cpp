#include "cli/reader_flags.h"

#include <cstdio>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/engine_env.h"
#include "engine/model/model.h"
#include "engine/model/model_card.h"
#include "reader/engine_settings.h"
#include "reader/prefill_meter.h"

namespace ragform::cli {

namespace {

// The flags of reader/engine_settings.h's declaration, with its help, default and range. The
// order of --help is this file's (ReaderFlags' members), not the declaration's (Python's).
const OptionDecl& decl(const char* key) { return reader::engine_setting(key).decl; }

Opt<int>& int_flag(Args& a, const char* key, int def) {
  const OptionDecl& d = decl(key);
  return a.opt<int>(d.flag, d.metavar, d.help, def)
      .range(int(d.lo), d.hi >= double(kMaxInt) ? kMaxInt : int(d.hi), range_words(d));
}

Opt<int>& int_flag(Args& a, const char* key) {
  return int_flag(a, key, std::stoi(reader::engine_setting(key).default_text));
}

// A setting the environment may give (f16_gemm: RAGFORM_F16_GEMM) shows no default: the flag,
// else the variable, else the declared default (engine_env.h).
Opt<std::string>& text_flag(Args& a, const char* key) {
  const OptionInfo& o = reader::engine_setting(key);
  const OptionDecl& d = o.decl;
  const std::string shown = d.kind == OptionKind::OnOff ? (o.default_text == "true" ? "on" : "off")
                            : d.env.empty()             ? o.default_text
                                                        : "";
  return a.opt<std::string>(d.flag, d.metavar, d.help, shown);
}

Flag& switch_flag(Args& a, const char* key) {
  const OptionDecl& d = decl(key);
  return a.flag(d.flag, d.help);
}

}  // namespace

Opt<std::string>& f16_gemm_flag(Args& a) { return text_flag(a, "f16_gemm"); }

Opt<int>& threads_flag(Args& a) { return int_flag(a, "threads"); }

Opt<std::string>& kv_flag(Args& a) { return text_flag(a, "kv"); }

Opt<std::string>& chat_template_flag(Args& a) { return text_flag(a, "chat_template"); }

ReaderFlags::ReaderFlags(Args& a, bool model_required)
    : model(a.opt<std::string>("-m,--model", "FILE", "GGUF model file")),
      ctx(int_flag(a, "ctx", reader::kDefaultContext)),
      kv(kv_flag(a)),
      threads(threads_flag(a)),
      f16_gemm(f16_gemm_flag(a)),
      chat(switch_flag(a, "chat")),
      system(text_flag(a, "system")),
      chat_template(chat_template_flag(a)),
      truncate(text_flag(a, "truncate")),
      prefix_cache(text_flag(a, "prefix_cache")),
      prefix_cache_mb(int_flag(a, "prefix_cache_mb")) {
  if (model_required) model.required();
}

void ReaderFlags::resolve_ctx() const {
  if (ctx_resolved_ || model.value.empty()) return;
  ctx_resolved_ = true;
  const int train = model::training_context(model.value);
  if (train <= 0) return;
  if (!ctx.seen && reader::default_context(train) != ctx.value) {
    // Positions past the training context are ones the model never saw (RoPE extrapolation):
    // default to what it was trained on.
    ctx.value = reader::default_context(train);
    std::fprintf(stderr, "note: --ctx defaults to %d, the model's training context\n", ctx.value);
  } else if (ctx.seen && ctx.value > train) {
    std::fprintf(stderr,
                 "note: --ctx %d exceeds the model's training context %d; positions past %d are "
                 "ones it never saw\n",
                 ctx.value, train, train);
  }
}

void ReaderFlags::check_chat_flags() const {
  if (chat_template.seen && !chat.value && !template_without_chat)
    throw UsageError("--chat-template", "names the format of --chat; give --chat too");
  // A system message is a turn of a chat prompt: without --chat it would be left out unsaid (pass
  // 24: generate --system ... and serve --system ran raw prompts).
  if (system.seen && !chat.value)
    throw UsageError("--system", "is the system turn of --chat prompts; give --chat too");
}

reader::NativeOptions ReaderFlags::native_options() const {
  // The CLI's on|off is its own spelling of the setting's bool.
  if (prefix_cache.value != "on" && prefix_cache.value != "off")
    throw UsageError("--prefix-cache", "expected on or off, got '" + prefix_cache.value + "'");
  check_chat_flags();
  reader::EngineSettings s;
  s.threads = threads.value;
  s.ctx = ctx.value;
  s.kv = kv.value;
  s.chat = chat.value;
  s.system = system.value;
  s.chat_template = chat_template.value;
  s.truncate = truncate.value;
  s.prefix_cache = prefix_cache.value == "on";
  s.prefix_cache_mb = prefix_cache_mb.value;
  const bool f16_flag = !f16_gemm.value.empty();
  if (f16_flag) s.f16_gemm = f16_gemm.value;
  engine_env_settings(s, f16_flag);
  // Every setting is checked before the --ctx note, so a usage error is the only thing printed.
  reader::NativeOptions o;
  try {
    o = reader::native_options(s, 0);
  } catch (const OptionError& e) {
    throw spell_engine_setting(e, f16_flag);
  }
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
  if (file.seen) return read_file_bytes(file.value, kMaxTextFileBytes, "prompt file");
  throw UsageError("prompt", "missing prompt: give -p TEXT or --file FILE");
}

}  // namespace ragform::cli

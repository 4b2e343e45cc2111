// The flags every reader-using command shares, declared once:
//   -m MODEL.gguf, --ctx, --kv f32|f16, --threads, --f16-gemm, --chat, --system, --chat-template,
//   --truncate,
//   --prefix-cache on|off, --prefix-cache-mb N
// and the prompt source: -p TEXT or --file F (exact bytes).
#pragma once
#include <memory>
#include <string>

#include "cli/args.h"
#include "reader/native_reader.h"

namespace ragform::cli {

// --f16-gemm exact|int16, declared by every command that loads a model (empty when not given:
// RAGFORM_F16_GEMM, else exact; engine_options_from_env).
Opt<std::string>& f16_gemm_flag(Args& a);

// -t, --threads N as declared in reader/engine_settings.h (help, default, range), for commands that
// run the engine without the other reader flags (the encoders of embed, classify, index build).
Opt<int>& threads_flag(Args& a);
// --kv f32|f16 as declared there, for commands that make a KV cache without a reader (bench).
Opt<std::string>& kv_flag(Args& a);
// --chat-template NAME as declared there, for commands that render a chat prompt without a reader
// (tokenize --chat).
Opt<std::string>& chat_template_flag(Args& a);

struct ReaderFlags {
  explicit ReaderFlags(Args& a, bool model_required = true);
  Opt<std::string>& model;
  Opt<int>& ctx;
  Opt<std::string>& kv;
  Opt<int>& threads;
  Opt<std::string>& f16_gemm;
  Flag& chat;
  Opt<std::string>& system;
  Opt<std::string>& chat_template;
  Opt<std::string>& truncate;
  Opt<std::string>& prefix_cache;
  Opt<int>& prefix_cache_mb;
  // Whether --chat-template means something without --chat (serve: /v1/chat/completions' format);
  // elsewhere it alone is a usage error.
  bool template_without_chat = false;
  // Sets --ctx to the model's training context when it was not given and the default exceeds it
  // (a note on stderr), or notes a given --ctx beyond it. Called by native_options(); commands
  // that read ctx.value before opening the reader call it first.
  void resolve_ctx() const;
  // UsageError for --system or --chat-template without --chat (serve: --chat-template alone names
  // /v1/chat/completions' format). native_options() and RemoteFlags::open() call it.
  void check_chat_flags() const;
  reader::NativeOptions native_options() const;
  std::unique_ptr<reader::NativeReader> open_native() const;

 private:
  mutable bool ctx_resolved_ = false;
};

// Prints "prefill: computed C of S prompt tokens (R% reused)" on stderr: what the reader
// prefilled since it was opened (one reader per invocation), for readers that count (native).
void note_prefill(const reader::Reader& r);

struct PromptFlags {
  explicit PromptFlags(Args& a);
  Opt<std::string>& text;
  Opt<std::string>& file;
  // The prompt bytes; UsageError unless exactly one of -p / --file was given.
  std::string read() const;
};

}  // namespace ragform::cli

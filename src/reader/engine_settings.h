// The reader and engine settings of a native model, declared once (base/options.h): their keys,
// CLI flags and variables, help, defaults, ranges, and the one check and conversion of their
// values (native_options below). Every front end binds its own spelling of them from this
// declaration: the CLI as flags (cli/reader_flags.h; `ragform serve` reuses them) and the CPU tier
// and load mode as RAGFORM_* variables (cli/engine_env.h); Python as ragform.Model's keyword
// arguments, with the defaults and signature of ragform._ragform.options("model")
// (python/src/engine.cpp, python/ragform/__init__.py). A setting added here is a flag and a
// keyword at once, with the same help, default, range and error; an error names the setting by
// its key (OptionError) and each front end spells it (`--kv`, `kv=`).
#pragma once
#include <climits>
#include <optional>
#include <string>

#include "base/options.h"
#include "base/threads.h"
#include "engine/model/engine_options.h"
#include "reader/native_reader.h"

namespace ragform::reader {

// The default context length (engine_options.h), the --ctx flag's and ctx=None's.
using ::ragform::default_context;
using ::ragform::kDefaultContext;

// The order is Python's (Model's positional parameters); the CLI's --help keeps its own order.
struct EngineSettings {
  int threads = 0;
  std::optional<int> ctx;  // unset: default_context(the model's training context)
  std::string kv = "f32";
  bool chat = false;
  std::string system;
  std::string truncate = "error";
  std::string f16_gemm = "exact";
  bool prefix_cache = true;
  int prefix_cache_mb = 0;
  // Machine settings rather than a run's: the CLI takes them from its environment only.
  std::optional<std::string> cpu;   // unset: what the CPU has
  std::optional<std::string> load;  // unset: files of 64 MB+ into huge pages where there is room
  std::string numerics = "ggml";    // whose rounding of RoPE angles and GELU (engine_options.h)
  // The chat format's family name ("" = the model file's tokenizer.chat_template). Last, so
  // Model's positional parameters before it keep their places.
  std::string chat_template;

  template <class V>
  void visit(V&& v) {
    // The help texts are the CLI's (docs/cli.md is generated from them).
    v(OptionDecl{"threads", "-t,--threads", "N", "worker threads (0 = all cores)"}
          .count(0, max_threads())
          .range_words("0..4 x the cores")
          .first(),
      threads);
    v(OptionDecl{"ctx", "--ctx", "N",
                 "context size in tokens per sequence (the model's training context when that "
                 "is smaller than the default)"}
          .count(1, INT_MAX)
          .when_unset(std::to_string(kDefaultContext) +
                      ", or the model's training context when that is smaller")
          .first(),
      ctx);
    v(OptionDecl{"kv", "--kv", "TYPE", "KV cache type: f32 or f16 (half the memory)"}.first(), kv);
    v(OptionDecl{"chat", "--chat", "",
                 "wrap the prompt as the user turn of the model's chat template"}
          .flag_only()
          .first(),
      chat);
    v(OptionDecl{"system", "--system", "TEXT", "system message in --chat mode"}
          .empty_value()
          .first(),
      system);
    v(OptionDecl{"truncate", "--truncate", "POLICY",
                 "prompt longer than --ctx: error, or left (keep BOS and the end)"}
          .first(),
      truncate);
    // The errors are the ones measured on the F16 fixtures (docs/engine.md, accuracy table).
    v(OptionDecl{"f16_gemm", "--f16-gemm", "HOW",
                 "F16/BF16 products: exact (default; a prompt's logits do not depend on its "
                 "batch) or int16 (approximate, AVX512-VNNI only: faster prefill, F16 fixture "
                 "logits 2.1e-3 from llama.cpp's against 1.4e-3, batch-dependent)"}
          .from_env("RAGFORM_F16_GEMM")
          .first(),
      f16_gemm);
    v(OptionDecl{"prefix_cache", "--prefix-cache", "on|off",
                 "reuse the KV rows of prompt prefixes prefilled before (exact: same numbers)"}
          .on_off()
          .first(),
      prefix_cache);
    v(OptionDecl{"prefix_cache_mb", "--prefix-cache-mb", "N",
                 "prefix cache bound in MiB (LRU; 0 = 1/8 of the memory the process may use: RAM, "
                 "RLIMIT_AS and the cgroup limit, the smallest; at most 2048)"}
          .count(0, 1 << 20)
          .first(),
      prefix_cache_mb);
    v(OptionDecl{"cpu", "", "TIER", "scalar, avx2 or avx512: cap the kernels' CPU tier"}
          .from_env("RAGFORM_CPU")
          .first(),
      cpu);
    v(OptionDecl{"load", "", "HOW", "mmap: map model files; memory: read them into huge pages"}
          .from_env("RAGFORM_LOAD")
          .first(),
      load);
    v(OptionDecl{"numerics", "", "WHOSE",
                 "ggml (default: llama.cpp's RoPE angles and F16 GELU table) or transformers (its "
                 "float RoPE angles and exact tanh GELU; a BERT encoder's erf GELU)"}
          .from_env("RAGFORM_NUMERICS")
          .first(),
      numerics);
    v(OptionDecl{"chat_template", "--chat-template", "NAME",
                 "chat format for --chat (and serve's /v1/chat/completions): chatml, llama2, "
                 "llama2-sys, llama2-sys-bos, llama2-sys-strip, mistral-v1, mistral-v3, "
                 "mistral-v3-tekken, mistral-v7, mistral-v7-tekken, phi3, llama3 or gemma "
                 "(default: the model file's tokenizer.chat_template)"}
          .empty_value()
          .first(),
      chat_template);
  }
};

// The declaration of the setting `key` (its flag, variable, help, range and default); throws
// Error("engine settings", ...) for a key that is not declared.
const OptionInfo& engine_setting(const std::string& key);

// The one check of every setting (its range or its set of values) and what the settings mean for
// a native reader; ctx unset is default_context(training_context). OptionError names the setting.
NativeOptions native_options(const EngineSettings& s, int training_context);
// The engine part alone (threads, f16_gemm, cpu, load, numerics), for an encoder.
EngineOptions engine_options(const EngineSettings& s);
// Whether `kv` asks for an F16 KV cache; OptionError("kv") unless it is f32 or f16.
bool kv_f16(const std::string& kv);

}  // namespace ragform::reader

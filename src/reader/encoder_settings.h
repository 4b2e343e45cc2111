// The settings of a native encoder (reader/native_encoder.h), declared once (base/options.h) as
// reader/engine_settings.h declares a reader's: their keys, CLI flags and variables, help,
// defaults and ranges, and the one check and conversion of their values
// (native_encoder_options below). The CLI binds them as `embed`'s and `classify`'s flags
// (cli/encoder_flags.h; cpu, load, numerics and f16_gemm from the RAGFORM_* variables,
// cli/engine_env.h), Python as ragform.Encoder's keyword arguments (python/src/engine.cpp, with
// the signature of ragform._ragform.options("encoder")). The engine settings among them are the
// reader's own declarations (engine_setting), so `threads` means and checks the same for both.
#pragma once
#include <climits>
#include <optional>
#include <string>

#include "base/options.h"
#include "reader/engine_settings.h"
#include "reader/native_encoder.h"

namespace ragform::reader {

struct EncoderSettings {
  int threads = 0;
  // Machine settings: the CLI takes them from its environment only (as a reader's).
  std::optional<std::string> cpu;
  std::optional<std::string> load;
  std::string truncate = "right";
  int max_tokens = 0;
  int batch_tokens = 4096;
  std::string numerics = "ggml";
  std::string f16_gemm = "exact";

  template <class V>
  void visit(V&& v) {
    // Python's positional order: path, threads, cpu, load (as ragform.Encoder always took them).
    v(engine_setting("threads").decl, threads);
    v(engine_setting("cpu").decl, cpu);
    v(engine_setting("load").decl, load);
    // Not the reader's --truncate (a prompt over --ctx: error or left): an encoder input is one
    // passage, and a passage cut at its end still has an embedding.
    v(OptionDecl{"truncate", "--truncate", "MODE",
                 "input longer than the model: right (drop word-pieces at the end, counted on "
                 "stderr) or error"}
          .first(),
      truncate);
    v(OptionDecl{"max_tokens", "--max-tokens", "N",
                 "longest input in tokens (0 = the length the model was trained for: "
                 "sentence-transformers' max_seq_length when the file records it, else the "
                 "model's position table)"}
          .count(0, INT_MAX)
          .first(),
      max_tokens);
    // Bounded: a pass's activations grow with it (2,000 texts in one pass of INT_MAX tokens held
    // 2.4 GB where the default holds 52 MB), and 65,536 is already past any speed gain.
    v(OptionDecl{"batch_tokens", "--batch-tokens", "N", "tokens per forward pass"}
          .count(1, 65536)
          .first(),
      batch_tokens);
    v(engine_setting("numerics").decl, numerics);
    v(env_only(engine_setting("f16_gemm").decl), f16_gemm);
  }

 private:
  // A reader's setting that an encoder's CLI takes from the environment only: `embed` has no
  // --f16-gemm (RAGFORM_F16_GEMM still applies, as it always did).
  static OptionDecl env_only(OptionDecl d) {
    d.flag.clear();
    d.metavar.clear();
    return d;
  }
};

// The declaration of the encoder setting `key`; throws Error("encoder settings", ...) for a key
// that is not declared.
const OptionInfo& encoder_setting(const std::string& key);

// The one check of every setting (its range or its set of values; OptionError names it) and the
// options they give a NativeEncoder.
NativeEncoderOptions native_encoder_options(const EncoderSettings& s);
// The same with the engine options given: an encoder that runs beside a reader (spotlight's model
// encoder, SURE's NLI model, serve's encoders, an index's encoder) takes the reader's, and the
// rest of its settings from `s` (by default the declared defaults).
NativeEncoderOptions native_encoder_options(const EncoderSettings& s, const EngineOptions& engine);

}  // namespace ragform::reader

// An encoder's settings are declared once (reader/encoder_settings.h): `embed` and `classify` bind
// their flags from the declaration, the library checks every value by its key, and the CLI spells
// a refusal as the flag or variable the value came from. The engine settings among them are the
// reader's own declarations. (python/tests/test_engine_settings.py checks the same declaration
// against ragform.Encoder's keywords and the same refusals with Python's spelling.)
#include <gtest/gtest.h>

#include <stdlib.h>

#include <string>
#include <type_traits>
#include <vector>

#include "base/options.h"
#include "reader/encoder_settings.h"
#include "reader/engine_settings.h"
#include "reader/native_encoder.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

TEST(EncoderSettings, TheDeclaredDefaultsAreTheEncodersDefaults) {
  const reader::NativeEncoderOptions declared = reader::native_encoder_options({});
  const reader::NativeEncoderOptions plain;
  EXPECT_EQ(declared.truncate, plain.truncate);
  EXPECT_EQ(declared.max_tokens, plain.max_tokens);
  EXPECT_EQ(declared.max_batch_tokens, plain.max_batch_tokens);
  EXPECT_EQ(declared.engine.threads, plain.engine.threads);
  EXPECT_EQ(declared.engine.f16_gemm, plain.engine.f16_gemm);
  EXPECT_EQ(declared.engine.numerics, plain.engine.numerics);
  // The engine settings are the reader's declarations, not copies.
  for (const char* key : {"threads", "cpu", "load", "numerics"}) {
    SCOPED_TRACE(key);
    const OptionDecl& e = reader::engine_setting(key).decl;
    const OptionDecl& d = reader::encoder_setting(key).decl;
    EXPECT_EQ(d.flag, e.flag);
    EXPECT_EQ(d.help, e.help);
    EXPECT_EQ(d.env, e.env);
    EXPECT_EQ(reader::encoder_setting(key).default_text, reader::engine_setting(key).default_text);
  }
  // f16_gemm: the variable only (the encoder commands never had --f16-gemm).
  EXPECT_EQ(reader::encoder_setting("f16_gemm").decl.flag, "");
  EXPECT_EQ(reader::encoder_setting("f16_gemm").decl.env, "RAGFORM_F16_GEMM");
}

TEST(EncoderSettings, TheLibraryChecksEachSettingByItsKeyAndTheCliSpellsIt) {
  struct Case {
    std::string key, value, why;
  };
  const std::vector<Case> cases = {
      {"truncate", "left", "expected right or error, got 'left'"},
      {"batch_tokens", "0", "value out of range: 0 (accepted: 1..65536)"},
      {"max_tokens", "-1", "value out of range: -1 (accepted: 0 or more)"},
      {"threads", "100000",
       "value too large: 100000 (largest accepted: " + std::to_string(max_threads()) + ")"},
      {"load", "disk", "expected mmap or memory, got 'disk'"},
      {"f16_gemm", "fast", "expected exact or int16, got 'fast'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    reader::EncoderSettings s;
    bool found = false;
    s.visit([&](const OptionDecl& d, auto& field) {
      if (d.key != c.key) return;
      found = true;
      using F = std::remove_cvref_t<decltype(field)>;
      if constexpr (std::is_same_v<F, std::string> || std::is_same_v<F, std::optional<std::string>>)
        field = c.value;
      else if constexpr (std::is_same_v<F, int>)
        field = std::stoi(c.value);
    });
    ASSERT_TRUE(found);
    try {
      reader::native_encoder_options(s);
      ADD_FAILURE() << "accepted";
    } catch (const OptionError& e) {
      EXPECT_EQ(e.key(), c.key);
      EXPECT_EQ(e.why(), c.why);
    }
  }
  // The CLI's spelling, before the model is looked for: the flag, or the variable.
  auto r = run_ragform("embed -m /nonexistent.gguf --file /dev/null --truncate left");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: --truncate: expected right or error, got 'left'\n");
  r = run_ragform("classify -m /nonexistent.gguf --file /dev/null --batch-tokens 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batch-tokens: value out of range: 0"), std::string::npos) << r.err;
  ::setenv("RAGFORM_LOAD", "disk", 1);
  r = run_ragform("embed -m /nonexistent.gguf --file /dev/null");
  ::unsetenv("RAGFORM_LOAD");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: RAGFORM_LOAD: expected mmap or memory, got 'disk'\n");
}

TEST(EncoderSettings, EveryDeclaredFlagIsAnEmbedAndClassifyFlagWithItsDefault) {
  for (const char* command : {"embed", "classify"}) {
    SCOPED_TRACE(command);
    const auto r = run_ragform(std::string(command) + " --help");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string help = r.out + r.err;
    for (const OptionInfo& o : option_infos<reader::EncoderSettings>()) {
      const OptionDecl& d = o.decl;
      if (d.flag.empty()) continue;
      const std::string long_name = d.flag.substr(d.flag.rfind(',') + 1);
      const size_t at = help.find(long_name);
      ASSERT_NE(at, std::string::npos) << long_name;
      // The default shown is the declaration's (the threads line is the reader's, 0).
      const std::string line = help.substr(at, help.find("\n  -", at) - at);
      EXPECT_NE(line.find("[default: " + o.default_text), std::string::npos) << line;
    }
  }
}

}  // namespace
}  // namespace ragform::testing

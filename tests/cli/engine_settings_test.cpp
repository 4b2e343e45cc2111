// The reader and engine settings are declared once (reader/engine_settings.h) and the CLI's flags
// come from that declaration: every declared flag is a flag of `generate --help` with the declared
// help, the encoder commands' --threads is the same flag, every declared variable is listed by
// `ragform --help`, and the default context length is decided by one function that the --ctx
// default agrees with. The values are checked once, by the library, with errors naming the
// setting's key, which the CLI spells as the flag or variable the value came from.
// (python/tests/test_engine_settings.py checks the same declaration against ragform.Model's
// keywords and the same refusals with Python's spelling.)
#include <gtest/gtest.h>

#include <stdlib.h>

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "base/options.h"
#include "engine/runtime/context.h"
#include "reader/engine_settings.h"
#include "reader/native_reader.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

// The help printer may wrap a long help line: compare with runs of whitespace made single spaces.
std::string squeeze(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  return out;
}

TEST(EngineSettings, DefaultContextIsTheSmallerOfTheDefaultAndTheTrainingContext) {
  EXPECT_EQ(reader::default_context(0), reader::kDefaultContext);
  EXPECT_EQ(reader::default_context(-1), reader::kDefaultContext);
  EXPECT_EQ(reader::default_context(512), 512);
  EXPECT_EQ(reader::default_context(reader::kDefaultContext), reader::kDefaultContext);
  EXPECT_EQ(reader::default_context(131072), reader::kDefaultContext);
  // ctx unset means that function of the training context; a reader's and a context's default
  // and the --ctx flag's are the same length.
  EXPECT_EQ(reader::engine_setting("ctx").default_text, "none");
  EXPECT_EQ(reader::native_options({}, 0).n_ctx, reader::kDefaultContext);
  EXPECT_EQ(reader::native_options({}, 512).n_ctx, 512);
  reader::EngineSettings given;
  given.ctx = 100000;
  EXPECT_EQ(reader::native_options(given, 512).n_ctx, 100000);
  const auto r = run_ragform("generate --help");
  EXPECT_NE(r.out.find("[default: " + std::to_string(reader::kDefaultContext)), std::string::npos);
  EXPECT_EQ(reader::NativeOptions{}.n_ctx, reader::kDefaultContext);
  EXPECT_EQ(runtime::ContextParams{}.n_ctx, reader::kDefaultContext);
}

TEST(EngineSettings, EveryEngineSettingIsDeclaredOnceWithAUniqueKey) {
  std::set<std::string> keys;
  for (const OptionInfo& o : option_infos<reader::EngineSettings>()) {
    EXPECT_TRUE(keys.insert(o.decl.key).second) << o.decl.key;
    // Each setting reaches the CLI as a flag or as an environment variable.
    EXPECT_TRUE(!o.decl.flag.empty() || !o.decl.env.empty()) << o.decl.key;
  }
  for (const char* k : {"ctx", "kv", "threads", "f16_gemm", "prefix_cache", "prefix_cache_mb",
                        "cpu", "load", "numerics"})
    EXPECT_TRUE(keys.count(k)) << k;
  EXPECT_THROW(reader::engine_setting("no_such_setting"), std::exception);
}

// One check of the values, in the library, naming the key; the CLI says the flag or the variable
// the value came from (the same words: "expected f32 or f16, got 'f8'").
TEST(EngineSettings, TheLibraryChecksEachSettingByItsKeyAndTheCliSpellsIt) {
  struct Case {
    std::string key, value, why;
  };
  const std::vector<Case> cases = {
      {"kv", "f8", "expected f32 or f16, got 'f8'"},
      {"truncate", "right", "expected error or left, got 'right'"},
      {"f16_gemm", "fast", "expected exact or int16, got 'fast'"},
      {"load", "disk", "expected mmap or memory, got 'disk'"},
      {"numerics", "exact", "expected ggml or transformers, got 'exact'"},
      {"threads", "100000",
       "value too large: 100000 (largest accepted: " + std::to_string(max_threads()) + ")"},
      {"prefix_cache_mb", "2000000", "value too large: 2000000 (largest accepted: 1048576)"},
      {"ctx", "0", "value out of range: 0 (accepted: 1 or more)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    reader::EngineSettings s;
    s.visit([&](const OptionDecl& d, auto& field) {
      if (d.key != c.key) return;
      using F = std::remove_cvref_t<decltype(field)>;
      if constexpr (std::is_same_v<F, std::string> || std::is_same_v<F, std::optional<std::string>>)
        field = c.value;
      else if constexpr (std::is_same_v<F, int> || std::is_same_v<F, std::optional<int>>)
        field = std::stoi(c.value);
    });
    try {
      reader::native_options(s, 0);
      ADD_FAILURE() << "accepted";
    } catch (const OptionError& e) {
      EXPECT_EQ(e.key(), c.key);
      EXPECT_EQ(e.why(), c.why);
    }
  }
  // The CLI's spelling: the flag, or the variable the value came from.
  auto r = run_ragform("generate -m /nonexistent.gguf -p x --kv f8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: --kv: expected f32 or f16, got 'f8'\n");
  r = run_ragform("generate -m /nonexistent.gguf -p x --truncate right");
  EXPECT_EQ(r.err, "ragform: --truncate: expected error or left, got 'right'\n");
  r = run_ragform("generate -m /nonexistent.gguf -p x --prefix-cache maybe");
  EXPECT_EQ(r.err, "ragform: --prefix-cache: expected on or off, got 'maybe'\n");
  for (const auto& [var, value, why] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"RAGFORM_LOAD", "disk", "expected mmap or memory, got 'disk'"},
           {"RAGFORM_NUMERICS", "exact", "expected ggml or transformers, got 'exact'"},
           {"RAGFORM_CPU", "avx9000",
            "unknown CPU tier 'avx9000' (expected scalar, avx2 or avx512)"}}) {
    ::setenv(var.c_str(), value.c_str(), 1);
    r = run_ragform("generate -m /nonexistent.gguf -p x");
    ::unsetenv(var.c_str());
    EXPECT_EQ(r.exit_code, 2) << var;
    EXPECT_EQ(r.err, "ragform: " + var + ": " + why + "\n");
  }
}

TEST(EngineSettings, EveryDeclaredFlagIsAGenerateFlagWithItsHelp) {
  const auto r = run_ragform("generate --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string help = squeeze(r.out + r.err);
  for (const OptionInfo& o : option_infos<reader::EngineSettings>()) {
    const OptionDecl& d = o.decl;
    if (d.flag.empty()) continue;
    const std::string long_name = d.flag.substr(d.flag.rfind(',') + 1);
    EXPECT_NE(help.find(long_name), std::string::npos) << long_name;
    EXPECT_NE(help.find(squeeze(d.help)), std::string::npos) << d.key << ": " << d.help;
  }
}

// The -t line of a command's --help ("" when it has none).
std::string threads_line(const std::string& command) {
  const auto r = run_ragform(command + " --help");
  const std::string help = r.out + r.err;
  const size_t at = help.find("  -t, --threads");
  return at == std::string::npos ? "" : help.substr(at, help.find('\n', at) - at);
}

TEST(EngineSettings, TheEncoderCommandsBindThreadsFromTheDeclaration) {
  const std::string generate = threads_line("generate");
  ASSERT_NE(generate.find(reader::engine_setting("threads").decl.help), std::string::npos)
      << generate;
  for (const char* command :
       {"embed", "classify", "index build", "bench", "quantize", "make-test-model"})
    EXPECT_EQ(threads_line(command), generate) << command;
  // The declared range is checked while the flags are read, before the model is looked for.
  const auto r = run_ragform("embed -m /nonexistent/model.gguf -t 100000 --file /dev/null");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("-t: value too large: 100000"), std::string::npos) << r.err;
}

TEST(EngineSettings, EveryDeclaredVariableIsListedByTheMainHelp) {
  const auto r = run_ragform("--help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string help = squeeze(r.out + r.err);
  for (const OptionInfo& o : option_infos<reader::EngineSettings>()) {
    const OptionDecl& d = o.decl;
    if (d.env.empty()) continue;
    EXPECT_NE(help.find(d.env), std::string::npos) << d.env;
    if (d.flag.empty()) {  // a setting without a flag is described where its variable is
      EXPECT_NE(help.find(squeeze(d.help)), std::string::npos) << d.key << ": " << d.help;
    }
  }
}

}  // namespace
}  // namespace ragform::testing

// The reader and engine settings are declared once (reader/engine_settings.h) and the CLI's flags
// come from that declaration: every declared flag is a flag of `generate --help` with the declared
// help, the encoder commands' --threads is the same flag, every declared variable is listed by
// `ragform --help`, and the default context length is decided by one function that the --ctx
// default agrees with. (python/tests/test_engine_settings.py
// checks the same declaration against ragform.Model's keywords.)
#include <gtest/gtest.h>

#include <set>
#include <string>

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
  // The --ctx flag's declared default, a reader's and a context's are that same length.
  EXPECT_EQ(std::stoi(reader::engine_setting("ctx").value), reader::kDefaultContext);
  EXPECT_EQ(reader::NativeOptions{}.n_ctx, reader::kDefaultContext);
  EXPECT_EQ(runtime::ContextParams{}.n_ctx, reader::kDefaultContext);
}

TEST(EngineSettings, EveryEngineSettingIsDeclaredOnceWithAUniqueKey) {
  std::set<std::string> keys;
  reader::visit_engine_settings([&](const reader::Setting& s) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    // Each setting reaches the CLI as a flag or as an environment variable.
    EXPECT_TRUE(*s.flag || *s.env) << s.key;
  });
  for (const char* k :
       {"ctx", "kv", "threads", "f16_gemm", "prefix_cache", "prefix_cache_mb", "cpu", "load"})
    EXPECT_TRUE(keys.count(k)) << k;
  EXPECT_THROW(reader::engine_setting("no_such_setting"), std::exception);
}

TEST(EngineSettings, EveryDeclaredFlagIsAGenerateFlagWithItsHelp) {
  const auto r = run_ragform("generate --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string help = squeeze(r.out + r.err);
  reader::visit_engine_settings([&](const reader::Setting& s) {
    if (!*s.flag) return;
    const std::string flag = s.flag;
    const std::string long_name = flag.substr(flag.rfind(',') + 1);
    EXPECT_NE(help.find(long_name), std::string::npos) << long_name;
    EXPECT_NE(help.find(squeeze(s.help)), std::string::npos) << s.key << ": " << s.help;
  });
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
  ASSERT_NE(generate.find(reader::engine_setting("threads").help), std::string::npos) << generate;
  for (const char* command : {"embed", "classify", "index build"})
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
  reader::visit_engine_settings([&](const reader::Setting& s) {
    if (!*s.env) return;
    EXPECT_NE(help.find(s.env), std::string::npos) << s.env;
    if (!*s.flag) {  // a setting without a flag is described where its variable is
      EXPECT_NE(help.find(squeeze(s.help)), std::string::npos) << s.key << ": " << s.help;
    }
  });
}

}  // namespace
}  // namespace ragform::testing

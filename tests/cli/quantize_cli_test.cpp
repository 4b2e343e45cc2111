// `ragform quantize` through the real binary: the summary line, a model the other commands run,
// the plan of --dry-run, progress when asked, and the errors with their exit codes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "support/test_support.h"

namespace {
namespace fs = std::filesystem;
using ragform::testing::quoted;
using ragform::testing::run_ragform;

struct Tiny {
  fs::path dir, f32;
};

// A tiny random F32 model (rows of 64: the K types fall back to 32-blocks).
Tiny tiny(const std::string& tag) {
  Tiny t;
  t.dir = ragform::testing::temp_dir(tag);
  t.f32 = t.dir / "tiny-f32.gguf";
  auto r = run_ragform("make-test-model --shape tiny --type f32 -o " + quoted(t.f32));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return t;
}

TEST(QuantizeCli, WritesARunnableModelAndSaysWhat) {
  const Tiny t = tiny("quantize_cli");
  const fs::path q = t.dir / "q.gguf";
  auto r = run_ragform("quantize " + quoted(t.f32) + " " + quoted(q) + " --type Q8_0 -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  // One line: where, what, tensors (converted / copied, by type), bytes in and out, time.
  const std::regex line(
      "quantize: wrote .*q\\.gguf: q8_0 \\(file type 7\\), 21 tensors \\(16 converted, 5 copied: "
      "5 f32, 16 q8_0\\), [0-9.]+ MB -> [0-9.]+ MB, [0-9.]+ s\n");
  EXPECT_TRUE(std::regex_match(r.err, line)) << r.err;
  EXPECT_FALSE(fs::exists(q.string() + ".tmp"));
  auto g = run_ragform("generate -m " + quoted(q) + " -p 'once upon a time' -n 3 --ignore-eos");
  EXPECT_EQ(g.exit_code, 0) << g.err;
  auto i = run_ragform("info " + quoted(q) + " --json");
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.out.find("Q8_0"), std::string::npos) << i.out;

  // --dry-run: one line a tensor on stdout, nothing written.
  const fs::path never = t.dir / "never.gguf";
  r = run_ragform("quantize " + quoted(t.f32) + " " + quoted(never) + " --type q4_k_m --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(never));
  EXPECT_NE(r.out.find("blk.1.ffn_down.weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32   -> q8_0"), std::string::npos) << r.out;  // Q6_K -> Q8_0 fallback
  EXPECT_NE(r.err.find("quantize: plan for"), std::string::npos) << r.err;
  r = run_ragform("quantize " + quoted(t.f32) + " --type q4_0 --dry-run");  // OUT not needed
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // Progress on stderr when asked (long work on a terminal shows it by default).
  setenv("RAGFORM_PROGRESS", "always", 1);
  r = run_ragform("quantize " + quoted(t.f32) + " " + quoted(t.dir / "p.gguf") + " --type q4_0");
  unsetenv("RAGFORM_PROGRESS");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("quantize q4_0"), std::string::npos) << r.err;
}

TEST(QuantizeCli, Errors) {
  const Tiny t = tiny("quantize_cli_err");
  const std::string in = quoted(t.f32), out = quoted(t.dir / "out.gguf");
  auto r = run_ragform("quantize " + in + " " + out + " --type q4_k_xl");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown --type 'q4_k_xl' (accepted: f32, f16, bf16, q8_0, q4_0"),
            std::string::npos)
      << r.err;
  r = run_ragform("quantize " + in + " " + in + " --type q8_0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is the input file"), std::string::npos) << r.err;
  r = run_ragform("quantize " + in + " --type q8_0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("OUT"), std::string::npos) << r.err;
  r = run_ragform("quantize " + in + " " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--type"), std::string::npos) << r.err;
  r = run_ragform("quantize " + quoted(t.dir / "missing.gguf") + " " + out + " --type q8_0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.gguf: no such file"), std::string::npos) << r.err;
  r = run_ragform("quantize " + in + " " + quoted(t.dir / "no/dir/out.gguf") + " --type q8_0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot create"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(t.dir / "out.gguf"));

  r = run_ragform("quantize --help");
  EXPECT_EQ(r.exit_code, 0);
  const std::string help = r.out + r.err;
  for (const char* part : {"Types: f32, f16, bf16", "q4_k_m", "llama-quantize --pure",
                           "back: Q4_K -> Q5_0", "--dry-run", "--threads"})
    EXPECT_NE(help.find(part), std::string::npos) << part;
}

}  // namespace

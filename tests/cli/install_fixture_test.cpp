// Issue 24 defect 10: an installed binary found SURE's prompts only through a build-tree path.
// `cmake --install` puts them beside the binary (PREFIX/share/ragform/prompts/sure), and the
// installed binary reads those first: a prompt edited in the installed copy is the one stored.
#include <gtest/gtest.h>

#include <cstdlib>

#include "pipelines/sure/nq_pairs_input.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ragform::testing::quoted;
using ragform::testing::read_file;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

TEST(Install, InstalledBinaryReadsTheInstalledPrompts) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("install");
  fs::path prefix = dir / "prefix";
  std::string cmd = "cmake --install '" + std::string(RAGFORM_BINARY_DIR) + "' --prefix " +
                    quoted(prefix) + " >" + quoted(dir / "install.log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_file(dir / "install.log");
  fs::path bin = prefix / "bin" / "ragform";
  fs::path prompts = prefix / "share" / "ragform" / "prompts" / "sure";
  ASSERT_TRUE(fs::exists(bin));
  ASSERT_TRUE(fs::exists(prompts / "closed_book.v1.txt"));
  // Mark the installed closed-book prompt, so a stored prompt shows which copy was read.
  std::string cb = read_file(prompts / "closed_book.v1.txt");
  write_file(prompts / "closed_book.v1.txt", "INSTALLED COPY. " + cb);

  write_file(dir / "qa.jsonl", ragform::testing::nq_pairs_input(nq, 1));
  auto run = [&](const std::string& args) {
    std::string c = quoted(bin) + " " + args + " >" + quoted(dir / "out") + " 2>" +
                    quoted(dir / "err") + " </dev/null";
    return std::system(c.c_str());
  };
  ASSERT_EQ(run("sure perturb --input " + quoted(dir / "qa.jsonl") + " --kinds format/json"), 0)
      << read_file(dir / "err");
  fs::copy_file(dir / "out", dir / "pairs.jsonl");
  // Run from elsewhere, so no path relative to the working directory can help.
  ASSERT_EQ(run("sure eval --input " + quoted(dir / "pairs.jsonl") + " -m " + quoted(model) +
                " --ctx 512 -n 2 --temp 0 --store " + quoted(dir / "run.sqlite")),
            0)
      << read_file(dir / "err");
  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  size_t closed_book = 0;
  for (const auto& r : st.results(std::nullopt))
    if (r.variant == "closed-book") {
      ++closed_book;
      EXPECT_EQ(r.prompt.rfind("INSTALLED COPY. ", 0), 0u) << r.prompt;
    }
  EXPECT_EQ(closed_book, 1u);
}

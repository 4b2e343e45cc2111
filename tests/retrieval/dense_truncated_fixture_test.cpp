// A dense index whose FAISS file is cut short (a copy interrupted, a full disk) is reported as a
// truncated or corrupt file named by its path, not with FAISS's internal multi-line exception.
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

TEST(DenseIndexFile, TruncatedFaissFileIsNamedAndSaidTruncatedOrCorrupt) {
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  auto d = temp_dir("dense-truncated");
  write_file(d / "c.jsonl",
             "{\"id\": \"a\", \"text\": \"alpha beta\"}\n{\"id\": \"b\", \"text\": \"gamma\"}\n"
             "{\"id\": \"c\", \"text\": \"delta epsilon\"}\n");
  write_file(d / "q.jsonl", "{\"question\": \"alpha?\"}\n");
  const fs::path ix = d / "ix";
  auto b = run_ragform("index build --corpus " + quoted(d / "c.jsonl") + " -o " + quoted(ix) +
                       " --dense -m " + quoted(bert));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string query = "retrieve --index " + quoted(ix) + " --input " + quoted(d / "q.jsonl") +
                            " --mode dense -m " + quoted(bert);
  ASSERT_EQ(run_ragform(query).exit_code, 0);

  const fs::path faiss = ix / "dense.faiss";
  const std::string bytes = read_file(faiss);
  for (size_t keep : {bytes.size() / 2, size_t(10), size_t(0)}) {
    write_file(faiss, bytes.substr(0, keep));
    auto r = run_ragform(query);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err, "ragform: " + faiss.string() + ": truncated or corrupt FAISS index (" +
                         std::to_string(keep) +
                         " bytes): FAISS cannot read it; rebuild the dense index (ragform index "
                         "build --dense)\n");
  }
}

}  // namespace
}  // namespace ragform::testing

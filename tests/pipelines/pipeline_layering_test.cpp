// The layering rules of docs/architecture.md that the compiler does not check, read from the source
// tree: no pipeline includes another pipeline's headers (what two share sits below both), and the
// front ends (the CLI, the server, the report, reproduce, tune and the Python module) reach a
// pipeline through its front door, pipelines/<p>/<p>.h, never a pipeline's own headers or its
// detail/.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kSrc = fs::path(RAGFORM_SOURCE_DIR) / "src";
const std::vector<std::string> kPipelines = {"cnorm", "spotlight", "sure"};

// (file, included pipeline, included header) for every `#include "pipelines/<p>/<h>"` below dir.
struct Include {
  std::string file, pipeline, header;
};
std::vector<Include> pipeline_includes(const fs::path& dir) {
  static const std::regex re(R"re(^\s*#\s*include\s*"pipelines/([a-z_]+)/([^"]+)")re");
  std::vector<Include> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path());
    std::smatch m;
    for (std::string line; std::getline(in, line);)
      if (std::regex_search(line, m, re))
        out.push_back({fs::relative(e.path(), kSrc.parent_path()).string(), m[1], m[2]});
  }
  return out;
}

TEST(PipelineLayering, NoPipelineIncludesAnother) {
  for (const std::string& p : kPipelines) {
    ASSERT_TRUE(fs::is_directory(kSrc / "pipelines" / p)) << p;
    for (const Include& inc : pipeline_includes(kSrc / "pipelines" / p))
      EXPECT_TRUE(inc.pipeline == p || inc.pipeline == "common")
          << inc.file << " includes pipelines/" << inc.pipeline << "/" << inc.header;
  }
}

TEST(PipelineLayering, FrontEndsUseTheFrontDoors) {
  size_t seen = 0;
  const fs::path root = kSrc.parent_path();
  for (const fs::path& front : {kSrc / "cli", kSrc / "server", kSrc / "report", kSrc / "reproduce",
                                kSrc / "tune", root / "python" / "src"}) {
    ASSERT_TRUE(fs::is_directory(front)) << front;
    for (const Include& inc : pipeline_includes(front)) {
      ++seen;
      EXPECT_EQ(inc.header, inc.pipeline + ".h")
          << inc.file << " includes pipelines/" << inc.pipeline << "/" << inc.header
          << " instead of the front door pipelines/" << inc.pipeline << "/" << inc.pipeline << ".h";
    }
  }
  EXPECT_GT(seen, 0u);  // the scan found the front ends' includes at all
  for (const std::string& p : kPipelines)
    EXPECT_TRUE(fs::is_regular_file(kSrc / "pipelines" / p / (p + ".h"))) << p;
}

}  // namespace

// The layering rules of docs/architecture.md that the compiler does not check, read from the source
// tree: no pipeline includes another pipeline's headers (what two share sits below both), and the
// front ends (the CLI, the server, the report, reproduce, tune and the Python module) reach a
// pipeline through its front door, pipelines/<p>/<p>.h, never a pipeline's own headers or its
// detail/; and the server's HTTP layer and route table know requests and replies, not the engine
// or the endpoints behind them.
#include <gtest/gtest.h>

#include <algorithm>
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

// server/http.h, connection.h, router.h and api_json.h (and their .cpp) include no engine, reader
// or pipeline header and, of the server's own, only message.h and each other: the HTTP layer does
// not depend on the engine (issue 41: router.h and http.h included api.h, which included the
// batching engine).
TEST(ServerLayering, HttpAndRouterKnowOnlyMessages) {
  static const std::regex re(R"re(^\s*#\s*include\s*"([a-z_]+)/([^"]+)")re");
  // api_json.h: the request-reading helpers and the error edge, which know messages alone too.
  const std::vector<std::string> allowed = {"server/message.h",  "server/router.h",
                                            "server/http.h",     "server/connection.h",
                                            "server/api_json.h", "server/request_fields.h"};
  size_t seen = 0;
  for (const char* f : {"http.h", "http.cpp", "connection.h", "connection.cpp", "router.h",
                        "router.cpp", "api_json.h", "request_fields.h", "request_fields.cpp"}) {
    std::ifstream in(kSrc / "server" / f);
    ASSERT_TRUE(in) << f;
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (!std::regex_search(line, m, re)) continue;
      ++seen;
      const std::string dir = m[1], header = dir + "/" + std::string(m[2]);
      if (dir == "base") continue;  // the utilities every layer may use
      EXPECT_NE(std::find(allowed.begin(), allowed.end(), header), allowed.end())
          << "server/" << f << " includes " << header;
    }
  }
  EXPECT_GT(seen, 0u);
}

}  // namespace

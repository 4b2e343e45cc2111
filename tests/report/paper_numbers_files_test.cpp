// The papers' numbers live in one file per paper (src/report/paper_numbers_<paper>.cpp) and
// paper_numbers() joins them: each file holds its paper's entries only, all of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "report/paper_numbers.h"

namespace {

namespace fs = std::filesystem;

TEST(PaperNumbersFiles, EachPaperHasItsOwnFileWithAllItsEntries) {
  const fs::path dir = fs::path(RAGFORM_SOURCE_DIR) / "src" / "report";
  static const std::regex entry(R"re(^\s*\{"([a-z]+)",)re");
  for (const std::string paper : {"cnorm", "sure", "spotlight"}) {
    const fs::path file = dir / ("paper_numbers_" + paper + ".cpp");
    ASSERT_TRUE(fs::exists(file)) << file;
    std::ifstream in(file);
    size_t in_file = 0;
    std::smatch m;
    for (std::string line; std::getline(in, line);) {
      if (!std::regex_search(line, m, entry)) continue;
      EXPECT_EQ(m[1], paper) << file << ": " << line;
      ++in_file;
    }
    size_t listed = 0;
    for (const auto& e : ragform::report::paper_numbers()) listed += e.paper == paper;
    EXPECT_EQ(in_file, listed) << paper;
    EXPECT_GT(listed, 0u) << paper;
  }
}

}  // namespace

// The Spotlight numbers docs/quickstart.md prints stay true: the documented `spotlight eval`
// command is taken from the page, run on the shared data, and every recall the page shows must
// be the one the program prints; the demo's summary line on the page must round the same numbers.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

struct DocumentedRun {
  std::string command;                   // after "$ ragform ", continuation lines joined
  std::map<std::string, double> recall;  // method -> recall@6 of group main, as printed
};

// The code block that starts with "$ ragform spotlight eval".
DocumentedRun documented_run(const std::string& page) {
  DocumentedRun d;
  std::istringstream in(page);
  bool in_command = false, in_block = false;
  static const std::regex row(
      R"re(^\{"kind":"recall","group":"main","method":"([a-z0-9-]+)","K":6,"recall":([0-9.]+),)re");
  for (std::string line; std::getline(in, line);) {
    if (!in_block && line.rfind("$ ragform spotlight eval", 0) == 0) {
      in_block = in_command = true;
      line = line.substr(2);
    }
    if (!in_block) continue;
    if (line.rfind("```", 0) == 0) break;
    if (in_command) {
      const bool more = !line.empty() && line.back() == '\\';
      if (more) line.pop_back();
      d.command += line.substr(line.find_first_not_of(' '));
      in_command = more;
      continue;
    }
    std::smatch m;
    if (std::regex_search(line, m, row)) d.recall[m[1]] = std::stod(m[2]);
  }
  return d;
}

TEST(QuickstartNumbers, SpotlightRecallIsWhatTheDocumentedCommandPrints) {
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  const std::string page = read_file(fs::path(RAGFORM_SOURCE_DIR) / "docs/quickstart.md");
  DocumentedRun doc = documented_run(page);
  ASSERT_EQ(doc.command.rfind("ragform spotlight eval ", 0), 0u) << doc.command;
  ASSERT_EQ(doc.recall.size(), 5u) << "the page lists spotlight, lead, lead-doc, random, bm25";

  // The page's paths are relative to the checkout, beside which the shared folder sits.
  std::string args = doc.command.substr(std::string("ragform ").size());
  for (size_t at; (at = args.find("../shared/")) != std::string::npos;)
    args.replace(at, 10, shared_dir().string() + "/");
  auto r = run_ragform(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, double> measured;
  for (const auto& j : json_lines(r.out))
    if (j.value("kind", "") == "recall" && j.value("group", "") == "main" && j.value("K", 0) == 6)
      measured[j["method"].get<std::string>()] = j["recall"].get<double>();
  for (const auto& [method, recall] : doc.recall) {
    ASSERT_TRUE(measured.count(method)) << method;
    EXPECT_NEAR(recall, measured[method], 5e-10) << method << " recall@6 on docs/quickstart.md";
  }

  // The demo's summary on the page ("Spotlight 300 HotpotQA questions, recall@6: ...") is the
  // same computation, rounded to three places.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      page, m,
      std::regex(
          R"(recall@6: spotlight ([0-9.]+) bm25 ([0-9.]+) lead ([0-9.]+) random ([0-9.]+))")));
  const char* order[] = {"spotlight", "bm25", "lead", "random"};
  for (int i = 0; i < 4; ++i) {
    char want[16];
    std::snprintf(want, sizeof want, "%.3f", measured[order[i]]);
    EXPECT_EQ(m[i + 1].str(), want) << order[i] << " in the demo's summary on docs/quickstart.md";
  }
}

}  // namespace
}  // namespace ragform::testing

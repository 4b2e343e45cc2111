// docs/sure.md against the binary: its synopsis block has a line for every verb `ragform sure`
// offers and names only flags that verb accepts, and its "Not done / limitations" section calls
// no command that exists planned or missing (the section once said retrieval was planned after
// `ragform index build`, `retrieve` and `sure prepare --index` had shipped).
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

std::string sure_md() {
  return read_file(std::filesystem::path(RAGFORM_SOURCE_DIR) / "docs/sure.md");
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The verbs listed under "verbs:" in `ragform sure --help`.
std::vector<std::string> sure_verbs() {
  auto r = run_ragform("sure --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> verbs;
  bool in_verbs = false;
  for (const auto& l : lines_of(r.out + r.err)) {
    if (l == "verbs:") {
      in_verbs = true;
    } else if (in_verbs && l.rfind("  ", 0) == 0) {
      verbs.push_back(l.substr(2, l.find(' ', 2) - 2));
    } else if (in_verbs) {
      break;
    }
  }
  return verbs;
}

// Every flag spelling of `ragform <command> --help`'s option lines ("  -m, --model FILE  ...").
std::set<std::string> help_flags(const std::string& command) {
  auto r = run_ragform(command + " --help");
  EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
  std::set<std::string> flags;
  const std::regex flag(R"((^|[ ,])(--?[A-Za-z][A-Za-z0-9-]*))");
  for (const auto& l : lines_of(r.out + r.err)) {
    if (l.rfind("  -", 0) != 0) continue;
    const std::string spec = l.substr(0, l.find("  ", 2));
    for (std::sregex_iterator it(spec.begin(), spec.end(), flag), end; it != end; ++it)
      flags.insert((*it)[2]);
  }
  return flags;
}

// The synopsis: the lines "ragform sure <verb> ..." of the first ``` block, by verb.
std::map<std::string, std::string> synopsis() {
  std::map<std::string, std::string> out;
  int fences = 0;
  for (const auto& l : lines_of(sure_md())) {
    if (l.rfind("```", 0) == 0 && ++fences == 2) break;
    if (fences == 1 && l.rfind("ragform sure ", 0) == 0) {
      std::istringstream in(l.substr(13));
      std::string verb;
      in >> verb;
      out[verb] = l;
    }
  }
  return out;
}

TEST(SureDocs, SynopsisHasEveryVerbWithFlagsTheVerbAccepts) {
  const auto verbs = sure_verbs();
  ASSERT_GE(verbs.size(), 8u);
  const auto syn = synopsis();
  const std::regex flag(R"((^|[ \[|])(--?[A-Za-z][A-Za-z0-9-]*))");
  for (const auto& v : verbs) {
    auto it = syn.find(v);
    ASSERT_NE(it, syn.end()) << "docs/sure.md's synopsis has no line for 'ragform sure " << v
                             << "'";
    const auto flags = help_flags("sure " + v);
    const std::string& line = it->second;
    for (std::sregex_iterator m(line.begin(), line.end(), flag), end; m != end; ++m)
      EXPECT_TRUE(flags.count((*m)[2])) << "sure " << v << " has no flag " << (*m)[2];
  }
}

// The bullets of the section (a bullet runs from "- " to the next bullet or blank line).
std::vector<std::string> not_done_bullets() {
  const std::string md = sure_md();
  const size_t at = md.find("## Not done / limitations");
  EXPECT_NE(at, std::string::npos);
  const size_t end = md.find("\n## ", at + 1);
  std::vector<std::string> bullets;
  for (const auto& l : lines_of(md.substr(at, end - at))) {
    if (l.rfind("- ", 0) == 0)
      bullets.push_back(l);
    else if (!l.empty() && l[0] == ' ' && !bullets.empty())
      bullets.back() += " " + l;
  }
  return bullets;
}

TEST(SureDocs, NotDoneCallsNoExistingCommandPlanned) {
  const auto bullets = not_done_bullets();
  ASSERT_FALSE(bullets.empty());
  const std::regex command("`ragform ([a-z][a-z -]*?)( --?[a-z].*?)?`");
  const std::regex future(R"(\b(planned|until then|not yet|will be|to come)\b)", std::regex::icase);
  for (const auto& b : bullets) {
    if (!std::regex_search(b, future)) continue;
    for (std::sregex_iterator m(b.begin(), b.end(), command), end; m != end; ++m) {
      const std::string words = (*m)[1];
      auto r = run_ragform(words + " --help");
      EXPECT_NE(r.exit_code, 0) << "docs/sure.md's limitations call `ragform " << words
                                << "` to come, but the binary has it: " << b;
    }
  }
}

}  // namespace
}  // namespace ragform::testing

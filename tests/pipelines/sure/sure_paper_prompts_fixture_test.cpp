// SURE's prompts that the paper prints (../shared/papers/sure-spurious-features.txt) are the
// prompt files character for character: Figure 10's NLI prompt (placeholders renamed to the ones
// `fill` uses) and Figure 11's instruction I.
#include <gtest/gtest.h>

#include <sstream>

#include "pipelines/sure/prompts.h"
#include "support/test_support.h"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> paper() {
  auto path = ragform::testing::shared_path("papers/sure-spurious-features.txt");
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
  return lines_of(ragform::testing::read_file(path));
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// The figure's lines: from the one starting with `first` up to the blank line before its caption,
// joined by newlines.
// The text extraction indents a figure's continuation lines by one space, which the figure itself
// does not have (another extraction of the same PDF prints them flush), so it is dropped.
std::string figure_text(const std::vector<std::string>& lines, const std::string& first) {
  size_t i = 0;
  while (i < lines.size() && lines[i].rfind(first, 0) != 0) ++i;
  EXPECT_LT(i, lines.size()) << "no figure line starting with " << first;
  std::string out;
  for (; i < lines.size() && !lines[i].empty(); ++i)
    out +=
        (out.empty() ? "" : "\n") + (lines[i].rfind(' ', 0) == 0 ? lines[i].substr(1) : lines[i]);
  return out;  // without a final newline, as load_prompts reads a prompt file
}

TEST(SurePaperPrompts, NliPromptIsFigure10) {
  auto fig = figure_text(paper(), "Consider the two passages below.");
  fig = replace_all(fig, "{raw text}", "{premise}");
  fig = replace_all(fig, "{perturbated text}", "{hypothesis}");
  ASSERT_NE(fig.find("paraphrases,'contradiction'"), std::string::npos) << fig;
  auto ps = ragform::sure::load_prompts();
  EXPECT_EQ(ps.get("nli"), fig);
}

TEST(SurePaperPrompts, QaInstructionIsFigure11) {
  auto fig = figure_text(paper(), "You are given a question and you MUST respond");
  auto ps = ragform::sure::load_prompts();
  EXPECT_EQ(ps.get("qa_instruction"), fig);
}

}  // namespace

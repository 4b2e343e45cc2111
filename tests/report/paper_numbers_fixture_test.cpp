// The papers' numbers (report/paper_numbers.h) against the paper texts in ../shared/papers/:
//   - every entry's value is printed in its paper, on a line naming its method (or model);
//   - a sample of table cells, read here from the paper's tab-separated table by header and row
//     (a second, independent reading), equals the entry of the same cell.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/paper_numbers.h"
#include "support/test_support.h"

namespace {

using ragform::report::paper_numbers;
using ragform::report::PaperNumber;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string c;
  for (char ch : line) {
    if (ch == '\t') {
      out.push_back(c);
      c.clear();
    } else {
      c += ch;
    }
  }
  out.push_back(c);
  return out;
}

std::string paper_file(const std::string& paper) {
  if (paper == "cnorm") return "papers/cnorm-surface-formatting.txt";
  if (paper == "sure") return "papers/sure-spurious-features.txt";
  return "papers/spotlightrag-span-selection.txt";
}

// True when `line` holds `v` as a number written with 0-3 decimals (as the papers print them).
bool line_has_value(const std::string& line, double v) {
  for (int d = 0; d <= 3; ++d) {
    char b[32];
    std::snprintf(b, sizeof b, "%.*f", d, v);
    std::string s = b;
    if (std::fabs(std::stod(s) - v) > 1e-9) continue;
    for (size_t pos = line.find(s); pos != std::string::npos; pos = line.find(s, pos + 1)) {
      auto num = [](char c) { return std::isdigit((unsigned char)c) || c == '.'; };
      bool left = pos == 0 || !num(line[pos - 1]) || (s[0] == '-');
      // A sentence's full stop after the number is not a decimal point.
      size_t e = pos + s.size();
      bool right =
          e >= line.size() || !num(line[e]) ||
          (line[e] == '.' && (e + 1 >= line.size() || !std::isdigit((unsigned char)line[e + 1])));
      if (left && right) return true;
    }
  }
  return false;
}

const PaperNumber* find(const std::string& paper, const std::string& exp, const std::string& model,
                        const std::string& method, const std::string& metric) {
  for (const auto& e : paper_numbers())
    if (paper == e.paper && exp == e.experiment && model == e.model && method == e.method &&
        metric == e.metric)
      return &e;
  return nullptr;
}

TEST(PaperNumbers, EveryValueIsPrintedInItsPaper) {
  std::map<std::string, std::vector<std::string>> text;
  for (const char* p : {"cnorm", "sure", "spotlight"}) {
    auto path = ragform::testing::shared_path(paper_file(p));
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    text[p] = lines_of(ragform::testing::read_file(path));
  }
  ASSERT_GT(paper_numbers().size(), 350u);
  for (const auto& e : paper_numbers()) {
    bool found = false;
    for (const auto& l : text[e.paper])
      if (line_has_value(l, e.value)) found = true;
    EXPECT_TRUE(found) << e.paper << " " << e.experiment << " " << e.method << " " << e.metric
                       << " = " << e.value << " is not printed in the paper";
  }
}

// One cell of a tab-separated table: the row whose cell `row_col` is `row`, after the header line
// that starts with `header`, at column `col` (0-based, of the row's own cells).
double cell(const std::vector<std::string>& lines, const std::string& header, size_t row_col,
            const std::string& row, size_t col) {
  size_t i = 0;
  while (i < lines.size() && lines[i].rfind(header, 0) != 0) ++i;
  EXPECT_LT(i, lines.size()) << "no header " << header;
  for (++i; i < lines.size(); ++i) {
    auto c = cells(lines[i]);
    if (c.size() > std::max(row_col, col) && c[row_col] == row) return std::stod(c[col]);
  }
  ADD_FAILURE() << "no row " << row << " after " << header;
  return NAN;
}

TEST(PaperNumbers, SampleOfTableCellsMatchesThePaper) {
  auto cn =
      lines_of(ragform::testing::read_file(ragform::testing::shared_path(paper_file("cnorm"))));
  auto su =
      lines_of(ragform::testing::read_file(ragform::testing::shared_path(paper_file("sure"))));
  auto sp =
      lines_of(ragform::testing::read_file(ragform::testing::shared_path(paper_file("spotlight"))));
  struct Case {
    const std::vector<std::string>* lines;
    std::string header;
    size_t row_col;
    std::string row;
    size_t col;
    std::string paper, exp, model, method, metric;
  };
  const std::vector<Case> cases = {
      // C-NORM Table 1: the Qwen rows carry the model only on the first one.
      {&cn, "Model\tMethod\tOverall", 0, "LLaMA-2-7B-Chat", 3, "cnorm", "longbench",
       "LLaMA-2-7B-Chat", "Baseline", "accuracy easy"},
      {&cn, "\tC-NORM\t27.6", 0, "Qwen2.5-1.5B-Instruct", 4, "cnorm", "longbench",
       "Qwen2.5-1.5B-Instruct", "Baseline", "accuracy hard"},
      {&cn, "Qwen2.5-1.5B-Instruct\tBaseline", 1, "C-NORM", 4, "cnorm", "longbench",
       "Qwen2.5-1.5B-Instruct", "C-NORM", "accuracy hard"},
      {&cn, "LLaMA-2-7B-Chat\tBaseline", 1, "C-NORM", 7, "cnorm", "longbench", "LLaMA-2-7B-Chat",
       "C-NORM", "accuracy long"},
      {&cn, "Setting\tOAA\tOPA", 0, "Top 1%", 2, "cnorm", "alpaca-replacement",
       "Stanford Alpaca 7B", "Top 1%", "OPA"},
      // SURE Table 1: columns LR RR WR Org Acc per subset after taxonomy and perturbation.
      {&su, "Style\tSimple", 1, "HTML", 2, "sure", "sure-wiki", "Mistral-7B-Instruct-v0.3", "HTML",
       "Known-Golden LR"},
      {&su, "Style\tSimple", 1, "Reverse", 8, "sure", "sure-wiki", "Mistral-7B-Instruct-v0.3",
       "Reverse", "Known-Noise RR"},
      {&su, "Style\tSimple", 1, "Datasource (twitter)", 17, "sure", "sure-wiki",
       "Mistral-7B-Instruct-v0.3", "Datasource (twitter)", "Unknown-Noise RR"},
      {&su, "Style\tSimple", 1, "Timestamp (post)", 15, "sure", "sure-wiki",
       "Mistral-7B-Instruct-v0.3", "Metadata (category)", "Unknown-Golden Org"},
      {&su, "\tK-G\tK-N", 0, "Format", 2, "sure", "sure-wiki-counts", "Mistral-7B-Instruct-v0.3",
       "Format", "K-N pairs"},
      {&su, "\tStyle\tSource\tLogic", 0, "Llama-3.1-8B-Inst.", 4, "sure", "sig-trivial",
       "Llama-3.1-8B-Instruct", "string match", "RR Format"},
      // SpotlightRAG Tables 1-3.
      {&sp, "Method\tSource\tPopQA", 0, "Ours", 3, "spotlight", "popqa", "generator (not named)",
       "SpotlightRAG", "EM (w/o training)"},
      {&sp, "Method\tSource\tNaturalQuestions", 0, "RankRAG", 4, "spotlight", "multihopqa",
       "generator (not named)", "RankRAG", "EM (w/ training)"},
      {&sp, "Model Variant\tPopQA", 0, "w/o Special Tokens", 4, "spotlight", "multihopqa",
       "generator (not named)", "w/o Special Tokens", "EM (w/ training)"},
  };
  for (const auto& c : cases) {
    double want = cell(*c.lines, c.header, c.row_col, c.row, c.col);
    const PaperNumber* e = find(c.paper, c.exp, c.model, c.method, c.metric);
    ASSERT_NE(e, nullptr) << c.exp << " " << c.method << " " << c.metric;
    EXPECT_DOUBLE_EQ(e->value, want) << c.exp << " " << c.method << " " << c.metric;
  }
  // Numbers stated in the text.
  EXPECT_DOUBLE_EQ(find("cnorm", "kv-retrieval", "LLaMA-2-7B-Chat", "UUID (-)", "OAA")->value,
                   0.810);
  EXPECT_DOUBLE_EQ(
      find("cnorm", "kv-retrieval", "LLaMA-2-7B-Chat", "Modified UUID (&)", "OAA")->value, 0.102);
  EXPECT_DOUBLE_EQ(find("cnorm", "kv-retrieval", "Qwen2.5-1.5B", "delimiters",
                        "Pearson r (prompt tokens vs OAA)")
                       ->value,
                   -0.82);
  bool said = false;
  for (const auto& l : cn)
    if (l.find("OAA plummets from 0.810 to 0.102") != std::string::npos &&
        l.find("LLaMA-2-7B-Chat") != std::string::npos)
      said = true;
  EXPECT_TRUE(said);
}

}  // namespace

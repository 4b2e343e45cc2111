// The papers' numbers (report/paper_numbers.h) against the paper texts in ../shared/papers/:
//   - every entry's value (with its significance stars) or text is printed near its source: in
//     the tab-separated block of its table, or in the section its source names;
//   - every cell of every table is an entry of that table (numbers with the stars printed beside
//     them, text cells as text entries), so a table is transcribed whole;
//   - a sample of table cells, read here from the paper's tab-separated table by header and row
//     (a second, independent reading), equals the entry of the same cell.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "report/paper_numbers.h"
#include "support/test_support.h"

namespace {

using ragform::report::has_value;
using ragform::report::paper_numbers;
using ragform::report::PaperNumber;
using ragform::report::printed_value;

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

const std::vector<std::string>& paper_lines(const std::string& paper) {
  static std::map<std::string, std::vector<std::string>> cache;
  auto it = cache.find(paper);
  if (it == cache.end()) {
    auto path = ragform::testing::shared_path(paper_file(paper));
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
    it = cache.emplace(paper, lines_of(ragform::testing::read_file(path))).first;
  }
  return it->second;
}

bool same(double a, double b) { return a == b || std::fabs(a - b) <= 1e-9 * std::fabs(b); }

// A number as the papers print it, with the significance stars that follow it.
struct Printed {
  double value;
  std::string stars;
};

// "1.01 \times 10^{-5***}" (SURE Tables 7-8, stars inside the exponent), "1×10^{-5}" (Table 11),
// "4.03e-4" (Table 4), "2,658" and "0.0051**": the mantissa and exponent are joined as text so
// that the value parses exactly as the same literal does in paper_numbers.cpp.
const char* const kNumber = R"((\d+(?:\.\d+)?)\s*(?:\\times|×)\s*10\^\{(-?\d+)(\**)\})"
                            R"(|(\d+(?:\.\d+)?e-?\d+)(\**))"
                            R"(|(-?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(\**))";

Printed printed_of(const std::smatch& m) {
  if (m[1].matched) return {std::stod(m[1].str() + "e" + m[2].str()), m[3]};
  if (m[4].matched) return {std::stod(m[4]), m[5]};
  std::string digits = m[7];
  digits.erase(std::remove(digits.begin(), digits.end(), ','), digits.end());
  return {std::stod(m[6].str() + digits + m[8].str()), m[9]};
}

// Every number printed on a line, in order (parts of words such as "Qwen2.5" included: they only
// add candidates).
std::vector<Printed> printed_numbers(const std::string& line) {
  static const std::regex re(kNumber);
  std::vector<Printed> out;
  for (std::sregex_iterator it(line.begin(), line.end(), re), end; it != end; ++it)
    out.push_back(printed_of(*it));
  return out;
}

// A table cell that is one number (its `$...$` math markers dropped), or nothing for a text cell.
std::optional<Printed> number_cell(std::string c) {
  while (!c.empty() && (c.back() == ' ' || c.back() == '$')) c.pop_back();
  while (!c.empty() && (c.front() == ' ' || c.front() == '$')) c.erase(0, 1);
  static const std::regex re(std::string("^(?:") + kNumber + ")$");
  std::smatch m;
  if (!std::regex_match(c, m, re)) return std::nullopt;
  return printed_of(m);
}

// Lines [begin, end) of a paper.
struct Region {
  size_t begin = 0, end = 0;
};

// A heading's label: "2" for "2 The Hidden Brittleness ...", "4.3", "A.3", "D"; "" for a line
// that is no heading (prose lines are long; table rows hold tabs).
std::string heading_label(const std::string& l) {
  static const std::regex re(R"(^(\d+(?:\.\d+)*|[A-H](?:\.\d+)*) [A-Z].*)");
  std::smatch m;
  if (l.size() >= 100 || l.find('\t') != std::string::npos || !std::regex_match(l, m, re))
    return "";
  return m[1];
}

// Section or appendix `label` with its subsections: from its heading to the next heading that is
// not one of its subsections.
std::optional<Region> section_region(const std::vector<std::string>& lines,
                                     const std::string& label) {
  size_t i = 0;
  while (i < lines.size() && heading_label(lines[i]) != label) ++i;
  if (i == lines.size()) return std::nullopt;
  size_t j = i + 1;
  for (; j < lines.size(); ++j) {
    std::string h = heading_label(lines[j]);
    if (!h.empty() && h.rfind(label + ".", 0) != 0) break;
  }
  return Region{i, j};
}

// The tab-separated block that starts or ends next to line `from`, blank lines between skipped.
Region block_from(const std::vector<std::string>& lines, size_t from, bool upwards) {
  auto has_tab = [&](size_t k) { return lines[k].find('\t') != std::string::npos; };
  if (upwards) {
    size_t k = from;
    while (k > 0 && lines[k - 1].empty()) --k;
    size_t end = k;
    while (k > 0 && has_tab(k - 1)) --k;
    return {k, end};
  }
  size_t k = from + 1;
  while (k < lines.size() && lines[k].empty()) ++k;
  size_t begin = k;
  while (k < lines.size() && has_tab(k)) ++k;
  return {begin, k};
}

// Table n's rows. SURE prints its captions below the tables, C-NORM and SpotlightRAG above them;
// SpotlightRAG's Table 1 lost its caption in the text and is found by its header row.
std::optional<Region> table_region(const std::vector<std::string>& lines, const std::string& paper,
                                   int n) {
  if (paper == "spotlight" && n == 1) {
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].rfind("Method\tSource\tPopQA", 0) == 0) return block_from(lines, i - 1, false);
    return std::nullopt;
  }
  const std::string caption = "Table " + std::to_string(n) + ":";
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(caption, 0) == 0) {
      Region r = block_from(lines, i, paper == "sure");
      if (r.begin < r.end) return r;
    }
  return std::nullopt;
}

// The lines a source points at: "Table 4" -> the table's rows; "Section 4.3, text",
// "Appendix A.3, text", "Section 4.3, footnote 5" -> that section.
std::optional<Region> source_region(const std::string& paper, const std::string& source) {
  const auto& lines = paper_lines(paper);
  static const std::regex table(R"(^Table (\d+)$)");
  static const std::regex section(R"(^(?:Section|Appendix) ([0-9A-H](?:\.\d+)*), .*)");
  std::smatch m;
  if (std::regex_match(source, m, table)) return table_region(lines, paper, std::stoi(m[1]));
  if (std::regex_match(source, m, section)) return section_region(lines, m[1]);
  return std::nullopt;
}

std::string describe(const PaperNumber& e) {
  return std::string(e.paper) + " " + e.experiment + " " + e.model + " " + e.method + " " +
         e.metric + " = " + printed_value(e) + " (" + e.source + ")";
}

TEST(PaperNumbers, EveryValueIsPrintedNearItsSource) {
  ASSERT_GT(paper_numbers().size(), 750u);
  for (const auto& e : paper_numbers()) {
    auto r = source_region(e.paper, e.source);
    ASSERT_TRUE(r && r->begin < r->end) << describe(e) << ": the source is not in the paper";
    const auto& lines = paper_lines(e.paper);
    bool found = false;
    for (size_t i = r->begin; i < r->end && !found; ++i) {
      if (!has_value(e)) {
        for (const auto& c : cells(lines[i]))
          if (c == e.text) found = true;
        continue;
      }
      for (const auto& p : printed_numbers(lines[i]))
        if (same(p.value, e.value) && p.stars == e.stars) found = true;
    }
    EXPECT_TRUE(found) << describe(e) << " is not printed (with these stars) in its source";
  }
}

// The stars field against the paper where it prints stars, both ways: each starred p-value of
// Tables 7-8 keeps its stars, and the entries with stars are exactly those.
TEST(PaperNumbers, StarsAreThoseThePaperPrints) {
  size_t starred_cells = 0;
  for (int n : {7, 8}) {
    auto r = table_region(paper_lines("sure"), "sure", n);
    ASSERT_TRUE(r);
    for (size_t i = r->begin; i < r->end; ++i)
      for (const auto& c : cells(paper_lines("sure")[i])) {
        auto p = number_cell(c);
        if (!p || p->stars.empty()) continue;
        ++starred_cells;
        bool kept = false;
        for (const auto& e : paper_numbers())
          if (e.source == "Table " + std::to_string(n) && same(e.value, p->value))
            kept = e.stars == p->stars;
        EXPECT_TRUE(kept) << "Table " << n << ": " << c;
      }
  }
  EXPECT_EQ(starred_cells, 9u);
  size_t with_stars = 0;
  for (const auto& e : paper_numbers())
    if (*e.stars) ++with_stars;
  EXPECT_EQ(with_stars, starred_cells);
  const PaperNumber* dtd = nullptr;
  for (const auto& e : paper_numbers())
    if (std::string(e.source) == "Table 8" && std::string(e.method) == "DTD" &&
        std::string(e.metric) == "experimental p-value")
      dtd = &e;
  ASSERT_NE(dtd, nullptr);
  EXPECT_STREQ(dtd->stars, "**");
  EXPECT_EQ(printed_value(*dtd), "0.0051**");
}

// Each table of the three papers and how many of its leading columns are row labels.
struct Table {
  const char* paper;
  int n;
  size_t label_columns;
};
const Table kTables[] = {
    {"cnorm", 1, 2},     {"cnorm", 2, 1},     {"sure", 1, 2},      {"sure", 2, 1},
    {"sure", 3, 1},      {"sure", 4, 1},      {"sure", 5, 1},      {"sure", 6, 1},
    {"sure", 7, 1},      {"sure", 8, 1},      {"sure", 9, 1},      {"sure", 10, 2},
    {"sure", 11, 1},     {"spotlight", 1, 2}, {"spotlight", 2, 2}, {"spotlight", 3, 1},
    {"spotlight", 4, 1},
};

TEST(PaperNumbers, EveryTableCellIsTranscribed) {
  for (const auto& t : kTables) {
    const std::string source = "Table " + std::to_string(t.n);
    const auto& lines = paper_lines(t.paper);
    auto r = table_region(lines, t.paper, t.n);
    ASSERT_TRUE(r && r->begin < r->end) << t.paper << " " << source;
    size_t data_cells = 0, entries = 0;
    for (const auto& e : paper_numbers())
      if (e.paper == std::string(t.paper) && e.source == source) ++entries;
    bool header = true;  // the rows before the first one holding a number are headers
    for (size_t i = r->begin; i < r->end; ++i) {
      auto c = cells(lines[i]);
      if (header) {
        for (size_t k = t.label_columns; k < c.size(); ++k)
          if (number_cell(c[k])) header = false;
        if (header) continue;
      }
      for (size_t k = t.label_columns; k < c.size(); ++k) {
        if (c[k].empty()) continue;  // a merged cell (SURE's Org) is printed on one row only
        ++data_cells;
        auto p = number_cell(c[k]);
        bool found = false;
        for (const auto& e : paper_numbers()) {
          if (e.paper != std::string(t.paper) || e.source != source) continue;
          if (p ? has_value(e) && same(e.value, p->value) && e.stars == p->stars
                : !has_value(e) && c[k] == e.text)
            found = true;
        }
        EXPECT_TRUE(found) << t.paper << " " << source << " line " << i + 1 << " cell " << k << " '"
                           << c[k] << "' has no entry";
      }
    }
    // No entry beyond the cells: one entry per cell.
    EXPECT_EQ(entries, data_cells) << t.paper << " " << source;
  }
}

TEST(PaperNumbers, TextEntriesHaveNoValue) {
  size_t text_entries = 0;
  for (const auto& e : paper_numbers()) {
    EXPECT_EQ(has_value(e), std::string(e.text).empty()) << describe(e);
    if (has_value(e)) continue;
    ++text_entries;
    EXPECT_EQ(printed_value(e), e.text);
    EXPECT_STREQ(e.stars, "");
  }
  EXPECT_EQ(text_entries, 2u);  // Table 11's learning rate scheduler, SFT and DPO
  auto models = ragform::report::paper_models();
  EXPECT_EQ(std::count(models.begin(), models.end(), "-"), 0);
  EXPECT_EQ(models.front(), "LLaMA-2-7B-Chat");
}

const PaperNumber* find(const std::string& paper, const std::string& exp, const std::string& model,
                        const std::string& method, const std::string& metric) {
  for (const auto& e : paper_numbers())
    if (paper == e.paper && exp == e.experiment && model == e.model && method == e.method &&
        metric == e.metric)
      return &e;
  return nullptr;
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
  const auto& cn = paper_lines("cnorm");
  const auto& su = paper_lines("sure");
  const auto& sp = paper_lines("spotlight");
  struct Case {
    const std::vector<std::string>* lines;
    std::string header;
    size_t row_col;
    std::string row;
    size_t col;
    std::string paper, exp, model, method, metric;
  };
  const std::string mistral = "Mistral-7B-Instruct-v0.3", llama = "Llama-3.1-8B-Instruct";
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
      {&su, "Style\tSimple", 1, "HTML", 2, "sure", "sure-wiki", mistral, "HTML", "Known-Golden LR"},
      {&su, "Style\tSimple", 1, "Reverse", 8, "sure", "sure-wiki", mistral, "Reverse",
       "Known-Noise RR"},
      {&su, "Style\tSimple", 1, "Datasource (twitter)", 17, "sure", "sure-wiki", mistral,
       "Datasource (twitter)", "Unknown-Noise RR"},
      {&su, "Style\tSimple", 1, "Timestamp (post)", 15, "sure", "sure-wiki", mistral,
       "Metadata (category)", "Unknown-Golden Org"},
      {&su, "\tK-G\tK-N", 0, "Format", 2, "sure", "sure-wiki-counts", mistral, "Format",
       "K-N pairs"},
      {&su, "\tStyle\tSource\tLogic", 0, "Llama-3.1-8B-Inst.", 4, "sure", "sig-trivial", llama,
       "string match", "RR Format"},
      // SURE Tables 4-11.
      {&su, "Group\tA_{org}", 0, "Win", 3, "sure", "sig-attention", "model (not named)", "Win",
       "delta A"},
      {&su, "Qwen2.5-72B\t78.5", 0, "+ Chain-of-Note", 3, "sure", "sig-prompting",
       "Qwen2.5-72B-Instruct", "+ Chain-of-Note", "RR Logic"},
      {&su, "Llama3.1-8B (Trivial)", 0, "+ DPO", 4, "sure", "sig-trivial-training", llama, "+ DPO",
       "RR Format"},
      {&su, "Llama3.1-8B (Wiki)", 0, "+ SFT", 5, "sure", "sig-wiki-training", llama, "+ SFT",
       "RR Meta"},
      {&su, "Flesch score\t0.0677", 0, "PPL", 4, "sure", "ks-test", mistral, "PPL",
       "control p-value"},
      {&su, "Flesch score\t0.0305", 0, "PPL", 1, "sure", "ks-test", llama, "PPL",
       "experimental K-S statistic"},
      {&su, "Style\t7321", 0, "Meta", 3, "sure", "sure-wiki-counts", llama, "Meta", "U-G pairs"},
      {&su, "Style\tSimple\t7.79", 1, "Datasource (wiki)", 13, "sure", "sure-wiki", llama,
       "Datasource (wiki)", "Unknown-Golden RR"},
      {&su, "Style\tSimple\t7.79", 1, "Timestamp (post)", 15, "sure", "sure-wiki", llama,
       "Metadata (category)", "Unknown-Golden Org"},
      {&su, "Style\tSimple\t7.79", 1, "HTML", 9, "sure", "sure-wiki", llama, "HTML",
       "Known-Noise WR"},
      {&su, "Hyper-parameter\tSFT", 0, "Effective Batch Size", 2, "sure", "training-setup", llama,
       "DPO", "Effective Batch Size"},
      // SpotlightRAG Tables 1-4.
      {&sp, "Method\tSource\tPopQA", 0, "Ours", 3, "spotlight", "popqa", "generator (not named)",
       "SpotlightRAG", "EM (w/o training)"},
      {&sp, "Method\tSource\tNaturalQuestions", 0, "RankRAG", 4, "spotlight", "multihopqa",
       "generator (not named)", "RankRAG", "EM (w/ training)"},
      {&sp, "Model Variant\tPopQA", 0, "w/o Special Tokens", 4, "spotlight", "multihopqa",
       "generator (not named)", "w/o Special Tokens", "EM (w/ training)"},
      {&sp, "Hyper-parameter Setting", 0, "Context Length = 512 tokens", 1, "spotlight",
       "sensitivity", "generator (not named)", "Context Length = 512 tokens", "Accuracy (%)"},
      {&sp, "Hyper-parameter Setting", 0, "Positional Prior Weight = 0.0 (No bias)", 1, "spotlight",
       "sensitivity", "generator (not named)", "Positional Prior Weight = 0.0 (No bias)",
       "Accuracy (%)"},
  };
  for (const auto& c : cases) {
    double want = cell(*c.lines, c.header, c.row_col, c.row, c.col);
    const PaperNumber* e = find(c.paper, c.exp, c.model, c.method, c.metric);
    ASSERT_NE(e, nullptr) << c.exp << " " << c.method << " " << c.metric;
    EXPECT_DOUBLE_EQ(e->value, want) << c.exp << " " << c.method << " " << c.metric;
  }
  // SpotlightRAG's Table 4 rows as the brief of its text gives them (K = 2, top-k = 5, prior 0.0,
  // context 512), and SURE's Table 11 text cell and scientific cells.
  EXPECT_DOUBLE_EQ(find("spotlight", "sensitivity", "generator (not named)",
                        "Sentence Selection K = 2", "Accuracy (%)")
                       ->value,
                   66.9);
  EXPECT_DOUBLE_EQ(find("spotlight", "sensitivity", "generator (not named)",
                        "Token-level Top-k = 5", "Accuracy (%)")
                       ->value,
                   68.3);
  const PaperNumber* sched =
      find("sure", "training-setup", llama, "SFT", "Learning Rate Scheduler");
  ASSERT_NE(sched, nullptr);
  EXPECT_FALSE(has_value(*sched));
  EXPECT_EQ(printed_value(*sched), "cosine");
  EXPECT_DOUBLE_EQ(find("sure", "training-setup", llama, "DPO", "Learning Rate")->value, 5e-6);
  const PaperNumber* tok = find("sure", "ks-test", mistral, "Token Length", "experimental p-value");
  ASSERT_NE(tok, nullptr);
  EXPECT_DOUBLE_EQ(tok->value, 2.91e-34);
  EXPECT_STREQ(tok->stars, "***");
}

TEST(PaperNumbers, NumbersStatedInTheText) {
  EXPECT_DOUBLE_EQ(find("cnorm", "kv-retrieval", "LLaMA-2-7B-Chat", "UUID (-)", "OAA")->value,
                   0.810);
  EXPECT_DOUBLE_EQ(
      find("cnorm", "kv-retrieval", "LLaMA-2-7B-Chat", "Modified UUID (&)", "OAA")->value, 0.102);
  EXPECT_DOUBLE_EQ(find("cnorm", "kv-retrieval", "Qwen2.5-1.5B", "delimiters",
                        "Pearson r (prompt tokens vs OAA)")
                       ->value,
                   -0.82);
  // The 0.810 -> 0.102 sentence is in Section 2 (the key-value experiment around Figure 2), the
  // section the two entries cite.
  const auto& cn = paper_lines("cnorm");
  auto s2 = section_region(cn, "2");
  ASSERT_TRUE(s2);
  bool said = false;
  for (size_t i = s2->begin; i < s2->end; ++i)
    if (cn[i].find("OAA plummets from 0.810 to 0.102") != std::string::npos &&
        cn[i].find("LLaMA-2-7B-Chat") != std::string::npos)
      said = true;
  EXPECT_TRUE(said);
  EXPECT_EQ(
      std::string(find("cnorm", "kv-retrieval", "LLaMA-2-7B-Chat", "UUID (-)", "OAA")->source),
      "Section 2, text (Figure 2)");
  // SURE: the Welch test's p and GPT-4o's robustness on datasource (twitter), Section 4.3.
  const PaperNumber* welch = find("sure", "sig-attention", "model (not named)",
                                  "Robust vs Change (Win+Lose)", "Welch t-test p (delta A)");
  ASSERT_NE(welch, nullptr);
  EXPECT_DOUBLE_EQ(welch->value, 0.046);
  const PaperNumber* gpt = find("sure", "sig-wiki-models", "GPT-4o", "Datasource (twitter)", "RR");
  ASSERT_NE(gpt, nullptr);
  EXPECT_DOUBLE_EQ(gpt->value, 89);
}

}  // namespace

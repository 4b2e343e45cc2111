// LongBench-v2-style multiple choice for C-NORM (cnorm-surface-formatting.txt section 5.2,
// Table 1; prompt of Appendix D): one long context per question, four choices, the answer read
// from "The correct answer is (X)". The context is formatted as one document with the variant's
// format (format.h: a fraction p of its sentences get the delimiter); question and choices are
// kept as written. The prompt is Appendix D's: "Please read the following text and answer the
// question below.\n\n<text>\n$DOC$\n</text>\n\nQuestion: $Q$\n\nChoices:\n(A) $C_A$\n(B) ...
// \n(D) $C_D$\n\nFormat your response as follows: \"The correct answer is (insert answer
// here)\"." (one line per choice, as LongBench-v2's template; the paper's layout of blank lines
// is not recoverable from its PDF text).
//
// Answer extraction (extract_choice), first rule that matches wins:
//  1. "The correct answer is (X)" (LongBench-v2's own pattern; case-insensitive, X in A-D);
//  2. "The correct answer is X" without parentheses, optionally followed by ')' '.' or ':';
//  3. the first "(X)" anywhere in the output;
//  4. an output that starts with "X" followed by nothing, ')', '.', ':' or whitespace.
// Otherwise no answer (graded wrong, as LongBench-v2 grades unparsed outputs).
#pragma once
#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval/qa_record.h"
#include "pipelines/cnorm/sweep.h"
#include "pipelines/cnorm/tasks.h"
#include "reader/reader.h"

namespace ragform::cnorm {

struct McItem {
  std::string id;
  std::string question;
  std::array<std::string, 4> choices;
  char answer = 'A';
  std::string difficulty, length;  // "easy"/"hard", "short"/"medium"/"long"
  std::string context;
};

// Items from LongBench-v2 records (eval loader "longbench-v2"); Error naming a record without
// choices or context.
std::vector<McItem> build_mc_items(const std::vector<eval::QaRecord>& records);

// The Appendix D prompt ($DOC$, $Q$, $C_A$..$C_D$ filled) with the context formatted by f:
// render(Task::Longbench, ...) of mc_to_item(item).
std::string longbench_prompt(const McItem& item, const Format& f);
// The task item of a question (gold.text = context, choices, answers = {letter}), for
// calibration (Task::Longbench).
Item mc_to_item(const McItem& item);

// The rules above; 'A'..'D' or nullopt.
std::optional<char> extract_choice(const std::string& output);

// The questions whose prompt has at most `budget` tokens under every format (a count_tokens
// that throws Error counts as not fitting), and per format the summed tokens of those prompts.
struct McFit {
  std::vector<McItem> items;
  size_t left_out = 0;
  std::vector<double> tokens;  // per format, over `items`
};
McFit fit_mc_items(reader::Reader& r, const std::vector<McItem>& items,
                   const std::vector<Format>& formats, size_t budget);

struct McAnswer {
  size_t variant = 0;
  std::string prompt;
  int prompt_tokens = 0;
  std::string output;
  std::optional<char> extracted;
  bool correct = false;
  double ms = 0;  // the question's batch time divided by its prompts
};
// Answers every (question, variant) for which skip(id, variant name) is false, one batch per
// question, greedy as `gen` says; on_answer sees each graded answer with its question.
void run_mc(reader::Reader& r, const std::vector<McItem>& items,
            const std::vector<Variant>& variants, const reader::GenerateParams& gen,
            const std::function<bool(const std::string&, const std::string&)>& skip,
            const std::function<void(const McAnswer&, const McItem&)>& on_answer);

struct McGraded {
  std::string variant;
  std::string difficulty, length;
  bool correct = false;
};

struct McSummary {
  std::string variant;
  double accuracy = 0;
  size_t n = 0;
  std::map<std::string, std::pair<double, size_t>> by_difficulty, by_length;  // accuracy, n
};
std::vector<McSummary> summarize_mc(const std::vector<McGraded>& rows,
                                    const std::vector<std::string>& variants);

}  // namespace ragform::cnorm

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
// Answer extraction (extract_choice), two modes (`cnorm eval --extract`, Extract):
//  strict   LongBench-v2's own (pred.py extract_answer): every '*' deleted, then the first match
//           of the case-sensitive "The correct answer is (X)" anywhere in the output, else the
//           first match of "The correct answer is X" (X in A-D; nothing required after X, so
//           "The correct answer is Definitely" reads D, as pred.py's regex does); otherwise no
//           answer. What `ragform reproduce` uses.
//  lenient  ragform's (the CLI default, and every run made before the option), first rule that
//           matches wins:
//    1. "The correct answer is (X)" (case-insensitive, X in A-D);
//    2. "The correct answer is X" without parentheses, optionally followed by ')' '.' or ':';
//    3. the first "(X)" anywhere in the output;
//    4. an output that starts with "X" followed by nothing, ')', '.', ':' or whitespace.
// No answer is graded wrong, as LongBench-v2 grades unparsed outputs.
//
// Contexts longer than the model's window (Overflow): LongBench-v2's own evaluation tokenizes the
// prompt and, when it has more than max_len tokens, keeps tokens[:max_len // 2] and
// tokens[-(max_len - max_len // 2):] (the middle goes). TruncateMiddle (the default) does the same
// to the *context* only, so the instruction, question and choices are never cut: with B the
// budget (the reader's context minus the answer tokens), e the tokens of an empty prompt (BOS, a
// chat template), P and S the tokens of the text before and after the context, the context keeps
// A = B - e - P - S tokens: its first H = clamp(B / 2 - e - P, 0, A) and its last A - H. That is
// LongBench's cut point whenever LongBench's cut falls inside the context. Each variant's prompt
// is cut after formatting (as LongBench would cut the formatted prompt), so every variant fills
// the window. The reader only counts tokens (Reader::count_tokens), so a cut is the longest
// prefix (suffix) of whole UTF-8 characters with at most H (A - H) tokens; the assembled prompt
// is counted again and the cut shrunk until it fits. Drop leaves such a question out.
#pragma once
#include <array>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

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

// How the answer letter is read from an output (above).
enum class Extract { Lenient, Strict };
// "lenient" or "strict"; UsageError (--extract) otherwise.
Extract parse_extract(std::string_view name);
const char* extract_name(Extract e);

// The rules above; 'A'..'D' or nullopt.
std::optional<char> extract_choice(const std::string& output, Extract mode = Extract::Lenient);

// What happens to a question whose prompt does not fit (above).
enum class Overflow { TruncateMiddle, Drop };
// "truncate-middle" or "drop"; UsageError (--overflow) otherwise.
Overflow parse_overflow(std::string_view name);
const char* overflow_name(Overflow o);

// `text` without its middle: the longest prefix with at most `head` tokens followed by the
// longest suffix with at most `tail` tokens (whole UTF-8 characters; they never overlap).
// `tokens` counts the tokens of a piece of text.
std::string cut_middle(const std::string& text, size_t head, size_t tail,
                       const std::function<size_t(std::string_view)>& tokens);

struct FittedPrompt {
  Prompt prompt;
  size_t tokens = 0;          // count_tokens(prompt.text)
  size_t tokens_removed = 0;  // the full prompt's tokens minus `tokens` (0: not cut)
};
// Appendix D's prompt of `item` (a Task::Longbench item: gold.text is the context) under f, in at
// most `budget` tokens: as written when it fits, else (TruncateMiddle) with the middle of its
// formatted context cut as above. nullopt when it does not fit: Drop, or not even one context
// token fits next to the instruction, question and choices. A count_tokens that throws Error
// counts as not fitting, except a server outage (reader::is_outage), which propagates.
std::optional<FittedPrompt> fit_longbench_prompt(reader::Reader& r, const Item& item,
                                                 const Format& f, size_t budget, Overflow o);

// Whether `item`'s prompt can be made to fit `budget` tokens by cutting its context: at least one
// context token fits beside the instruction, question and choices (the format changes only the
// context). Counting errors as for fit_longbench_prompt.
bool longbench_fits_cut(reader::Reader& r, const Item& item, size_t budget);

// Prompts cut to fit, for notes, summaries and run metadata: how many prompts and questions, and
// the tokens removed (over the cut prompts).
struct TruncationStats {
  size_t prompts = 0;
  std::set<std::string> questions;
  size_t total = 0, max = 0;
  void add(const std::string& id, size_t removed);  // removed = 0 is not a cut
  double mean() const { return prompts ? double(total) / double(prompts) : 0.0; }
  // {"questions", "prompts", "tokens_removed": {"total", "mean", "max"}}
  nlohmann::json to_json() const;
  // "<what>: N prompts of M questions cut in the middle of their context to fit --ctx C tokens
  // (tokens removed: mean X, max Y)"; "" when nothing was cut.
  std::string note(const std::string& what, size_t ctx) const;
};

// The questions that can be evaluated at `budget` tokens under every format: Drop keeps those
// whose prompt fits as written, TruncateMiddle those that fit once cut (fit_longbench_prompt);
// a count_tokens that throws Error counts as not fitting (a server outage propagates). Per format
// the summed tokens of the kept questions' prompts as written (Min-Token's measure, uncut).
struct McFit {
  std::vector<McItem> items;
  size_t left_out = 0;
  std::vector<double> tokens;  // per format, over `items`
};
McFit fit_mc_items(reader::Reader& r, const std::vector<McItem>& items,
                   const std::vector<Format>& formats, size_t budget,
                   Overflow overflow = Overflow::Drop);

struct McAnswer {
  size_t variant = 0;
  std::string prompt;
  int prompt_tokens = 0;
  size_t tokens_removed = 0;  // the prompt was cut to fit (fit_longbench_prompt)
  std::string output;
  std::optional<char> extracted;
  bool correct = false;
  double ms = 0;  // the question's batch time divided by its prompts
};
// Answers every (question, variant) for which skip(id, variant name) is false, one batch per
// question, greedy as `gen` says, each prompt fitted into `budget` tokens as `overflow` says
// (a prompt that cannot fit is an Error: fit_mc_items leaves such questions out), the letter read
// as `extract` says; on_answer sees each graded answer with its question.
void run_mc(reader::Reader& r, const std::vector<McItem>& items,
            const std::vector<Variant>& variants, const reader::GenerateParams& gen, size_t budget,
            Overflow overflow, Extract extract,
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

// C-NORM tasks: the prompts that calibration (section 4.2) scores and evaluation (section 5.1)
// answers. An Item is one question with its gold document and an ordered list of distractors;
// arrange() puts the gold at a chosen position among k documents, render() formats every
// document with a candidate format (format.h) and fills the task's prompt template.
//
// Tasks and templates:
//   qa      Appendix D's controlled-setting prompt ({search_results}, {question};
//           appendix_d_qa_template()); search results are "Document [i](Title: <title>)
//           <formatted text>" joined by "\n" (lost-in-the-middle's get_qa_prompt). Only passage
//           text is formatted; titles are kept.
//   kv      Appendix B's prompt ({formatted_kv_records}, {key}; appendix_b_kv_template()); the
//           records are written as lost-in-the-middle's code does:
//           `{"k1": "v1",\n "k2": "v2",\n ... "kn": "vn"}`. A
//           format with p > 0 replaces every '-' of every key and value, and of the query key, with
//           the delimiter (Appendix B "Modified UUID"; "none" = "Plain Text"); p = 0 is the UUID
//           baseline.
//   needle  the story-needle probe for stories260K (TinyStories vocabulary). Each document is a
//           two-sentence character slot "There was a <animal> named <Name>. <Name> liked to
//           <activity>."; the gold slot's animal appears in no distractor slot and its name in no
//           other slot; the documents are joined by " " and followed by " The <animal>'s name was"
//           (built-in template "{search_results} {question}"); the answer is <Name>.
//   longbench  LongBench-v2 multiple choice (section 5.2; longbench.h): one document, the long
//           context (gold.text), in Appendix D's evaluation prompt with the four choices
//           (Item::choices); calibrated per model-task pair like the others (5.3: "incurred only
//           once per model-task pair"). The template is built in (longbench_template()).
//
// The qa and kv defaults are the paper's prompts, built in. Both start from lost-in-the-middle's
// files (which the paper's tasks come from) and differ from them where the paper's text does:
// Appendix D writes "Search Results: " before the documents (qa_ordered_randomly.prompt has no
// label), Appendix B has no "JSON data:" line before the records (kv_retrieval.prompt has). The
// files themselves are one --template away.
//
// QA items from a file (build_qa_items): the gold is the first ctx with isgold, else the first
// with hasanswer, else ctxs[0]. When a record has at least k ctxs the others (file order) are its
// distractors; otherwise distractors are the gold passages of other records, visited in a seeded
// order (Fisher-Yates as format.h with seed splitmix64(seed ^ fnv1a64(id))), skipping passages
// that contain one of this question's answers (text::substring_match; answers that normalise to
// the empty string, such as "*", are not checked since they match everything) or equal the gold.
// The distractor order is fixed per item, so the gold-position sweep moves only the gold.
// Building that order for every record was quadratic in the file's records (issue 40: 200,000
// records were 4 x 10^10 steps): a file of at most kExactDrawRecords records draws as it always
// did (seeded_permutation: the same bytes, NQ-Open's oracle file has 2,655); a larger one draws
// from a LazyPermutation (lazy_permutation.h) of the same seed, one passage at a time, and a record
// looks at most at kMaxDrawnPassages of them (an answer in nearly every passage, as NQ's "S", is
// then skipped as having too few distractors instead of reading the whole file).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "eval/qa_record.h"
#include "pipelines/cnorm/format.h"

namespace ragform::cnorm {

enum class Task { Qa, Kv, Needle, Longbench };
// "qa", "kv", "needle", "longbench"; otherwise an OptionError naming `key` (the option's key: a
// front end spells it, the CLI as --task)
Task parse_task(std::string_view name, const std::string& key = "task");
const char* task_name(Task t);

struct Document {
  std::string title;
  std::string text;
};

struct Item {
  std::string id;
  std::string question;  // kv: the query key
  std::vector<std::string> answers;
  Document gold;
  std::vector<Document> distractors;  // fixed order
  size_t natural_position = 0;        // the gold's position in the source (kv: gold_index)
  std::vector<std::string> choices;   // longbench: (A)..(D)
};

// A candidate format: delimiter and ratio (p = 0 is the unformatted baseline), and optionally a
// SURE document wrapper (beyond the paper; pipelines/sure/formats.h): "json", "markdown" or
// "yaml" serialise each (title, formatted text) document; qa writes "Document [i] <wrapped>",
// needle documents (no title) get the title "Document <i>". kv refuses wrappers.
struct Format {
  Delimiter delim;
  double p = 0.0;
  uint64_t seed = 0;
  std::string wrapper = {};  // "" = none
  // The ratio the text is built with: "original" keeps the text as it came whatever p says
  // (format_text), so a summary lists 0 for it, as the profile's candidate row does.
  double deployed_p() const { return delim.original ? 0.0 : p; }
};

// The wrappers --formats accepts, and one of them checked (UsageError otherwise). wrap_document
// also renders "html" (text/doc_formats.h), a document format of `ragform tune`'s space that
// calibration does not offer.
const std::vector<std::string>& wrapper_names();
std::string parse_wrapper(std::string_view name);
// `title` and `text` serialised by the wrapper ("" returns text unchanged).
std::string wrap_document(const std::string& wrapper, const std::string& title,
                          const std::string& text);

struct Prompt {
  std::string text;
  size_t ctx_begin = 0, ctx_end = 0;  // byte span of the documents inside text
};

// The template text for a task: `explicit_path` when given, else the task's built-in template
// (shared_dir is not read: the defaults no longer come from the shared folder). Trailing newlines
// of a file are removed. Throws Error when the file cannot be read or lacks a placeholder;
// UsageError for a --template with longbench (its prompt is fixed).
std::string load_template(Task t, const std::string& explicit_path,
                          const std::string& shared_dir = "");
// Appendix D's controlled-setting prompt: qa_ordered_randomly.prompt's text with the paper's
// "Search Results: " label before {search_results}, on the same line as the paper prints it.
const std::string& appendix_d_qa_template();
// Appendix B's key-value prompt: kv_retrieval.prompt's text without its "JSON data:" line. The
// query key stays quoted and "Corresponding value:" on its own line as in that file: Appendix B's
// box drops the records' JSON quoting and braces as well, so it shows content, not characters.
const std::string& appendix_b_kv_template();
// The built-in needle template.
const std::string& needle_template();
// Appendix D's LongBench-v2 prompt with {search_results}, {question} and {choice_a}..{choice_d}:
// what render() lays out for Task::Longbench (it fills the fields in one pass, so text inside a
// field is never taken for a placeholder).
const std::string& longbench_template();

// Documents of the item with the gold at gold_pos among k (k - 1 distractors, fixed order).
// Throws Error when k = 0, gold_pos >= k or the item has fewer than k - 1 distractors.
std::vector<Document> arrange(const Item& item, size_t k, size_t gold_pos);

// The prompt for `docs` formatted with `f`.
Prompt render(Task t, const std::string& tmpl, const Item& item, const std::vector<Document>& docs,
              const Format& f);
// Appendix D's LongBench-v2 prompt of `item` (question and choices) around `context`, taken as
// already formatted (a context cut to fit, longbench.h fit_longbench_prompt).
Prompt render_longbench_context(const Item& item, const std::string& context);
// The formatted text of one document under `f` for task t.
std::string format_text(Task t, const std::string& text, const Format& f);

// Items from canonical QA records (see above). Records without passages are an Error naming the
// record. A record for which fewer than k - 1 distractors can be found (e.g. NQ's answer "S", a
// substring of nearly every passage) is an Error too, unless `skipped` is given: then it is left
// out and its id appended there.
inline constexpr size_t kExactDrawRecords = 10000;
inline constexpr size_t kMaxDrawnPassages = 4096;
std::vector<Item> build_qa_items(const std::vector<eval::QaRecord>& records, size_t k,
                                 uint64_t seed, std::vector<std::string>* skipped = nullptr);
// Items from lost-in-the-middle KV records (QaRecord::kv); every record is a document.
std::vector<Item> build_kv_items(const std::vector<eval::QaRecord>& records);
// The most story-needle items one call makes: every item is built before the first is measured,
// and `cnorm calibrate -S 1000000000` grew to 2.5 GB before its first answer (issue 40).
inline constexpr size_t kMaxNeedleItems = 1000000;
// n story-needle items with k slots each (k - 1 distractors), deterministic in seed. k <= 12,
// n <= kMaxNeedleItems (else UsageError naming n).
std::vector<Item> make_needle_items(size_t n, size_t k, uint64_t seed);

}  // namespace ragform::cnorm

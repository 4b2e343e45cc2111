// A presentation: how one record's retrieved context is shown to the reader — one value for each
// dimension `ragform tune` searches — and the one renderer behind every front end that applies
// it (`ragform tune` while measuring, `ragform present`, the server's /v1/rag/present and Python's
// ragform.present), so that a tuned profile renders exactly the prompts that were measured.
//
// The renderer composes the pipelines' own renderers and adds no copy of their logic:
//   1. documents   the record's ctxs in file (retrieval) order; kv: the record's key-value pairs
//                  (title = key, text = value), the gold pair at its position in the file; needle
//                  records are canonical QA records too (tune.h needle_records).
//   2. k           the first k documents (0 = all; a k above the count keeps all).
//   3. order       retrieved (as given), reversed, edges (lost-in-the-middle's alternation: the
//                  1st, 3rd, 5th ... most relevant from the front, the 2nd, 4th ... from the back,
//                  so the most relevant sit at both edges and the least in the middle) or score
//                  (ctxs[i].score descending, ties in retrieved order; a record without scores
//                  keeps the retrieved order). Relevance is the retrieved order.
//   4a. spotlight off: every document's text formatted with C-NORM's candidate format (delimiter
//                  and ratio p, cnorm::format_text) and wrapped in the document format (plain,
//                  json, markdown, yaml, html: text/doc_formats.h through cnorm::wrap_document),
//                  laid out in the task's prompt template by cnorm::render (qa: Appendix D,
//                  kv: Appendix B, needle: the story-needle probe).
//   4b. spotlight K: SpotlightRAG's selection (spotlight::score_question with the lexical
//                  identity encoder — exact word overlap, no vectors — and default_score_params,
//                  then select_and_annotate with top_K = K in document order) and its eq. (10)
//                  prompt "Question: ...\nEvidence:\n...\nAnswer:"; with tokens the lines carry
//                  the <RelX.XX> score and the category token, without them the sentences only.
//                  The delimiter and the document format do not apply (a presentation with
//                  spotlight on keeps "original" and "plain"; validate() refuses others), and
//                  the kv task has no sentences to select (refused).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/qa_record.h"

namespace ragform::tune {

// The tasks a presentation renders for; each only picks the prompt template and the grading.
enum class Task { Qa, Kv, Needle };
Task parse_task(std::string_view name);  // "qa" | "kv" | "needle"; UsageError otherwise
const char* task_name(Task t);

enum class Order { Retrieved, Reversed, Edges, Score };
Order parse_order(std::string_view name);  // "retrieved" | "reversed" | "edges" | "score"
const char* order_name(Order o);

// The document formats: "plain" (the task template's own layout) and C-NORM's wrappers.
const std::vector<std::string>& format_names();  // plain, json, markdown, yaml, html

struct Presentation {
  std::string delimiter = "original";  // a C-NORM delimiter name (cnorm::parse_delimiter)
  double p = 0.0;                      // the share of sentences reformatted (ignored by original)
  uint64_t format_seed = 0;            // C-NORM's seed of the sentences chosen
  std::string format = "plain";        // one of format_names()
  Order order = Order::Retrieved;
  size_t k = 0;                   // top-k documents; 0 = all
  int spotlight = 0;              // SpotlightRAG's K sentences; 0 = off
  bool spotlight_tokens = false;  // <Rel> and category tokens on the selected lines
  bool operator==(const Presentation&) const = default;
};

// The presentation as it was given (the identity: nothing is measured).
Presentation original_presentation();

// A short stable name, used as the run store's variant and in every output:
// "delim=<name>,p=<p>,format=<f>,order=<o>,k=<k|all>,spotlight=<off|K|K+tokens>".
std::string label(const Presentation& p);

// {"delimiter", "p", "format_seed", "format", "order", "k", "spotlight", "spotlight_tokens"};
// k 0 and spotlight 0 are written as 0.
nlohmann::ordered_json to_json(const Presentation& p);
// Reads the object to_json writes; a missing key keeps its original_presentation() value. Throws
// Error "<where>: <field>: <why>" for a field of the wrong type or value.
Presentation presentation_from_json(const nlohmann::json& j, const std::string& where);

// UsageError "<where>: <why>" when `p` cannot be rendered for task t (unknown delimiter or format,
// p outside [0, 1], spotlight with a delimiter/format or for kv, a format for kv).
void validate(const Presentation& p, Task t, const std::string& where = "presentation");

struct Rendered {
  std::string prompt;
  size_t documents = 0;    // documents shown (spotlight: the documents selected from)
  int gold_position = -1;  // index of the gold document among them (-1: none or dropped by k)
};

// The prompt of `record` under `p` for task t (the steps above). `tmpl` is the task's template
// (template_for). Throws Error naming the record when it has no documents.
Rendered render(const eval::QaRecord& record, const Presentation& p, Task t,
                const std::string& tmpl);

// The task's built-in template (C-NORM's: Appendix D for qa, Appendix B for kv, the needle probe),
// or the file at `path` when given.
std::string template_for(Task t, const std::string& path = "");

// Index of the record's gold document in its own order: the first ctx with isgold, else the
// first with hasanswer, else 0 (C-NORM's rule); kv: the gold pair's index. -1 without documents.
int gold_index(const eval::QaRecord& record, Task t);

}  // namespace ragform::tune

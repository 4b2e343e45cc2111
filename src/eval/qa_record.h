// The canonical QA record every loader produces and every pipeline consumes. Its
// core is the lost-in-the-middle shape
//   {"id", "question", "answers": [...], "ctxs": [{"id","title","text","hasanswer","isgold"}]}
// and each source format adds what only it has in an optional sub-struct, so a pipeline asks for
// exactly the extra it needs (`if (r.hotpot) ...`) and never sees a half-filled field.
//
// How each source format maps onto it (the loaders in datasets.h):
//   litm-qa      lost-in-the-middle QA (Liu et al. 2023, qa_data/*.jsonl.gz): all core fields as in
//                the file; `ctxs` may be absent (closed-book), `ctxs[i].id`/`score` when present.
//   nq-open      NQ-open (`question`, `answer[]`): answers = answer, no contexts.
//   hotpotqa     HotpotQA distractor, Hugging Face schema: one context per paragraph of
//                `context{title[], sentences[][]}`, text = the sentences concatenated as stored
//                (they carry their own leading spaces), sentences kept; isgold = the paragraph's
//                title is a supporting-fact title; answers = {answer}; HotpotExtra.
//   litm-kv      lost-in-the-middle KV retrieval: question = the query key, answers = {value},
//                no contexts (the records are the context); KvExtra holds the ordered records.
//   poisonedrag  PoisonedRAG (Zou et al. 2024): answers = {"correct answer"}, one context per
//                `adv_texts` entry with adversarial = true, isgold = false; PoisonExtra.
//   flashrag     FlashRAG (`id`, `question`, `golden_answers[]`, optional `metadata`):
//                answers = golden_answers, no contexts.
//   longbench-v2 LongBench-v2: the long `context` is ctxs[0] (title empty); answers = {the answer
//                letter}; ChoiceExtra holds the four choices, answer index, difficulty, length.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ragform::eval {

// One retrieved (or given) passage.
struct Context {
  std::string id;     // from the file when present, else "<record id>/<index>"
  std::string title;  // may be empty
  std::string text;
  // lost-in-the-middle's `hasanswer`: the text contains a gold answer under their normalisation.
  // Unknown (nullopt) for formats that do not state it; compute it with text/ answer matching.
  std::optional<bool> hasanswer;
  bool isgold = false;       // the designated evidence passage (litm-qa isgold, HotpotQA support)
  bool adversarial = false;  // a planted misleading passage (PoisonedRAG adv_texts)
  std::optional<double> score;  // retriever score when the file gives one
  // HotpotQA: the paragraph's sentences exactly as stored (text == their concatenation), so that
  // sentence i spans [sentence_offsets[i], sentence_offsets[i] + sentences[i].size()) of text.
  std::vector<std::string> sentences;
  std::vector<size_t> sentence_offsets;
};

// HotpotQA: a (title, sent_id) supporting fact, resolved against the contexts.
struct SupportingFact {
  std::string title;
  int sent_id = 0;
  // Index into QaRecord::ctxs of the paragraph with this title, or -1 when no paragraph has it;
  // sentence_ok is false when sent_id is outside that paragraph (a known HotpotQA annotation
  // glitch: kept, not an error, so counts stay comparable with the original data).
  int context_index = -1;
  bool sentence_ok = false;
};

struct HotpotExtra {
  std::string type;   // "bridge" | "comparison"
  std::string level;  // "easy" | "medium" | "hard" (empty if absent)
  std::vector<SupportingFact> supporting_facts;
};

// Lost-in-the-middle key-value retrieval: find `value` for `key` among `records`.
struct KvExtra {
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> records;  // in file order
  size_t gold_index = 0;                                     // position of (key, value) in records
};

// PoisonedRAG: the attacker's target answer; the adversarial texts are the contexts.
struct PoisonExtra {
  std::string incorrect_answer;
};

// LongBench-v2 style multiple choice.
struct ChoiceExtra {
  std::array<std::string, 4> choices;  // choice_A .. choice_D
  char answer = 'A';                   // 'A'..'D'
  int answer_index = 0;                // 0..3
  std::string difficulty;              // "easy" | "hard"
  std::string length;                  // "short" | "medium" | "long"
  std::string domain, sub_domain;      // empty when absent
};

struct QaRecord {
  std::string id;  // from the file (`id`, `_id`, or the JSON object key), else "<format>:<line>"
  std::string question;
  std::vector<std::string> answers;  // every accepted gold answer, in file order (may be empty)
  std::vector<Context> ctxs;         // in file order
  std::string source_format;         // format name, e.g. "litm-qa" (see datasets.h)
  size_t source_line = 0;            // 1-based line of the record in its file

  std::optional<HotpotExtra> hotpot;
  std::optional<KvExtra> kv;
  std::optional<PoisonExtra> poison;
  std::optional<ChoiceExtra> choice;
};

}  // namespace ragform::eval

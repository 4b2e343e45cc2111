// Questions in, DPR/FlashRAG/lost-in-the-middle rows out:
//   in:  JSONL with at least "question" (and usually "id", "answers"), or any QA format the
//        dataset loaders read (eval/datasets.h: NQ-open "answer", HotpotQA, FlashRAG
//        "golden_answers", ...);
//   out: {"id", "question", "answers", <other input fields>, "ctxs": [{"id", "title", "text",
//        "score", "rank"}]} — what `cnorm`, `sure` and `spotlight` read as input (format litm-qa).
// Input fields that would make the loaders read the row as another format, or that hold the
// source's own contexts, are not copied (ctxs, context, supporting_facts, golden_answers,
// adv_texts, "incorrect answer", ordered_kv_records, choice_A..D): their answers are in "answers".
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/jsonl.h"
#include "retrieval/retriever.h"

namespace ragform::retrieval {

struct Question {
  std::string id;
  std::string question;
  std::vector<std::string> answers;
  nlohmann::ordered_json extra;  // the other input fields
};

// One input record; throws eval::RowError (missing or non-string "question", ...). A record
// without an id ("id", "_id" or its format's own) is "line:<line>", or `id_if_none` when given.
Question question_from_json(const nlohmann::json& row, size_t line,
                            const std::string& id_if_none = "");
// The same, moving the other fields out of `row` instead of copying them (a server's request,
// whose question objects without an id are q0, q1, ... as its plain strings are).
Question question_from_json(nlohmann::json&& row, size_t line, const std::string& id_if_none = "");

nlohmann::ordered_json retrieval_row(const Question& q, const std::vector<Retrieved>& ctxs);

}  // namespace ragform::retrieval

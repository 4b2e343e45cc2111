// SpotlightRAG selection and annotation (paper sections 3.4-3.5, equations 9-10): the top-K
// sentences by R, each annotated with a score token <RelX.XX> (R min-max normalised over the
// question's sentences, two decimals) and a category token, joined to the question as the
// generator's prompt.
//
// Category tagger (rule based; the first rule that fires wins, words compared case-insensitively):
//   causal      a causal connective: because, due to, caused, causes, causing, result of,
//               resulted, results in, led to, leads to, therefore, thus, hence, consequently,
//               owing to, so that, since (as a conjunction is not told apart: any "since" that is
//               not followed by a year).
//   definition  a copular/definitional pattern: " is a ", " is an ", " is the ", " was a ",
//               " was an ", " was the ", " are a ", " were a ", " refers to ", " known as ",
//               " defined as ", " also called " (Wikipedia lead sentences).
//   temporal    a year 1000-2099 (optionally followed by "s"), a month name (May only when
//               capitalised, as "may" is the modal verb), a weekday, "century", "decade", "BC",
//               "AD", "BCE", "CE".
//   numeric     any other digit, or a number word (hundred, thousand, million, billion, percent).
//   entity      a capitalised word other than the sentence's first word.
//   other       none of the above.
// Category tokens are written `<entity>`, `<temporal>`, ...
//
// Prompt (eq. 10, q ⊕ {s'_t}):
//   Question: <q>\nEvidence:\n<Rel0.82> <entity> <sentence>\n...\nAnswer:
// Order::Document keeps the selected sentences in document order, Order::Score by descending R.
// With special tokens off (Table 3 "w/o special tokens") the lines carry the sentences only.
//
// Emphasis by attention (instead of, or beside, the <Rel> text): each selected sentence's byte
// range in the prompt (Selected::begin/end) is what the reader's attention steering takes, so
// emphasis_steering(selection, A) is `generate --steer rescale:A --steer-spans B:E,...` on the
// prompt: the sentences' attention times A while the answer is generated (steering.h, PASTA's
// form).
#pragma once
#include <string>
#include <vector>
#include "pipelines/spotlight/scoring.h"
#include "pipelines/spotlight/select_options.h"
#include "reader/steering_params.h"

namespace ragform::spotlight {

enum class Order { Document, Score };

// What select_and_annotate takes; a front end's request is select_options.h's SelectOptions
// (select_params below), whose declaration holds the defaults.
struct SelectParams {
  int top_K = int(ScoreOptions{}.K);  // K sentences
  Order order = Order::Document;
  bool special_tokens = PromptOptions{}.special_tokens;
};

// The selection the declared options ask for (checked: check_select_options).
SelectParams select_params(const ScoreOptions& s, const PromptOptions& p);

struct Selected {
  SentenceScore score;
  std::string title, doc_id, text;
  std::string prefix;         // "<Rel0.82>"
  std::string category;       // "entity", "temporal", ...
  size_t begin = 0, end = 0;  // bytes of `text` in the selection's prompt
};

struct Selection {
  std::vector<Selected> selected;  // in prompt order
  std::string prompt;
};

// "entity" | "temporal" | "numeric" | "causal" | "definition" | "other".
std::string categorize(const std::string& sentence);

// "<Rel0.82>": R in [0,1] with two decimals (clamped).
std::string rel_token(double r_norm);

// Indices into scored.sentences of the top-K by R (ties: document order), in that score order.
std::vector<size_t> top_sentences(const ScoredQuestion& scored, int K);

Selection select_and_annotate(const std::string& question, const std::vector<Document>& docs,
                              const ScoredQuestion& scored, const SelectParams& p);

// Attention emphasis of the selected sentences: rescale:factor on their byte ranges in the prompt
// (the default layers and every head); off when factor is 1 or nothing is selected.
reader::SteeringParams emphasis_steering(const Selection& sel, double factor);

// "--steer-spans" text of the selected sentences: "B:E,...".
std::string emphasis_spans_text(const Selection& sel);

// Builds the eq. (10) prompt from annotated lines.
std::string build_prompt(const std::string& question, const std::vector<std::string>& lines);

}  // namespace ragform::spotlight

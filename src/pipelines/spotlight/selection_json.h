// A Spotlight selection as JSON, built in one place for every front end (docs/formats.md
// "Spotlight selection"): `spotlight select --json`, POST /v1/rag/spotlight, Python's
// spotlight_select() and the spotlight rows of a run store. Each field means the same everywhere:
//   title, doc_id     the passage's title and id
//   sent_id           the sentence's index in its passage
//   text              the sentence (trimmed; a store row keeps the passage's bytes, leading
//                     space included, so that its match offsets index into it)
//   R                 the score min-max normalised over the question's sentences, in [0, 1] (the
//                     number of the <RelX.XX> prefix)
//   R_raw             the score of equation (8) before normalisation
//   prefix, category  the score token "<Rel0.82>" and the category ("entity", ...)
//   matches           [{q, c, s}]: each query token's best match in the sentence and its score;
//                     a store row adds begin/end, the bytes of c in text
//   gold              store rows: the sentence is a supporting fact
// An answer is {"id", "selected": [...], "prompt"}; a store row's extra holds "selected" only
// (without doc_id, sent_id and prefix), the row has the question id and the prompt.
#pragma once
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/spotlight/select.h"

namespace ragform::spotlight {

struct SelectionJsonOptions {
  // Scores as "%.9g" prints them (the CLI and the server); false: full precision (Python, store).
  bool round9 = false;
  // A store row's layout when set: the passages the selection was made from and the gold
  // (document, sentence) pairs.
  const std::vector<Document>* docs = nullptr;
  const std::set<std::pair<int, int>>* gold = nullptr;
};

// {"id", "selected", "prompt"} of one question's selection.
nlohmann::ordered_json selection_json(const std::string& id, const Selection& sel,
                                      const SelectionJsonOptions& opt = {});

}  // namespace ragform::spotlight

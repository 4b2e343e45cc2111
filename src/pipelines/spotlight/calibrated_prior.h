// SpotlightRAG's document prior from the reader's calibrated attention (scoring.h
// ScoreParams::document_prior), instead of the fixed positional shape: the question's documents
// are put in one prompt in their order,
//   "<title>: <text>\n\n" per document, then "Question: <q>\nAnswer:",
// the reader's attention row of the final token (mean over heads, averaged over the layers)
// gives each document's mass, the bias curve at its slot is subtracted (found-in-the-middle's
// calibrated attention, pipelines/cnorm/relevance.h, joined in reproduce/spotlight_prior.h: the
// pipelines do not depend on each other), and the values are min-max normalised to [0, 1]
// (document_prior_from_relevance). The curve has one slot per document (`position-bias -k` the
// documents' count).
#pragma once
#include <string>
#include <vector>

#include "engine/runtime/steering.h"
#include "pipelines/spotlight/scoring.h"

namespace ragform::spotlight {

struct PriorPrompt {
  std::string text;
  std::vector<runtime::CharSpan> documents;  // bytes of each "<title>: <text>" in text
};

// The prompt the prior's attention is read on (see above).
PriorPrompt prior_prompt(const std::string& question, const std::vector<Document>& docs);

}  // namespace ragform::spotlight

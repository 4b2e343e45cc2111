// LLM-based perturbations g(.) of SURE (section 3.2-3.3), each by prompting a Reader with a
// versioned prompt (prompts.h):
//   style/simple, style/complex   rewrite by the perturbation reader (style_simple / style_complex)
//   source/llm-generated          paraphrase by the perturbation reader ("a powerful LLM")
//   source/self-generated         the same paraphrase prompt, answered by the reader under test
//   logic/llm-ranked              the perturbation reader orders the numbered sentences by
//   relevance
//                                 to the question; the answer must be a permutation of 1..n.
// Which Reader answers is the caller's choice (the CLI passes --perturb-model for the first four,
// -m for self-generated); this module only builds prompts, calls generate_batch and parses.
//
// Parsing (choices documented in docs/sure.md):
//  - Rewrites: trimmed; a first line that announces the answer ("Here is ...:") is dropped; one
//    pair of surrounding quotes is removed. An empty result is a failed perturbation.
//  - Ranking: the integers of the answer in order. A full permutation of 1..n is used as is. Else
//    the valid, first-seen numbers are kept in order and the missing ones appended in document
//    order (note "partial ranking: ..."); with no valid number the document order is kept (note
//    "no ranking parsed: fallback to document order"). The note is written with the pair.
//  - A reader exception marks the perturbation failed with the error text (never retried silently).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipelines/sure/perturb_rules.h"
#include "pipelines/sure/prompts.h"
#include "pipelines/sure/taxonomy.h"
#include "reader/measured.h"
#include "reader/reader.h"

namespace ragform::sure {

struct LlmRequest {
  Kind kind;
  Document doc;
  std::string question;  // for logic/llm-ranked
};

struct LlmOptions {
  int max_tokens = 512;
  double temperature = 0.0;  // greedy rewrites by default (reproducible)
  uint64_t seed = 0;
  size_t batch = 8;  // prompts per generate_batch call
};

// The prompt a request sends.
std::string llm_prompt(const PromptSet& prompts, const LlmRequest& req);
// Turns the reader's output into the perturbed document.
Perturbation parse_llm_output(const LlmRequest& req, const std::string& output);
// Order parsing for logic/llm-ranked: 0-based order of n sentences and the fallback note.
std::vector<size_t> parse_ranking(const std::string& output, size_t n, std::string& note);
// Strips announcement lines and quotes from a rewrite.
std::string clean_rewrite(const std::string& output);

// Runs the requests in batches on `reader` (all requests must need a reader). A reader error
// fails the request's pair (note "reader error: ..."); the run as a whole follows
// reader/measured.h: every request counts in `tally`, a batch after which it is hopeless stops
// the run, and without a caller's tally the run checks its own at the end (NothingMeasured when
// no request was answered, or every failure is a 401/403/404).
std::vector<Perturbation> run_llm_perturbations(reader::Reader& reader, const PromptSet& prompts,
                                                const std::vector<LlmRequest>& reqs,
                                                const LlmOptions& opt,
                                                reader::MeasuredTally* tally = nullptr);

}  // namespace ragform::sure

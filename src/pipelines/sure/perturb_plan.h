// From QA records to SURE's instance pairs (section 3.3): every (record, document, kind) in input
// order becomes one Pair; rule-based kinds are applied at once, the others become requests to the
// reader that writes them (perturb_llm.h), answered in batches afterwards. One plan for the CLI's
// `sure perturb`, the Python module's sure.perturb and `reproduce`, so all three write the same
// pairs.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "eval/qa_record.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/perturb_llm.h"
#include "pipelines/sure/perturb_rules.h"
#include "pipelines/sure/taxonomy.h"

namespace ragform::sure {

// A pair's fields for document `doc` (title, text) of a record and kind `k`: id "<instance>#<doc>",
// the kind's name, category and title rule. The perturbed text is the caller's to fill.
Pair pair_of(const std::string& instance, int doc, const std::string& question,
             const std::vector<std::string>& answers, const Document& d, Kind k);

struct PerturbPlan {
  std::vector<Pair> pairs;
  // Requests for the reader under test (source/self-generated) and for the perturbation reader
  // (style, source/llm-generated, logic/llm-ranked), each with the index of its pair.
  std::vector<LlmRequest> test_reqs, pert_reqs;
  std::vector<size_t> test_idx, pert_idx;
  size_t no_ctx = 0;  // records without documents
};

// The pairs of the first `max_docs` documents (0 = all) of each record for the `active` kinds.
PerturbPlan plan_pairs(const std::vector<eval::QaRecord>& recs, const std::vector<Kind>& active,
                       int max_docs, const RuleOptions& ro);

// Answers `reqs` on `rd` in batches of opt.batch and writes each result (text, note, failed) into
// the pair at the same position of `idx`. `progress` (may be empty) gets the number of requests
// done after each batch. reader::NothingMeasured (reader/measured.h) when no request was answered
// or every failure is a 401/403/404.
void apply_llm(reader::Reader& rd, const PromptSet& prompts, const LlmOptions& opt,
               const std::vector<LlmRequest>& reqs, const std::vector<size_t>& idx,
               std::vector<Pair>& pairs, const std::function<void(size_t)>& progress = {});

}  // namespace ragform::sure

// From QA records to SURE's instance pairs (section 3.3): every (record, document, kind) in input
// order becomes one Pair; rule-based kinds are applied at once, the others become requests to the
// reader that writes them (perturb_llm.h), answered in batches afterwards. run_perturb plans and
// runs it: one use case for the CLI's `sure perturb` and the Python module's sure.perturb, so both
// write the same pairs (`reproduce` uses pair_of and the rules alone).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "eval/qa_record.h"
#include "pipelines/common/common.h"
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

// ---- plan and run

// The readers of a perturbation run; a kind whose reader is null cannot run. The perturber writes
// style, source/llm-generated and logic/llm-ranked; the reader under test source/self-generated
// (its own knowledge, SURE 3.3).
struct PerturbReaders {
  reader::Reader* under_test = nullptr;
  reader::Reader* perturber = nullptr;  // null: the reader under test
};

// Which of the two readers `kinds` need (a front end opens only those).
struct ReaderNeeds {
  bool under_test = false, perturber = false;
};
ReaderNeeds reader_needs(const std::vector<Kind>& kinds);

// The kinds of `kinds` whose reader is given (in order); the others go to *missing (may be null).
std::vector<Kind> runnable_kinds(const std::vector<Kind>& kinds, const PerturbReaders& rd,
                                 std::vector<Kind>* missing);

// A kind named in the kinds list whose reader is not given (kinds_to_run). The message names the
// kind and which reader it needs; a front end may say it again in its own words (flags, keywords).
class KindNeedsReader : public UsageError {
 public:
  explicit KindNeedsReader(Kind k);
  Kind kind;
};

// The kinds of the list `list` (select_kinds: categories, names, "all") that the readers `rd` can
// run, in order. The one policy of every front end: a kind reached through a category or "all"
// whose reader is not given is left out and goes to *skipped (may be null; the CLI notes it), a
// kind named in the list without its reader is refused (KindNeedsReader): the user asked for it.
std::vector<Kind> kinds_to_run(const std::string& list, const PerturbReaders& rd,
                               std::vector<Kind>* skipped);

// Whether any of `kinds` is written by a reader: then run_perturb needs the prompt set.
bool any_reader_kind(const std::vector<Kind>& kinds);

struct PerturbOptions {
  int max_docs = 0;  // first N documents of each record (0 = all)
  RuleOptions rules;
  LlmOptions llm;          // its seed is rules.seed: one --seed for the whole run
  common::RunHooks hooks;  // one progress stage "sure perturb" over the reader-written pairs
};

struct PerturbResult {
  std::vector<Pair> pairs;  // record, document, kind order
  size_t no_ctx = 0;        // records without documents
  size_t failed = 0;        // pairs whose perturbation failed
};

// plan_pairs for the `active` kinds (runnable_kinds: every one's reader is given), then the
// perturber's requests, then the reader under test's, in batches of opt.llm.batch. Throws
// reader::NothingMeasured as apply_llm.
PerturbResult run_perturb(const std::vector<eval::QaRecord>& records,
                          const std::vector<Kind>& active, const PerturbReaders& rd,
                          const PromptSet& prompts, const PerturbOptions& opt);

}  // namespace ragform::sure

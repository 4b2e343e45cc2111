// Causal-feature preservation (section 3.4, Appendix C): keeps an instance pair only when
//  1. the perturbation produced a document (failed perturbations are dropped first);
//  2. ground truths are preserved, by normalised substring match (text/metrics.h): a Golden
//     original (contains an answer) must still contain one after the perturbation; a Noise
//     original must not gain one (e.g. from a title embedded by a template or a metadata URL);
//  3. bidirectional entailment: the Figure 10 NLI prompt is asked both ways (original as
//     premise, perturbed as hypothesis, and the reverse); the pair is equivalent iff both answers
//     say entailment. A reader error is "unmeasured" and the pair is dropped (and counted apart).
// The string check runs before NLI because it is free; counts report each filter's removals.
// Which kinds get NLI: every kind by default, as the paper filters every perturbation (3.4 applies
// the bidirectional entailment to all instance pairs, and Table 2's counts differ between
// rule-based kinds of one document set, so those were filtered too); NliScope::ReaderMade (--nli
// llm) restricts it to the kinds a reader wrote (style, source, llm-ranked), whose free-text
// output can drift, on the argument that rule-based kinds are equivalent by construction.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/sure/pairs.h"
#include "pipelines/sure/prompts.h"
#include "reader/reader.h"

namespace ragform::sure {

enum class NliLabel { Entailment, Neutral, Contradiction, Unparsed };
const char* to_string(NliLabel l);
// The first of the three label words in the (lower-cased) answer; Unparsed when none appears.
NliLabel parse_nli(const std::string& output);

enum class NliScope { None, ReaderMade, All };
NliScope parse_nli_scope(const std::string& s);  // "none" | "llm" | "all"; UsageError otherwise

// An NLI model other than the reader prompt (nli_encoder.h): the label of each (premise,
// hypothesis) pair, or throws (the pairs are then unmeasured).
using NliJudge = std::function<std::vector<NliLabel>(
    const std::vector<std::pair<std::string, std::string>>& premise_hypothesis)>;

struct FilterOptions {
  NliScope nli = NliScope::All;
  NliJudge judge;  // set: NLI by this judge instead of the reader's Figure 10 prompt
  int max_tokens = 8;
  size_t batch = 8;
};

struct FilterCounts {
  int64_t input = 0;
  int64_t failed_perturbation = 0;
  int64_t golden_lost_answer = 0;
  int64_t noise_gained_answer = 0;
  int64_t nli_checked = 0;
  int64_t nli_forward_not_entailed = 0;   // original => perturbed failed
  int64_t nli_backward_not_entailed = 0;  // forward ok, perturbed => original failed
  int64_t nli_unmeasured = 0;             // reader error in either direction
  int64_t kept = 0;
  nlohmann::ordered_json to_json() const;
};

struct FilterVerdict {
  bool keep = false;
  std::string reason;                     // empty when kept
  std::string nli_forward, nli_backward;  // raw labels ("" when not asked)
};

// Whether NLI of `scope` checks pair p (all kinds, or the reader-made ones), and whether it
// checks any of `pairs`: a front end opens the NLI reader only then.
bool nli_covers(const Pair& p, NliScope scope);
bool needs_nli(const std::vector<Pair>& pairs, NliScope scope);

// Answer-preservation check alone.
FilterVerdict check_answers(const Pair& p);

// Runs every filter over `pairs`; `nli_reader` may be null when opt.nli == None or opt.judge is
// set. reader::NothingMeasured (reader/measured.h) when NLI was asked and no pair got both
// verdicts, or every failure is a 401/403/404 (a pair without them is counted nli_unmeasured).
std::vector<FilterVerdict> filter_pairs(const std::vector<Pair>& pairs, reader::Reader* nli_reader,
                                        const PromptSet& prompts, const FilterOptions& opt,
                                        FilterCounts& counts);

}  // namespace ragform::sure

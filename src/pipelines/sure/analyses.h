// SURE's further analyses (section 4.3, 4.4, Appendix A.2):
//  - SIG (4.3): from several readers' evaluations, the Golden-document pairs where every reader
//    lacks robustness (C != 0 in every run), N per perturbation (default 100), seeded sample.
//  - Attention shift (4.3, eq. 4): attention of the query token (last layer, mean over heads by
//    default) on the tokens of the gold answer span inside the document, summed over the span's
//    tokens and divided by their number: A_org, A_pert, dA = |A_org - A_pert|, averaged per
//    Robust / Win / Lose group, and Welch's t-test of dA between Robust and Win+Lose.
//    The pairs measured are a seeded sample of the Golden pairs with a label: up to N per feature
//    category (the default, the paper's "50 examples with Golden documents from each category",
//    where "category" is the word the paper keeps for the five types of spurious feature) or, on
//    request, up to N per Robust / Win / Lose group.
//    The query token is "the final token of the question t_q" (4.3): the token ending the last
//    occurrence of the question in the prompt, at count_tokens(prompt up to the question's end) -
//    1; the final prompt token (after "Answer:", the one that predicts the answer) is an option.
//    The span is the first case-insensitive occurrence of a gold answer in the document part of
//    the prompt that starts and ends on word boundaries (so "1" is not found inside "1990"); its
//    token positions are [count_tokens(prefix), count_tokens(prefix + span)), which is exact when
//    the tokenizer does not merge across the span's edges (raw mode only).
//  - Oracle score (A.2, eq. 5): sum of log p(answer tokens | prompt) via Reader::score, averaged
//    over the gold answers; per query the top- and bottom-ranked candidate documents, and the K-S
//    test of semantic-agnostic features (Flesch reading ease, Distinct-1, token length, PPL)
//    between the two sets, against a random split of the same documents (control). Dependency-tree
//    depth needs a parser we do not have and is not computed.
//  - Training data (4.4): from unrobust Golden pairs, SFT {"prompt", "completion"} (the correct
//    answer after both the original and the perturbed prompt) and DPO {"prompt", "chosen",
//    "rejected"} (correct vs incorrect answer, both prompts) — TRL's prompt-completion and
//    preference layouts.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/qa_record.h"
#include "pipelines/common/common.h"
#include "pipelines/sure/metrics.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/prompts.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::sure {

// ---- SIG ----
// runs[r] = outcomes of reader r. Returns, per perturbation, the chosen pair ids (sorted by the
// sampling order) of Golden pairs measured in every run with C != 0 in every run.
std::map<std::string, std::vector<std::string>> select_sig(
    const std::vector<std::vector<Outcome>>& runs, size_t n_per_perturbation, uint64_t seed);

// ---- training data ----
struct TrainingData {
  std::vector<nlohmann::ordered_json> sft, dpo;
  int64_t unrobust_pairs = 0;
};
TrainingData synthesize_training_data(const store::RunStore& store, int64_t run);

// ---- semantic-agnostic features (A.3) ----
double flesch_reading_ease(const std::string& text);  // 206.835 - 1.015 w/s - 84.6 syl/w
double distinct_1(const std::string& text);           // unique words / words (lower-cased)
int count_syllables(const std::string& word);         // vowel-group heuristic

// ---- attention shift ----
enum class AttentionQueryToken {
  QuestionEnd,  // the paper's t_q: the question's final token (default)
  PromptEnd,    // the prompt's final token
};
AttentionQueryToken parse_attention_query(const std::string& s);  // "question" | "prompt"

struct AttentionOptions {
  int layer = -1;          // negative counts from the end
  std::vector<int> heads;  // empty = mean over every head
  AttentionQueryToken query = AttentionQueryToken::QuestionEnd;
};

// Byte range [begin, end) of the first case-insensitive (ASCII) occurrence of any of `answers` in
// `text` whose first and last characters sit on word boundaries: the byte before and the byte
// after are not letters, digits or UTF-8 bytes (>= 0x80, taken as letters). Earliest start wins;
// at equal starts the longer answer. nullopt when none occurs.
std::optional<std::pair<size_t, size_t>> find_answer_span(const std::string& text,
                                                          const std::vector<std::string>& answers);

// Mean attention of the query token (opt.query) on the answer span of `grounding` inside
// `prompt`; nullopt when no answer occurs in the grounding. `question` must occur in the prompt
// after the grounding for QuestionEnd.
std::optional<double> answer_span_attention(reader::Reader& reader, const std::string& prompt,
                                            const std::string& grounding,
                                            const std::string& question,
                                            const std::vector<std::string>& answers,
                                            const AttentionOptions& opt);

// What a sample of `sure attention` draws up to N pairs of (the strata): the five feature
// categories (the paper's reading, the default) or the Robust / Win / Lose outcome groups.
enum class AttentionSampling { Category, Outcome };
AttentionSampling parse_attention_sampling(const std::string& s);  // "category" | "outcome"
const char* sampling_name(AttentionSampling s);

struct AttentionSampleOptions {
  AttentionSampling by = AttentionSampling::Category;
  size_t per_group = 50;  // pairs per stratum (the paper: 50)
  uint64_t seed = 0;
  // {"by", "per_group", "seed"}: printed with the report, so results of different samples are
  // never taken for one another.
  nlohmann::ordered_json to_json() const;
};

// A pair with the label C of an evaluation run.
struct LabelledPair {
  Pair pair;
  int label = 0;
};

// The pairs of `pairs` whose (id, perturbation) is a Golden (K-G or U-G) outcome of `run`, with
// its label, in input order.
std::vector<LabelledPair> labelled_golden_pairs(const store::RunStore& store, int64_t run,
                                                std::vector<Pair> pairs);

// The sample: the pairs split into strata (by pair.category, or by label with the keys "-1",
// "0", "1"), each stratum shuffled in input order by std::shuffle with a std::mt19937_64 seeded
// mix_seed(seed, key, "attention") (perturb_rules.h), its first per_group kept; strata in key
// order. `drawn` (optional) receives the count kept per stratum (named by category, or Robust /
// Win / Lose).
std::vector<LabelledPair> sample_attention_pairs(std::vector<LabelledPair> pairs,
                                                 const AttentionSampleOptions& opt,
                                                 std::map<std::string, size_t>* drawn = nullptr);

struct AttentionGroup {
  std::string group;  // Robust | Win | Lose
  int64_t n = 0;
  double a_org = 0, a_pert = 0, delta = 0;
};
struct AttentionReport {
  std::vector<AttentionGroup> groups;
  std::optional<double> welch_t, welch_p;  // dA Robust vs Win+Lose, when both have >= 2 values
  nlohmann::ordered_json to_json() const;
};
// rows: (label C, A_org, A_pert) per pair.
AttentionReport attention_report(const std::vector<std::tuple<int, double, double>>& rows);

// A_org and A_pert of every pair on the RAG prompt P = (I, G, Q) (Chain-of-Note's instruction
// when `chain_of_note`): rows for attention_report, and the pairs left out because a prompt has
// no whole-word answer span in its document.
struct AttentionShift {
  std::vector<std::tuple<int, double, double>> rows;
  size_t no_span = 0;
};
AttentionShift measure_attention_shift(reader::Reader& reader, const PromptSet& prompts,
                                       const std::vector<LabelledPair>& pairs,
                                       const AttentionOptions& opt, bool chain_of_note);

// ---- oracle score ----
// Eq. 5 averaged over answers: mean_a sum_t log p(a_t | prompt, a_<t).
double oracle_score(reader::Reader& reader, const std::string& prompt,
                    const std::vector<std::string>& answers);
// Perplexity of a text under the reader: exp(-mean log p) of its own tokens.
double perplexity(reader::Reader& reader, const std::string& text);

// The A.2/A.3 experiment: per query, the candidate documents' oracle scores and features; the
// first- and last-ranked documents form the two sets, two distinct random documents per query the
// control sets (seeded); K-S test per feature between the sets.
struct DocFeatures {
  double flesch = 0, distinct1 = 0, tokens = 0, ppl = 0;
};
struct OracleDoc {
  double oracle = 0;
  DocFeatures f;
};
// Per record, its documents that contain a gold answer (A.2; normalised substring match), each
// with its oracle score on P = (I, G, Q) (G = "(Title: t) text", or the text when untitled) and
// its features (the reader's token count and perplexity of the text). One progress stage "sure
// oracle" over the records.
std::vector<std::vector<OracleDoc>> oracle_documents(reader::Reader& reader,
                                                     const PromptSet& prompts,
                                                     const std::vector<eval::QaRecord>& records,
                                                     const common::RunHooks& hooks = {});
struct KsFeatureRow {
  std::string feature;  // flesch | distinct1 | token_length | ppl
  double d = 0, p = 1;  // top vs bottom
  double control_d = 0, control_p = 1;
  nlohmann::ordered_json to_json() const;
};
// Queries with fewer than 2 documents are skipped; throws when fewer than 2 queries remain.
std::vector<KsFeatureRow> oracle_ks(const std::vector<std::vector<OracleDoc>>& per_query,
                                    uint64_t seed);

}  // namespace ragform::sure

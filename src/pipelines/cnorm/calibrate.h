// C-NORM calibration (cnorm-surface-formatting.txt, sections 4.2-4.3): for every candidate format
// f in F and every sampled prompt s in S, one attention-only pass gives the final token's
// last-layer attention a_s^(f); ABS (abs.h) scores it, and
//     f* = argmax_f (1/|S|) sum_s ABS(a_s^(f))
// (ties: the first candidate in F's order). The cost is exactly |S| x |F| attention passes.
//
// Choices where the paper is vague (also in docs/cnorm.md):
//  - Which attention: AbsOptions. Default = the paper's: last layer, final token, the mean over
//    heads, whole prompt (BOS included). Options: another layer; PerHead = mean over heads of each
//    head's ABS; Single = one head; context_span = a restricted to the tokens of the documents,
//    located by counting the tokens of the prompt up to the documents' first and last byte (raw
//    prompts only: a chat template puts tokens on both sides, so it is refused there).
//  - Spread: abs_std is the sample standard deviation (divisor |S| - 1; 0 when |S| = 1).
//  - Profiles print floats with 9 significant digits ("%.9g") and keep every per-prompt ABS.
//  - The cache key is the SHA-256 of the compact JSON of everything that can change the result
//    (model hash, task, p, seed, S, k, F, attention options, template, input file hash, chat mode).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelines/cnorm/format.h"
#include "pipelines/cnorm/tasks.h"
#include "reader/reader.h"

namespace ragform::cnorm {

enum class HeadMode { Mean, PerHead, Single };

struct AbsOptions {
  int layer = -1;                   // negative counts from the end
  HeadMode heads = HeadMode::Mean;  // Mean: ABS of the head-mean row (eq. of 4.2)
  int head = 0;                     // HeadMode::Single only
  bool context_span = false;        // restrict a to the documents' tokens
  nlohmann::json to_json() const;
};

// ABS of one attention row restricted to key positions [tb, te) (te clipped to the row).
double row_abs(const reader::AttentionRows& row, const AbsOptions& o, size_t tb, size_t te);
// The centroid mu of the same selection (PerHead: the mean of the heads' centroids).
double row_mu(const reader::AttentionRows& row, const AbsOptions& o, size_t tb, size_t te);
// One attention-only pass over the prompt, scored by ABS.
double prompt_abs(reader::Reader& r, const Prompt& p, const AbsOptions& o);

// Everything one pass tells about a prompt, for the run store and the report (Figure 3).
struct PromptMeasure {
  double abs = 0, mu = 0;
  std::vector<float> attention;     // the final token's row: head mean (Single: that head)
  std::vector<std::string> tokens;  // the prompt's token pieces, same length
  // Attention mass in each tenth of the documents' token span [span_begin, span_end), divided by
  // the span's mass (sums to 1). The span is found as for --context-span in raw mode; a chat
  // template hides it, so there the whole prompt is used (span_is_context = false).
  std::vector<double> mass_by_position;
  size_t span_begin = 0, span_end = 0;
  bool span_is_context = false;
};
PromptMeasure measure_prompt(reader::Reader& r, const Prompt& p, const AbsOptions& o);
// The 10 tenths of a[tb, te): tenth i holds the t with floor(10 (t - tb) / (te - tb)) = i.
// Throws Error on an empty span or zero mass.
std::vector<double> mass_by_tenth(const std::vector<float>& a, size_t tb, size_t te);

// One sampled calibration prompt: an item with its gold at gold_pos among k documents.
struct PromptSpec {
  const Item* item = nullptr;
  size_t k = 0;
  size_t gold_pos = 0;
};

struct CandidateScore {
  Delimiter delim;
  std::vector<double> abs;  // per scored prompt, in PromptSpec order (halving: a prefix)
  double mean = 0, std = 0;
  double p = -1;                 // this candidate's ratio (-1 in old profiles: the profile's p)
  std::string wrapper = {};      // SURE document format, "" for a delimiter candidate
  std::string name = {};         // label in profiles and run stores ("" = delim.name)
  int eliminated_in_round = -1;  // successive halving: the round it was dropped in (-1: never)
  const std::string& label() const { return name.empty() ? delim.name : name; }
};

// The (mean, sample std) a calibration reports for a candidate's ABS values (CandidateScore's
// mean and std), for front ends that summarise stored values the same way; {0, 0} when empty.
std::pair<double, double> abs_mean_std(const std::vector<double>& abs);

enum class Search { Exhaustive, Halving };

struct Calibration {
  std::vector<CandidateScore> candidates;  // in F's order
  size_t best = 0;
  size_t passes = 0;  // (candidate, prompt) pairs scored = attention-only passes of the search
  nlohmann::json search = nlohmann::json::object();  // method, rounds, passes (profile "search")
};

struct CalibrationSetup {
  Task task = Task::Qa;
  std::string tmpl;
  std::vector<Delimiter> candidates;
  double p = 0.5;
  uint64_t seed = 0;
  AbsOptions abs;
  // Beyond the paper (docs/cnorm.md): a joint search over (f, p) — every delimiter at every p of
  // p_grid (empty: {p}) — plus SURE document wrappers as candidates (unformatted text, p = 0),
  // and successive halving instead of scoring every candidate on every prompt.
  std::vector<double> p_grid;
  std::vector<std::string> wrappers;
  Search search = Search::Exhaustive;
};

// The candidate list of a setup: for each p of the grid (in order), each delimiter (in order);
// then each wrapper. Names: the delimiter's name with one p, "<delim>@p=<p>" with several, the
// wrapper's name for wrappers. The "original" candidate (the unformatted text) appears once, at
// its place among the delimiters of the first p, with p = 0 and the name "original".
std::vector<CandidateScore> candidate_list(const CalibrationSetup& setup);
Format candidate_format(const CandidateScore& c, uint64_t seed);

// Scores candidate c on prompt s (rendered as `prompt`): one attention-only pass, or a stored row.
using ScoreFn = std::function<double(size_t c, size_t s, const Prompt& prompt)>;

// The search (exhaustive or halving) over candidate_list(setup), scoring through `score`.
// Exhaustive: every candidate on every prompt, |S| x |F| passes. Successive halving with
// |C| candidates and |S| prompts: R = max(1, ceil(log2 |C|)) rounds; round r (0-based) scores
// the survivors on the first s_r = ceil(|S| / 2^(R-1-r)) prompts (only prompts not scored in an
// earlier round cost a pass), ranks them by mean ABS over those s_r prompts (first on ties) and
// keeps ceil(n / 2) of them; the last round (s = |S|) picks f*. With 9 candidates and S = 6:
// 9x1 + 5x1 + 3x1 + 2x3 = 23 passes instead of 54.
Calibration run_calibration(const CalibrationSetup& setup, const std::vector<PromptSpec>& prompts,
                            const ScoreFn& score);

// run_calibration scoring by prompt_abs. on_prompt (optional) sees each prompt with its ABS.
Calibration calibrate(
    reader::Reader& r, const CalibrationSetup& setup, const std::vector<PromptSpec>& prompts,
    const std::function<void(size_t f, size_t s, const Prompt&, double abs)>& on_prompt = {});

// The run-store `extra` of one calibration row (docs/cnorm.md "Calibration run store"):
// delimiter (text), p, format, gold_position, k, mass_by_position (10, "%.9g"), mass_span,
// mass_span_is_context, and for prompts of <= 2048 tokens attention ("%.4g") and tokens.
nlohmann::json calibration_row_extra(const PromptMeasure& m, const CandidateScore& c,
                                     const PromptSpec& ps);

// The deployable result (section 4.3).
struct Profile {
  std::string model_sha256;
  std::string task;
  double p = 0.5;
  uint64_t seed = 0;
  size_t S = 0;
  Delimiter best;
  std::string best_wrapper;  // the best candidate's document format ("" = none)
  std::string best_name;     // the best candidate's label ("" = best.name)
  std::vector<CandidateScore> candidates;
  nlohmann::json search = nlohmann::json::object();  // Calibration::search
  nlohmann::json extra = nlohmann::json::object();   // k, attention options, template, ...
};

// The deployed format of a profile: best delimiter, p, seed and wrapper.
Format profile_format(const Profile& p);
nlohmann::json profile_to_json(const Profile& p);
// Validates every field; errors read "<where>: profile: <why>" (`where`: a file name; alone when it
// names the profile already, e.g. "request 'profile'") and name the field, or say that the value
// is not a C-NORM profile at all (not an object, or an object with none of its fields).
Profile profile_from_json(const nlohmann::json& j, const std::string& where);
Profile load_profile(const std::string& path);
// Why a profile does not belong to (model, task): "" when it does. Calibration is per model-task
// pair (5.3), so `cnorm eval` refuses a mismatch unless forced. An empty model hash in the profile
// (written by hand) never matches.
std::string profile_mismatch(const Profile& p, const std::string& model_sha256,
                             const std::string& task);
void save_profile(const Profile& p, const std::string& path);

// Cache of profiles keyed by SHA-256 of identity.dump() (a JSON object; keys are sorted).
std::string cache_key(const nlohmann::json& identity);
std::optional<Profile> cache_lookup(const std::string& dir, const std::string& key);
void cache_store(const std::string& dir, const std::string& key, const Profile& p);

}  // namespace ragform::cnorm

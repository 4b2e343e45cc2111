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
// One attention-only pass over the prompt, scored by ABS.
double prompt_abs(reader::Reader& r, const Prompt& p, const AbsOptions& o);

// One sampled calibration prompt: an item with its gold at gold_pos among k documents.
struct PromptSpec {
  const Item* item = nullptr;
  size_t k = 0;
  size_t gold_pos = 0;
};

struct CandidateScore {
  Delimiter delim;
  std::vector<double> abs;  // per sampled prompt, in PromptSpec order
  double mean = 0, std = 0;
};

struct Calibration {
  std::vector<CandidateScore> candidates;  // in F's order
  size_t best = 0;
};

// (mean, sample std) of values; the caller guarantees values is not empty.
std::pair<double, double> mean_std(const std::vector<double>& v);
// Index of the largest mean (first on ties).
size_t argmax_mean(const std::vector<CandidateScore>& c);

struct CalibrationSetup {
  Task task = Task::Qa;
  std::string tmpl;
  std::vector<Delimiter> candidates;
  double p = 0.5;
  uint64_t seed = 0;
  AbsOptions abs;
};

// Runs the |S| x |F| passes. on_prompt (optional) sees each prompt with its ABS.
Calibration calibrate(
    reader::Reader& r, const CalibrationSetup& setup, const std::vector<PromptSpec>& prompts,
    const std::function<void(size_t f, size_t s, const Prompt&, double abs)>& on_prompt = {});

// The deployable result (section 4.3).
struct Profile {
  std::string model_sha256;
  std::string task;
  double p = 0.5;
  uint64_t seed = 0;
  size_t S = 0;
  Delimiter best;
  std::vector<CandidateScore> candidates;
  nlohmann::json extra = nlohmann::json::object();  // k, attention options, template, ...
};

double round9(double v);  // what "%.9g" prints
nlohmann::json profile_to_json(const Profile& p);
// Validates every field; errors name `where` (a file name) and the field.
Profile profile_from_json(const nlohmann::json& j, const std::string& where);
Profile load_profile(const std::string& path);
void save_profile(const Profile& p, const std::string& path);

// Cache of profiles keyed by SHA-256 of identity.dump() (a JSON object; keys are sorted).
std::string cache_key(const nlohmann::json& identity);
std::optional<Profile> cache_lookup(const std::string& dir, const std::string& key);
void cache_store(const std::string& dir, const std::string& key, const Profile& p);
// $XDG_CACHE_HOME/ragform/cnorm, else $HOME/.cache/ragform/cnorm, else ./.ragform-cache/cnorm.
std::string default_cache_dir();

}  // namespace ragform::cnorm

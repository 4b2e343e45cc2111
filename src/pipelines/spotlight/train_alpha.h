// Fitting the learned query-token weights of eq. (8) (alpha.h) on supporting-fact labels:
// `ragform spotlight train-alpha`.
//
// Data: questions with gold sentences (HotpotQA supporting_facts). Each question is scored once
// (alpha_terms, scoring.h) with the scoring settings the weights are for; R for any weights then
// follows without encoding again.
// Objective: mean recall@K of the gold sentences over the questions (the quantity `spotlight
// eval` reports), ties broken by the mean AUC of the gold sentences (the fraction of a question's
// other sentences each gold sentence outranks, ties counting one half), which still moves where
// recall@K is flat.
// Search: coordinate search from the IDF weights (idf_alpha_weights: the fit starts at today's
// default and only accepts strict improvements, so on its training data it never ends below IDF).
// Each pass visits the features in an order drawn from the seed (mt19937_64 with our own
// Fisher-Yates, so every standard library draws the same order) and moves a weight by +step or
// -step (clamped to [-bound, bound]) when that improves the objective; a pass without an
// improvement halves the step; the search stops when the step falls below min_step or after
// max_passes. Deterministic: the same questions, settings and seed give the same weights.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pipelines/spotlight/scoring.h"

namespace ragform::spotlight {

struct AlphaQuestion {
  AlphaTerms terms;
  std::vector<size_t> gold;  // indices into terms.sent_ids of the scored gold sentences
  size_t n_gold = 0;         // every resolvable gold sentence (scored or cut off)
};

// The question's terms with its gold (doc, sentence) pairs located among the scored sentences.
AlphaQuestion alpha_question(AlphaTerms terms, const std::vector<std::pair<int, int>>& gold);

struct AlphaObjective {
  double recall = 0;  // mean recall@K
  double auc = 0;     // mean gold-sentence AUC (the tie-break)
  bool better_than(const AlphaObjective& o) const;
};

// The objective of weights w on the questions (p: the scoring settings of the terms).
AlphaObjective alpha_objective(const std::vector<AlphaQuestion>& qs, const AlphaWeights& w,
                               const ScoreParams& p, int K);
// The objective of a fixed alpha rule (Uniform or Idf) on the same questions, for comparison.
AlphaObjective fixed_alpha_objective(const std::vector<AlphaQuestion>& qs, Alpha kind,
                                     const ScoreParams& p, int K);

struct FitOptions {
  int K = 6;
  uint64_t seed = 1;
  double step = 1.0, min_step = 1.0 / 64, bound = 4.0;
  int max_passes = 60;
  // Called after each pass: pass number, step used, the objective so far.
  std::function<void(int, double, const AlphaObjective&)> on_pass;
};

struct AlphaFit {
  AlphaWeights weights{};
  AlphaObjective objective;  // of weights, on the training questions
  int passes = 0, evaluations = 0;
};

AlphaFit fit_alpha(const std::vector<AlphaQuestion>& qs, const ScoreParams& p, const FitOptions& o);

}  // namespace ragform::spotlight

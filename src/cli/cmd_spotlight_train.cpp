// `ragform spotlight train-alpha`: fits the learned query-token weights of eq. (8)
// (pipelines/spotlight/alpha.h, train_alpha.h) on supporting-fact labels and writes the alpha
// file that `spotlight select|eval --alpha learned:FILE` reads (docs/spotlight.md).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/progress.h"
#include "cli/args.h"
#include "cli/output_file.h"
#include "cli/spotlight_flags.h"
#include "eval/datasets.h"
#include "eval/jsonl.h"
#include "pipelines/spotlight/spotlight.h"
#include "store/sha256.h"

namespace ragform::cli {

using namespace ragform::spotlight;

namespace {

struct TrainingSet {
  std::vector<AlphaQuestion> questions;
  std::vector<std::string> keys;  // alpha_question_key of every question read, sorted, unique
  size_t skipped = 0;             // records whose supporting facts resolve to no sentence
};

// Scores every labelled question once. A record the fit cannot use is an error naming its line:
// no contexts, or no supporting facts at all (not HotpotQA); a record whose facts all point
// outside their paragraphs (a known HotpotQA annotation slip) is skipped and counted.
TrainingSet load_training_set(const std::string& input, size_t limit, TokenEncoder& enc,
                              const ScoreParams& sp) {
  eval::LoadOptions lo;
  lo.limit = limit;
  std::vector<eval::QaRecord> recs;
  eval::for_each_qa_record(input, lo, [&](eval::QaRecord& r, const eval::JsonRow&) {
    if (r.ctxs.empty()) throw eval::RowError("record '" + r.id + "' has no contexts");
    if (!r.hotpot || r.hotpot->supporting_facts.empty())
      throw eval::RowError("record '" + r.id +
                           "' has no supporting_facts: train-alpha needs HotpotQA sentence labels");
    recs.push_back(std::move(r));
  });
  TrainingSet ts;
  Progress prog("spotlight train-alpha: scoring", recs.size());
  for (const eval::QaRecord& r : recs) {
    prog.add();
    ts.keys.push_back(alpha_question_key(r.question));
    const auto gold = gold_sentences(r);
    if (gold.empty()) {
      ++ts.skipped;
      continue;
    }
    ts.questions.push_back(alpha_question(alpha_terms(enc, r.question, documents_of(r), sp), gold));
  }
  std::sort(ts.keys.begin(), ts.keys.end());
  ts.keys.erase(std::unique(ts.keys.begin(), ts.keys.end()), ts.keys.end());
  return ts;
}

// What the fit saw, kept in the alpha file's "training" object (no clock time, no tool version:
// the same data, settings and seed give the same file bytes).
nlohmann::json training_record(const std::string& input, const SpotlightEncoderFlags& ef,
                               const TokenEncoder& enc, const ScoreParams& sp, const FitOptions& fo,
                               const TrainingSet& ts, const AlphaFit& fit,
                               const AlphaObjective& idf, const AlphaObjective& uniform) {
  nlohmann::ordered_json j;
  j["input"] = input;
  j["input_sha256"] = store::sha256_file(input);
  j["questions"] = ts.questions.size();
  j["skipped"] = ts.skipped;
  j["encoder"] = enc.describe();
  if (ef.encoder.value == "static") j["vectors_sha256"] = store::sha256_file(ef.vectors.value);
  j["score_params"] = {{"top_k", sp.top_k},
                       {"lambda", sp.lambda},
                       {"max_context_tokens", sp.max_context_tokens},
                       {"title_context", sp.title_context},
                       {"lexical_weight", sp.lexical_weight},
                       {"paragraph_weight", sp.paragraph_weight}};
  j["objective"] = "recall@" + std::to_string(fo.K) + ", ties by gold-sentence AUC";
  j["seed"] = fo.seed;
  j["passes"] = fit.passes;
  j["evaluations"] = fit.evaluations;
  j["recall"] = fit.objective.recall;
  j["idf_recall"] = idf.recall;
  j["uniform_recall"] = uniform.recall;
  // What spotlight eval leaves out of a learned alpha's measurement (alpha.h alpha_question_key).
  j["question_keys"] = ts.keys;
  return nlohmann::json::parse(j.dump());
}

}  // namespace

int run_spotlight_train_alpha(const std::vector<std::string>& argv) {
  Args a("spotlight train-alpha",
         "Fit SpotlightRAG's query-token weights alpha (eq. 8) on supporting-fact labels and\n"
         "write them as an alpha file for `--alpha learned:FILE` (docs/spotlight.md).\n"
         "The model: alpha_i = softmax_i(w . f_i) over the question's tokens, f_i = the token's\n"
         "log IDF, relative position, stop-word and question-word flags, capitalisation, temporal\n"
         "and numeric tags and OOV flag. w starts at IDF weighting and moves by coordinate search\n"
         "to maximise recall@K (-K) of the gold sentences under the scoring flags given, which\n"
         "should be the ones the file will be used with. The same input, flags and --seed give\n"
         "the same file. The recall printed is on the training questions: measure the file on\n"
         "other questions with `spotlight eval --alpha learned:FILE`.");
  auto& input = a.opt<std::string>("--input", "FILE",
                                   "HotpotQA records with supporting_facts (JSONL, gzip ok)")
                    .required();
  auto& output = a.opt<std::string>("-o,--output", "FILE", "the alpha file to write").required();
  SpotlightEncoderFlags ef(a);
  SpotlightScoreFlags sf(a);
  auto& seed = a.opt<int>("--seed", "S", "order in which the search visits the features", 1);
  auto& passes =
      a.opt<int>("--max-passes", "N", "stop after N passes over the features", 60).range(1, 10000);
  auto& limit = a.opt<int>("--limit", "N", "use the first N questions (0 = all)", 0);
  if (!a.parse(argv)) return 0;
  if (sf.alpha.seen)
    throw UsageError("--alpha", "train-alpha fits alpha itself: leave out --alpha");
  const ScoreParams sp = sf.params();
  const std::vector<InputFile> inputs = {{"--input", input.value},
                                         {"--vectors", ef.vectors.value},
                                         {"--encoder-model", ef.encoder_model.value}};
  check_not_input(output.value, "-o", inputs);
  FitOptions fo;
  fo.K = sf.K.value;
  fo.seed = uint64_t(seed.value);
  fo.max_passes = passes.value;
  fo.on_pass = [&](int pass, double step, const AlphaObjective& o) {
    std::fprintf(stderr, "spotlight train-alpha: pass %d, step %.4g: recall@%d %.4f, AUC %.4f\n",
                 pass, step, fo.K, o.recall, o.auc);
  };
  TokenEncoder& enc = ef.open();
  const TrainingSet ts = load_training_set(input.value, size_t(std::max(0, limit.value)), enc, sp);
  if (ts.questions.empty())
    throw Error("spotlight train-alpha",
                input.value + ": no question with a supporting fact that resolves to a sentence");
  const AlphaObjective idf = fixed_alpha_objective(ts.questions, Alpha::Idf, sp, fo.K);
  const AlphaObjective uniform = fixed_alpha_objective(ts.questions, Alpha::Uniform, sp, fo.K);
  const AlphaFit fit = fit_alpha(ts.questions, sp, fo);
  write_output(output.value, "-o",
               alpha_file_text(fit.weights, training_record(input.value, ef, enc, sp, fo, ts, fit,
                                                            idf, uniform)),
               inputs);
  std::fprintf(stderr,
               "spotlight train-alpha: %zu questions (%zu without resolvable gold skipped); "
               "recall@%d on them: uniform %.4f, idf %.4f, learned %.4f; wrote %s\n",
               ts.questions.size(), ts.skipped, fo.K, uniform.recall, idf.recall,
               fit.objective.recall, output.value.c_str());
  std::string ws;
  for (size_t k = 0; k < kAlphaFeatures; ++k)
    ws += std::string(k ? ", " : "") + alpha_feature_names()[k] + " " +
          std::to_string(fit.weights[k]);
  std::fprintf(stderr, "spotlight train-alpha: weights %s\n", ws.c_str());
  ef.report_encoder_cost();
  return 0;
}

}  // namespace ragform::cli

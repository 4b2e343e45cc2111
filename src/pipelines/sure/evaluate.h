// Instances (section 3.3) and robustness evaluation (3.5) of SURE over instance pairs, with every
// prompt, output and label in the run store (store/run_store.h), resumable.
//
// Stages, each batched through Reader::generate_batch (rows already done are skipped):
//   1. closed-book  one row per question (instance = record id, variant "closed-book"): the
//                   closed_book prompt; Known iff Y(response) = 1 (3.3, with the reader under
//                   test). A question whose pairs carry `sure prepare`'s verdict (Pair::known)
//                   keeps it and has no closed-book row: prepare already decided it with the
//                   reader's own closed-book answers (EvalOptions::redecide_known decides again).
//   2. original     one row per (record, document) (instance = pair id "<record>#<doc>", variant
//                   "original"): P = (I, G, Q) with the Figure 11 instruction (qa_prompt layout).
//   3. perturbed    one row per pair (instance = pair id, variant = perturbation name): P^ =
//                   (I, g(G), Q); its extra holds the subset, the original's output and
//                   correctness and the label C = Y(y) - Y(y^).
// Golden/Noise: whether the original document contains a gold answer (normalised substring).
// With EvalOptions::judge, Y is the judge's verdict instead (LLM-as-judge, Appendix G).
// Y: any normalised gold answer contained in the response (text/metrics.h substring_match); with
// Chain-of-Note the text after the last "Answer:" is graded (whole response if absent).
// A reader exception stores the row as unmeasured with its error; unmeasured rows are never
// graded and pairs missing a measured original or perturbed row are left out of the metrics.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/options.h"
#include "eval/stats.h"
#include "pipelines/common/common.h"
#include "pipelines/sure/metrics.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/prompts.h"
#include "reader/generate_params.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::sure {

// `sure eval`'s settings. The ones a user sets are declared once in visit() (base/options.h): the
// CLI's flags (cli/cmd_sure.cpp) and Python's keywords and signature (ragform.sure.evaluate) come
// from it; the initial values are the defaults.
struct EvalOptions {
  double temperature = 0.1;  // the paper's setting (Appendix D)
  int max_tokens = 32;
  uint64_t seed = 0;
  size_t batch = 8;
  bool chain_of_note = false;  // Table 5 baseline: CoN instruction instead of Figure 11's
  size_t resamples = 2000;     // the report's bootstrap (robustness_report); not the run's identity
  int con_max_tokens = 256;
  // LLM-as-judge (Appendix G) as the alternative Y: when set, every response is graded by this
  // reader with the `judge` prompt (greedy); a judge error or a missing verdict stores the row as
  // unmeasured, never as wrong.
  reader::Reader* judge = nullptr;
  int judge_max_tokens = 256;
  // For analysis: the document G (original or perturbed) emphasised by attention while the
  // answer is generated, rescale:emphasis_gold on its bytes in each RAG prompt (gold_emphasis);
  // closed-book rows are not steered. 1 = off: today's rows and run identity exactly. Steered
  // rows are generated one prompt at a time (each has its own span) and carry extra
  // "steer_spans"; the reader's own steering must be off.
  double emphasis_gold = 1.0;
  // Decide Known/Unknown with this run's closed-book answers even for pairs that carry `sure
  // prepare`'s verdict (Pair::known); a run identity of its own (eval_run_config).
  bool redecide_known = false;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"temperature", "--temp", "T", "sampling temperature (paper: 0.1)"}.real(
          0, reader::kMaxTemperature),
      temperature);
    v(OptionDecl{"max_tokens", "-n,--max-tokens", "N", "answer tokens"}.count(1, 2147483647),
      max_tokens);
    v(OptionDecl{"seed", "--seed", "N", "sampling seed"}.count(0), seed);
    v(OptionDecl{"batch", "--batch", "N", "prompts per batched generation"}.count(1, 2147483647),
      batch);
    v(OptionDecl{"chain_of_note", "--chain-of-note", "",
                 "Chain-of-Note instruction (Table 5 baseline)"}
          .flag_only(),
      chain_of_note);
    v(OptionDecl{"resamples", "--resamples", "N", "bootstrap resamples"}.count(
          1, double(eval::kMaxResamples)),
      resamples);
    v(OptionDecl{"emphasis_gold", "--emphasis-gold", "FACTOR",
                 "for analysis: the document's attention times FACTOR while answering (generate "
                 "--steer rescale:FACTOR on its bytes; 1 = off)"}
          .real(0, 1e6),
      emphasis_gold);
    v(OptionDecl{"redecide_known", "--redecide-known", "",
                 "decide Known/Unknown with this run's closed-book answers even when the pairs "
                 "carry sure prepare's verdict (by default that verdict is kept)"}
          .flag_only(),
      redecide_known);
  }
};

// The sampler seed of one row (instance, variant) of a run seeded `seed`:
//   (splitmix64_mix(seed XOR fnv1a64(instance + '\0' + variant))) >> 33   (base/stable_hash.h)
// so a row samples the same tokens whichever rows ran before it or beside it in a batch (a study
// split with --shard and merged equals one run). 31 bits, so the value fits the `seed` field of
// every OpenAI-compatible server (llama-server keeps 32 bits), which receives the same seed.
uint64_t row_seed(uint64_t seed, std::string_view instance, std::string_view variant);

// The RAG prompt P = (I, G, Q).
std::string rag_prompt(const PromptSet& prompts, const std::string& grounding,
                       const std::string& question, bool chain_of_note);
// The same prompt, with the byte ranges of the grounding in it (one per {document}).
std::string rag_prompt(const PromptSet& prompts, const std::string& grounding,
                       const std::string& question, bool chain_of_note,
                       std::vector<runtime::CharSpan>& document_spans);
// The steering of EvalOptions::emphasis_gold on a prompt whose document sits at `document_spans`:
// `generate --steer rescale:FACTOR --steer-spans B:E,...` on it; inactive for factor 1 or no span.
reader::SteeringParams gold_emphasis(const std::vector<runtime::CharSpan>& document_spans,
                                     double factor);
std::string closed_book_prompt(const PromptSet& prompts, const std::string& question);
// Y(.) on a response (Chain-of-Note: on the text after the last "Answer:").
bool grade(const std::string& response, const std::vector<std::string>& answers,
           bool chain_of_note);

// The judge's verdict: the word after the last "Verdict:" (case-insensitive), "correct" or
// "incorrect"; throws Error when there is none.
bool parse_judge_verdict(const std::string& judge_output);
std::string judge_prompt(const PromptSet& prompts, const std::string& question,
                         const std::vector<std::string>& answers, const std::string& response);

// The rows of one invocation: every row of the pairs is generated (measured now), skipped_done
// (measured and stored before: reused), unmeasured (a reader error now) or deferred, so the four
// add up to the run's rows for these pairs (one closed-book row per question whose verdict the
// pairs do not carry (Pair::known), one original row per document, one row per pair).
struct EvalStats {
  int64_t generated = 0, skipped_done = 0, unmeasured = 0;
  // Perturbed rows not generated because their closed-book or original row is unmeasured: they
  // wait for a resume, so every stored perturbed row carries its original output and label.
  int64_t deferred = 0;
  int64_t pairs_measured = 0, pairs_unmeasured = 0;
  double generate_seconds = 0;
  int64_t prompt_tokens = 0;
};

// The identity of a `sure eval` run (store/run_store.h): pipeline "sure eval" and the config JSON
// of what changes its rows (temperature, max_tokens, Chain-of-Note, the prompts' identities, the
// grading: "substring_match", or "judge" with opt.judge's description, `judge_sha256` when not
// empty, and the judge prompt; `emphasis_gold` when not 1, so steered and unsteered runs never
// merge) and of its input (`pairs_sha256`, pairs.h: two pair files never
// share a run, so a resume never skips a row computed for other pairs under the same id). The
// model, reader, tool version and seed are added by run_eval, for every front end alike.
store::RunConfig eval_run_config(const EvalOptions& opt, const PromptSet& prompts,
                                 const std::string& pairs_sha256,
                                 const std::string& judge_sha256 = "");

// `sure eval` on the runner contract (pipelines/common/common.h): begins (or resumes) the run of
// eval_run_config's identity with the origin recorded and seed = eval.seed, runs the three stages
// for `pairs` on `reader` as one progress stage "sure eval" (its total: the rows still to
// generate), and returns the run, the outcomes of every pair whose three rows are measured and the
// invocation's counts. Used by `ragform sure eval`, the Python module and `reproduce`, so all three
// write the same runs. Throws reader::NothingMeasured as evaluate_pairs.
struct EvalRunOptions {
  EvalOptions eval;
  // The identity of the whole input; "" = pairs_sha256(pairs). A shard passes its whole file's,
  // so that every shard of a study writes the same run.
  std::string pairs_sha256;
  std::string judge_sha256;  // of eval.judge's model file; "" for none or a remote judge
  // Merged into the run's config (its identity): `reproduce` names its experiment there.
  nlohmann::json tag = nlohmann::json::object();
  common::RunOrigin origin;  // common::origin_of(reader, ...)
  common::RunHooks hooks;
};

struct EvalSummary {
  int64_t run = 0;
  std::vector<Outcome> outcomes;
  EvalStats stats;
};

EvalSummary run_eval(reader::Reader& reader, store::RunStore& store, const PromptSet& prompts,
                     const std::vector<Pair>& pairs, const EvalRunOptions& opt);

// The stages of run_eval in a run the caller began (benchmarks and tests of the stages): writes
// rows of `run`, then returns the outcomes of every pair whose three rows are measured. Throws
// reader::NothingMeasured (reader/measured.h) when rows failed and no pair is measured, or every
// failure is a client error (401/403/404; the run then stops after the first batch that shows
// it): the rows stay stored for a resume. `progress` (may be empty) is called after each batch
// with (rows done, rows total).
std::vector<Outcome> evaluate_pairs(reader::Reader& reader, store::RunStore& store, int64_t run,
                                    const PromptSet& prompts, const std::vector<Pair>& pairs,
                                    const EvalOptions& opt, EvalStats& stats,
                                    const std::function<void(size_t, size_t)>& progress = {});

// Rebuilds the outcomes of a run from its stored rows alone (no reader): for `sure sig` and
// reports. Pairs are identified by the perturbed rows' extra.
std::vector<Outcome> outcomes_from_store(const store::RunStore& store, int64_t run);

}  // namespace ragform::sure

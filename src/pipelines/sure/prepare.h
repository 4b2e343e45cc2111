// SURE's instance preparation (section 3.1, eq. 1, and 3.3): from retrieved passages to the four
// cells of instances that `sure perturb` takes.
//
//   Known / Unknown   the reader under test answers the question closed-book (the closed_book
//                     prompt, as stage 1 of evaluate.h, same row seeds); Known iff Y(response)
//                     = 1: a normalised gold answer is a substring of the response
//                     (text/metrics.h substring_match, grade() in evaluate.h). Or the verdicts
//                     come from a file (PrepareOptions::known).
//   Golden / Noise    a retrieved passage is Golden iff it contains a gold answer by the same
//                     normalised substring rule, else Noise.
//   cells             K-G, K-N, U-G, U-N: (question, passage) candidates. A question contributes
//                     up to per_question distinct passages (by id; by text when the id is empty)
//                     per cell — its candidates with the smallest
//                     derive_seed(seed, "<cell>\0<question id>\0<passage id>"), written in
//                     retrieval order (rank) — and each cell keeps the per_cell questions with
//                     the smallest derive_seed(seed, "<cell>\0<question id>")
//                     (base/stable_hash.h), so the choice is seeded and independent of the input
//                     order. per_question = 1 (the default) is one passage per question and cell,
//                     the output of before the option existed; the paper (3.3) makes every one
//                     of a question's 100 retrieved documents an instance, which is per_question
//                     >= k.
//
// Output rows (the litm-qa shape `sure perturb` reads), one per chosen (question, cell), by cell
// then question id; `sure perturb` makes one pair per passage of ctxs, and `sure eval` answers
// the row's question closed-book once:
//   {"id": "<question id>|<cell>", "question", "answers", "ctxs": [{"id", "title", "text",
//    "hasanswer", "rank"}, ...], "sure_cell": "K-G", "known": bool, "golden": bool,
//    "question_id": id, "closed_book": response (absent with known verdicts from a file)}
// Closed-book generations are rows of the run store (instance = question id, variant
// "closed-book", correct = Known), written batch by batch, so a killed run resumes without
// generating them again. A question whose closed-book row is unmeasured (a reader error) is in
// no cell and counted; when no closed-book row is measured, or every failure is a client error
// (401/403/404), run_prepare throws reader::NothingMeasured (reader/measured.h) instead.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/options.h"
#include "eval/qa_record.h"
#include "pipelines/common/common.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/prompts.h"
#include "reader/generate_options.h"
#include "reader/reader.h"
#include "store/run_store.h"

namespace ragform::sure {

inline constexpr std::array<const char*, 4> kCells = {"K-G", "K-N", "U-G", "U-N"};

// The options of `sure prepare` up to the run's inputs are declared once (base/options.h): the
// CLI's flags (cli/cmd_sure_prepare.cpp through cli/option_flags.h) and docs/cli.md come from
// visit(); the initial values are the defaults, reproduce's too. run_prepare checks them.
struct PrepareOptions {
  size_t per_cell = 50;     // questions per cell
  size_t per_question = 1;  // passages per question per cell (the paper: every one, >= k)
  uint64_t seed = 0;
  double temperature = 0.1;  // the closed-book answers, as `sure eval` (Appendix D)
  int max_tokens = 32;
  size_t batch = 8;

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"per_cell", "--per-cell", "N", "questions per cell"}.count(1, 2147483647),
      per_cell);
    v(OptionDecl{"per_question", "--per-question", "N",
                 "passages per question per cell (seeded; the paper: all, >= -k)"}
          .count(1, 2147483647),
      per_question);
    v(OptionDecl{"seed", "--seed", "S", "seed of the per-cell choice and the sampling"}.count(0),
      seed);
    // The closed-book answers are sampled as `sure eval`'s (its --temp's range).
    v(OptionDecl{"temperature", "--temperature", "T", "closed-book sampling temperature"}.real(
          0, reader::kMaxTemperature),
      temperature);
    v(OptionDecl{"max_tokens", "--max-tokens", "N", "closed-book answer tokens"}.count(1,
                                                                                       2147483647),
      max_tokens);
    v(OptionDecl{"batch", "--batch", "N", "prompts per batched generation"}.count(1, 2147483647),
      batch);
  }
  // Closed-book verdicts given instead of generated (question id -> Known); every question must
  // have one.
  std::optional<std::map<std::string, bool>> known;
  // What ran the run (not its identity): common::origin_of(reader, ...), or reader "known-file"
  // and chat mode "" for verdicts from a file (what `sure prepare --known` has always recorded).
  common::RunOrigin origin;
  common::RunHooks hooks;  // one progress stage "sure prepare" over the closed-book rows to make
};

struct CellCount {
  size_t candidates = 0;  // questions with at least one passage of this cell
  size_t chosen = 0;      // min(candidates, per_cell)
  size_t passages = 0;    // the chosen questions' passages (chosen when per_question = 1)
};

struct PrepareSummary {
  int64_t run = 0;  // in the store
  size_t questions = 0, known = 0, unknown = 0;
  size_t generated = 0, skipped_done = 0, unmeasured = 0;
  std::array<CellCount, 4> cells;  // in kCells order
  std::vector<nlohmann::ordered_json> rows;
};

// `sure prepare` on the runner contract (pipelines/common/common.h): begins (or resumes) the run
// of prepare_run_config's identity in `store` with opt.origin recorded and seed = opt.seed, then
// prepares the instances. `records`: questions with their retrieved passages (ctxs, best first)
// and gold answers. `prompts` gives the closed_book prompt; `reader` may be null when opt.known
// gives the verdicts. One runner for the CLI and `reproduce`.
PrepareSummary run_prepare(reader::Reader* reader, store::RunStore& store, const PromptSet& prompts,
                           const std::vector<eval::QaRecord>& records, const PrepareOptions& opt);

// The identity of a `sure prepare` run (store/run_store.h): the closed-book settings (temperature,
// max_tokens, the closed_book prompt's identity, or "file" for verdicts from opt.known), the
// grading, and `questions_sha256`: the hex SHA-256 of every record's id, question and gold answers
// (what a closed-book row depends on), so two question sets never share rows under the same ids.
// `per_question` joins the identity only when it is not 1, so a store written before the option
// existed resumes its runs under the same key. run_prepare adds the origin (model, reader, tool
// version) and the seed.
store::RunConfig prepare_run_config(const PrepareOptions& opt, const PromptSet& prompts,
                                    const std::vector<eval::QaRecord>& records);

// Reads --known FILE: JSONL {"id", "known": bool}; errors "<file>:<line>: <reason>".
std::map<std::string, bool> read_known_file(const std::string& path);

// The Known/Unknown verdicts `sure prepare` wrote into its output rows (id -> "known"), for
// `sure perturb` to carry into its pairs (pairs.h Pair::known): rows without "known" (records
// that did not come from prepare) are left out; a "known" that is not a boolean is an error
// "<file>:<line>: <reason>".
std::map<std::string, bool> prepared_known(const std::string& path);

// One row's verdict: its "known" when it has one (eval::RowError when it is not a boolean).
std::optional<bool> prepared_known_of(const nlohmann::json& row);

// Carries prepared verdicts (instance id -> known) into pairs of those instances: the one step of
// `sure perturb` in every front end, so that `sure eval` uses prepare's Known/Unknown.
void carry_known(std::vector<Pair>& pairs, const std::map<std::string, bool>& known);

}  // namespace ragform::sure

// Private to src/tune: what the phases of `ragform tune`'s runner (run.h) share. run.cpp holds
// the search (ABS, the rungs, robustness, the pick); run_context.cpp the context cap, the aliases
// and the control arm; run_holdout.cpp the held-out comparison; run_cells.cpp the rows (Ledger),
// the reader calls (Runner) and the scores read back from the rows. Not part of tune's interface.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "eval/qa_record.h"
#include "reader/reader.h"
#include "store/run_store.h"
#include "tune/run.h"

namespace ragform::tune::detail {

// The records' content as canonical JSON, hashed: the identity of a split.
std::string records_sha(const std::vector<eval::QaRecord>& recs);

inline std::string acc_variant(const std::string& label) { return "acc " + label; }
inline std::string abs_variant(const std::string& label) { return "abs " + label; }
inline std::string rob_variant(const std::string& kind, const std::string& label) {
  return "rob " + kind + " " + label;
}

// The rows of one run in memory, kept in step with every put().
class Ledger {
 public:
  Ledger(store::RunStore& st, int64_t run) : st_(st), run_(run) {
    for (auto& row : st.results(run))
      if (row.status == store::Status::ok) {
        note_prompt(row);
        rows_[{row.instance, row.variant}] = std::move(row);
      }
  }
  const store::Result* find(const std::string& inst, const std::string& var) const {
    auto it = rows_.find({inst, var});
    return it == rows_.end() ? nullptr : &it->second;
  }
  // An answered row of `inst` whose prompt is `prompt` (a prompt is answered once per record);
  // an ABS row has the same prompt but no answer.
  const store::Result* find_prompt(const std::string& inst, const std::string& prompt) const {
    auto it = by_prompt_.find({inst, prompt});
    return it == by_prompt_.end() ? nullptr : find(inst, it->second);
  }
  void put(store::Result row) {
    row.run = run_;
    st_.put(row);
    if (row.status != store::Status::ok) return;
    note_prompt(row);
    rows_[{row.instance, row.variant}] = std::move(row);
  }
  int64_t run() const { return run_; }

 private:
  // Remembers the answered row of (instance, prompt): the measured one, never a row that shared
  // it (whatever order a merged store lists them in), so a later copy names the same variant.
  void note_prompt(const store::Result& row) {
    if (!row.correct) return;
    const bool shared = row.extra.contains("shared_with");
    auto [it, fresh] = by_prompt_.emplace(store::Key{row.instance, row.prompt}, row.variant);
    if (!fresh && !shared && rows_.count({row.instance, it->second}) &&
        rows_.at({row.instance, it->second}).extra.contains("shared_with"))
      it->second = row.variant;
  }

  store::RunStore& st_;
  int64_t run_;
  std::map<store::Key, store::Result> rows_;
  std::map<store::Key, std::string> by_prompt_;  // (instance, prompt) -> the variant measured
};

// Whether this shard measures the prompt `prompt` of record `inst`. The split is by what is
// measured, not by the variant's name: every cell that sends the same prompt for the same record
// (an alias on this record, two perturbations that agree) lands on one shard, which sends it once
// and shares the answer as the unsharded search does.
bool shard_keeps(const TuneOptions& o, const std::string& inst, const std::string& prompt);

struct Runner {
  Runner(reader::Reader& reader_, const TuneOptions& options) : r(reader_), o(options) {}
  reader::Reader& r;
  const TuneOptions& o;
  size_t new_prompts = 0;
  std::vector<std::string> failures;  // the reader's errors, stored as unmeasured rows

  // Runs `measure` (one reader call); a reader's failure (a remote request that failed, a prompt
  // it refuses) becomes an unmeasured row, which a rerun retries (run_store.h). Usage errors and
  // missing capabilities are not a cell's failure and propagate.
  template <class Fn>
  void attempt(Ledger& led, const std::string& instance, const std::string& variant,
               const std::string& prompt, Fn&& measure);

  // Answers the record `rec` (already perturbed when it is a robustness cell) under `p`: queued,
  // and generated with the next kBatch - 1 answers as one batch (a reader may decode them
  // together); a killed search loses at most one batch.
  static constexpr size_t kBatch = 8;
  struct Job {
    std::string instance, variant, prompt;
    std::vector<std::string> answers;
    nlohmann::json presentation;
    std::optional<size_t> same_as;  // an earlier job of the queue with the same prompt
  };
  std::vector<Job> queue;

  void answer(Ledger& led, const eval::QaRecord& rec, const std::string& instance,
              const Presentation& p, const std::string& variant);

  // The row of `j` answered by `done`, the measured row with the same prompt.
  static store::Result shared_row(const store::Result& done, const Job& j);

  // Generates the queued answers (reader::generate_each: one batch, each prompt alone when the
  // batch fails) and stores a row for each: graded, or unmeasured with the reader's error.
  void flush(Ledger& led);

  // ABS of `rec`'s prompt under `p` (one attention pass), stored as the row `variant`.
  void measure_abs(Ledger& led, const eval::QaRecord& rec, const Presentation& p,
                   const std::string& variant);
};

// A phase's cells: those already stored, those this shard runs, those left to other shards.
struct PhaseState {
  size_t missing_elsewhere = 0;
};

// Runs the cells (instance, variant) without a row that this shard owns (by their prompt,
// prompt_of(i)): fn(i) measures cell i. Counts the others.
template <class PromptOf, class Fn>
PhaseState run_phase(const TuneOptions& o, Runner& run, Ledger& led, const std::string& stage,
                     const std::vector<std::pair<std::string, std::string>>& cells,
                     PromptOf&& prompt_of, Fn&& fn, bool whole = true) {
  PhaseState ps;
  std::vector<size_t> mine;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (led.find(cells[i].first, cells[i].second)) continue;
    if (o.shard_count <= 1 || shard_keeps(o, cells[i].first, prompt_of(i)))
      mine.push_back(i);
    else
      ++ps.missing_elsewhere;
  }
  if (mine.empty()) return ps;
  const size_t failed_before = run.failures.size();
  {
    Stage prog(o.hooks, stage, mine.size());
    for (size_t i : mine) {
      fn(i);
      prog.add();
    }
    run.flush(led);
  }
  // A phase of the search decides which candidates go on: it must be whole before the search
  // continues. The held-out evaluation is not (whole = false): its failed answers are counted
  // as unmeasured (run_holdout) and a rerun retries them.
  const size_t failed = run.failures.size() - failed_before;
  if (failed && !whole)
    o.hooks.say(stage + ": note: " + std::to_string(failed) + " of " + std::to_string(mine.size()) +
                " measurements failed (first: " + run.failures[failed_before] +
                "); they are counted as unmeasured, not as wrong answers, and a rerun retries "
                "them");
  else if (failed)
    throw Error(stage, std::to_string(failed) + " of " + std::to_string(mine.size()) +
                           " measurements failed (first: " + run.failures[failed_before] +
                           "); they are stored as unmeasured and a rerun retries them");
  return ps;
}

// Accuracy of each candidate over the first `items` records, from the ledger.
Score accuracy_of(const Ledger& led, const std::vector<eval::QaRecord>& dev, size_t items,
                  const std::string& label);

// The robustness rate of `label` over the pairs of `recs` (the first `items`), the pairs, and
// how many of them shared their perturbed answer with another pair (no prompt of their own).
std::tuple<std::optional<double>, size_t, size_t> robustness_of(
    const Ledger& led, const std::vector<eval::QaRecord>& recs, size_t items,
    const std::string& label, const std::vector<std::vector<std::string>>& kinds_of);

// The kinds that perturb each record (a degenerate perturbation is no pair).
std::vector<std::vector<std::string>> pair_kinds(const TuneOptions& o,
                                                 const std::vector<eval::QaRecord>& recs,
                                                 size_t items);

// Cells of the robustness check for candidates `idx` over the first `items` records.
PhaseState run_robustness(Runner& run, Ledger& led, const std::vector<eval::QaRecord>& recs,
                          size_t items, const std::vector<Presentation>& cands,
                          const std::vector<size_t>& idx,
                          const std::vector<std::vector<std::string>>& kinds_of,
                          const std::string& stage, bool whole = true);

// run_context.cpp

// Where a record came from, for an error: "FILE:LINE" of its split's file, else "record <id>"
// (generated needle records).
std::string record_where(const TuneOptions& o, const eval::QaRecord& rec);

// "512-token context (--ctx)": the cap and where it came from, for a message.
std::string context_words(const TuneOptions& o);

// Whether the prompt of `rec` under `p` and the answer fit the context. A reader that refuses to
// count a prompt longer than its context (the native reader) says no with ContextOverflow; every
// other failure (a record without documents, a closed port, a 401, a tokenizer error) is that
// failure, named with the record's FILE:LINE, never "exceeds the context".
// `tokens`, when given, receives the prompt's length (0 when the reader refused to count it).
bool fits_context(reader::Reader& r, const TuneOptions& o, const eval::QaRecord& rec,
                  const Presentation& p, size_t* tokens = nullptr);

// The context cap: the candidates of `all` whose prompt (plus the answer) fits the context on
// every dev record, in order; s.dropped_for_context counts the others and a note names the
// shortest prompt that did not fit. No candidate left is a UsageError naming the cause.
std::vector<Presentation> fitting_candidates(reader::Reader& r, const TuneOptions& o,
                                             const std::vector<Presentation>& all, TuneSummary& s);

// Splits `cands` into the distinct candidates (kept in order) and the aliases of earlier ones.
std::vector<Presentation> without_aliases(const TuneOptions& o,
                                          const std::vector<Presentation>& cands,
                                          std::vector<std::pair<Presentation, size_t>>& aliases);

// The original presentation, the control arm and the side the winner is compared with: the
// records as given (no delimiter, plain, retrieved order, no selection) with every document, or
// else the largest k of the space whose prompts fit the context on every dev record; none when
// no k fits.
std::optional<Presentation> original_arm(reader::Reader& r, const TuneOptions& o);

// run_holdout.cpp
// The held-out evaluation; with shards, this shard's share of its answers and robustness pairs
// (split by prompt as the search's phases: each runs once over all shards), and the count of the
// cells left to other shards (then s.holdout stays empty).
PhaseState run_holdout(Runner& run, store::RunStore& st, const TuneOptions& o, TuneSummary& s,
                       const Presentation& original, const Presentation& tuned);

}  // namespace ragform::tune::detail

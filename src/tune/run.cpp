#include "tune/run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/stable_hash.h"
#include "engine/model/model_card.h"
#include "eval/datasets.h"
#include "eval/stats.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/sure/sure.h"
#include "store/sha256.h"

namespace ragform::tune {

namespace {

// The records' content as canonical JSON, hashed: the identity of a split.
std::string records_sha(const std::vector<eval::QaRecord>& recs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : recs) {
    nlohmann::json c = nlohmann::json::array();
    for (const auto& x : r.ctxs)
      c.push_back({x.title, x.text, x.isgold, x.hasanswer.value_or(false), x.score.value_or(0.0)});
    nlohmann::json kv = nullptr;
    if (r.kv) kv = {r.kv->key, r.kv->value, r.kv->records, r.kv->gold_index};
    a.push_back({r.id, r.question, r.answers, c, kv});
  }
  return store::sha256_hex(store::canonical_json(a));
}

std::string acc_variant(const std::string& label) { return "acc " + label; }
std::string abs_variant(const std::string& label) { return "abs " + label; }
std::string rob_variant(const std::string& kind, const std::string& label) {
  return "rob " + kind + " " + label;
}

// One cell of the search: a record under a candidate, answered, perturbed or scored by ABS.
struct Cell {
  size_t record = 0;
  std::string variant;
  std::string prompt;  // rendered lazily by the phase
};

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
bool shard_keeps(const TuneOptions& o, const std::string& inst, const std::string& prompt) {
  return o.shard_count <= 1 ||
         fnv1a64(inst + "|" + prompt) % uint64_t(o.shard_count) == uint64_t(o.shard_index);
}

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
               const std::string& prompt, Fn&& measure) {
    try {
      measure();
    } catch (const UsageError&) {
      throw;
    } catch (const NotSupported&) {
      throw;
    } catch (const Error& e) {
      ++new_prompts;
      store::Result row;
      row.instance = instance;
      row.variant = variant;
      row.status = store::Status::unmeasured;
      row.error = e.what();
      row.prompt = prompt;
      led.put(std::move(row));
      failures.push_back(e.what());
    }
  }

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
              const Presentation& p, const std::string& variant) {
    Job j{instance, variant, render(rec, p, o.task, o.tmpl).prompt, rec.answers, to_json(p), {}};
    // A prompt already answered for this record (two perturbations that agree, say) is not run
    // again: its row is shared, and the budget is not charged for it.
    if (const store::Result* done = led.find_prompt(instance, j.prompt)) {
      led.put(shared_row(*done, j));
      return;
    }
    for (size_t q = 0; q < queue.size() && !j.same_as; ++q)
      if (queue[q].instance == instance && queue[q].prompt == j.prompt) j.same_as = q;
    queue.push_back(std::move(j));
    if (queue.size() >= kBatch) flush(led);
  }

  // The row of `j` answered by `done`, the measured row with the same prompt.
  static store::Result shared_row(const store::Result& done, const Job& j) {
    store::Result row = done;
    row.variant = j.variant;
    row.timings_ms.clear();
    row.extra = {{"presentation", j.presentation}, {"shared_with", done.variant}};
    if (done.extra.contains("answer")) row.extra["answer"] = done.extra["answer"];
    return row;
  }

  // Generates the queued answers (reader::generate_each: one batch, each prompt alone when the
  // batch fails) and stores a row for each: graded, or unmeasured with the reader's error.
  void flush(Ledger& led) {
    if (queue.empty()) return;
    std::vector<std::string> prompts;
    std::vector<size_t> slot(queue.size());  // the job's index in `prompts`
    for (size_t i = 0; i < queue.size(); ++i)
      if (!queue[i].same_as) {
        slot[i] = prompts.size();
        prompts.push_back(queue[i].prompt);
      }
    std::vector<reader::Attempt> generated =
        reader::generate_each(r, prompts, answer_params(o.max_tokens));
    new_prompts += prompts.size();
    std::vector<reader::Attempt> at;
    for (size_t i = 0; i < queue.size(); ++i)
      at.push_back(generated[slot[queue[i].same_as.value_or(i)]]);
    for (size_t i = 0; i < queue.size(); ++i) {
      Job& j = queue[i];
      if (j.same_as && at[i].gen) {
        if (const store::Result* done = led.find(j.instance, queue[*j.same_as].variant)) {
          led.put(shared_row(*done, j));
          continue;
        }
      }
      store::Result row;
      row.instance = j.instance;
      row.variant = j.variant;
      row.prompt = j.prompt;
      if (!at[i].gen) {
        row.status = store::Status::unmeasured;
        row.error = at[i].error;
        failures.push_back(at[i].error);
        led.put(std::move(row));
        continue;
      }
      const reader::Generation& g = *at[i].gen;
      row.prompt_tokens = g.prompt_tokens;
      row.output = g.text;
      row.correct = grade(g.text, j.answers);
      row.scores = {{"substring_match", *row.correct ? 1.0 : 0.0}};
      row.timings_ms = {{"total", at[i].ms}};
      row.extra = {{"presentation", j.presentation}, {"answer", cnorm::first_line(g.text)}};
      led.put(std::move(row));
    }
    queue.clear();
  }

  void measure_abs(Ledger& led, const eval::QaRecord& rec, const Presentation& p,
                   const std::string& variant) {
    cnorm::Prompt pr;
    pr.text = render(rec, p, o.task, o.tmpl).prompt;
    pr.ctx_end = pr.text.size();
    double abs = 0;
    bool ok = false;
    attempt(led, rec.id, variant, pr.text, [&] {
      abs = cnorm::prompt_abs(r, pr, cnorm::AbsOptions{});
      ok = true;
    });
    if (!ok) return;
    ++new_prompts;
    store::Result row;
    row.instance = rec.id;
    row.variant = variant;
    row.prompt = pr.text;
    row.prompt_tokens = r.count_tokens(pr.text);
    row.scores = {{"abs", abs}};
    row.extra = {{"presentation", to_json(p)}};
    led.put(std::move(row));
  }
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
                  const std::string& label) {
  Score s;
  double tok = 0;
  for (size_t i = 0; i < items; ++i) {
    const store::Result* row = led.find(dev[i].id, acc_variant(label));
    if (!row || !row->correct) continue;
    ++s.n;
    s.correct += *row->correct ? 1 : 0;
    tok += double(row->prompt_tokens.value_or(0));
  }
  s.tokens = s.n ? tok / double(s.n) : 0;
  return s;
}

// The best `keep` of `alive` by `better` (a strict order), the control (when alive) kept beside
// them whatever its rank and taking none of their places; in candidate order.
template <class Better>
std::vector<size_t> keep_best(const std::vector<size_t>& alive, std::optional<size_t> control,
                              size_t keep, Better&& better) {
  std::vector<size_t> order;
  bool has_control = false;
  for (size_t c : alive)
    if (control && c == *control)
      has_control = true;
    else
      order.push_back(c);
  std::stable_sort(order.begin(), order.end(), better);
  order.resize(std::min(keep - (has_control ? 1 : 0), order.size()));
  if (has_control) order.push_back(*control);
  std::sort(order.begin(), order.end());
  return order;
}

// Keeps the best `keep` of `idx` by accuracy (ties: fewer tokens, then order), the control
// beside them (keep_best).
std::vector<size_t> best_by_accuracy(const std::vector<size_t>& idx, const std::vector<Score>& sc,
                                     std::optional<size_t> control, size_t keep) {
  return keep_best(idx, control, keep, [&](size_t a, size_t b) {
    if (sc[a].accuracy() != sc[b].accuracy()) return sc[a].accuracy() > sc[b].accuracy();
    return sc[a].tokens < sc[b].tokens;
  });
}

// The robustness rate of `label` over the pairs of `recs` (the first `items`), the pairs, and
// how many of them shared their perturbed answer with another pair (no prompt of their own).
std::tuple<std::optional<double>, size_t, size_t> robustness_of(
    const Ledger& led, const std::vector<eval::QaRecord>& recs, size_t items,
    const std::string& label, const std::vector<std::vector<std::string>>& kinds_of) {
  std::vector<sure::Outcome> out;
  size_t shared = 0;
  for (size_t i = 0; i < items; ++i)
    for (const std::string& kind : kinds_of[i]) {
      const store::Result* org = led.find(recs[i].id, acc_variant(label));
      const store::Result* pert = led.find(recs[i].id, rob_variant(kind, label));
      if (!org || !pert || !org->correct || !pert->correct) continue;
      sure::Outcome oc;
      oc.pair_id = recs[i].id;
      oc.perturbation = kind;
      oc.y_org = *org->correct;
      oc.y_pert = *pert->correct;
      out.push_back(oc);
      if (pert->extra.contains("shared_with")) ++shared;
    }
  if (out.empty()) return {std::nullopt, 0, 0};
  return {sure::compute_rates(out, 0, 1).rr, out.size(), shared};
}

// The kinds that perturb each record (a degenerate perturbation is no pair).
std::vector<std::vector<std::string>> pair_kinds(const TuneOptions& o,
                                                 const std::vector<eval::QaRecord>& recs,
                                                 size_t items) {
  std::vector<std::vector<std::string>> out(items);
  for (size_t i = 0; i < items; ++i)
    for (const std::string& k : robustness_kinds())
      if (perturbed(recs[i], o.task, k, o.seed)) out[i].push_back(k);
  return out;
}

// Cells of the robustness check for candidates `idx` over the first `items` records.
PhaseState run_robustness(Runner& run, Ledger& led, const std::vector<eval::QaRecord>& recs,
                          size_t items, const std::vector<Presentation>& cands,
                          const std::vector<size_t>& idx,
                          const std::vector<std::vector<std::string>>& kinds_of,
                          const std::string& stage, bool whole = true) {
  std::vector<std::pair<std::string, std::string>> cells;
  std::vector<std::tuple<size_t, size_t, std::string>> what;
  for (size_t c : idx)
    for (size_t i = 0; i < items; ++i)
      for (const std::string& k : kinds_of[i]) {
        cells.push_back({recs[i].id, rob_variant(k, label(cands[c]))});
        what.emplace_back(c, i, k);
      }
  return run_phase(
      run.o, run, led, stage, cells,
      [&](size_t j) {
        auto [c, i, k] = what[j];
        return render(*perturbed(recs[i], run.o.task, k, run.o.seed), cands[c], run.o.task,
                      run.o.tmpl)
            .prompt;
      },
      [&](size_t j) {
        auto [c, i, k] = what[j];
        run.answer(led, *perturbed(recs[i], run.o.task, k, run.o.seed), recs[i].id, cands[c],
                   cells[j].second);
      },
      whole);
}

// Where a record came from, for an error: "FILE:LINE" of its split's file, else "record <id>"
// (generated needle records).
std::string record_where(const TuneOptions& o, const eval::QaRecord& rec) {
  const std::less<const eval::QaRecord*> before;
  const bool dev = !o.dev.empty() && !before(&rec, &o.dev.front()) && !before(&o.dev.back(), &rec);
  const std::string& path = dev ? o.dev_path : o.holdout_path;
  if (path.empty() || rec.source_line == 0) return "record " + excerpt(rec.id);
  return path + ":" + std::to_string(rec.source_line);
}

// "512-token context (--ctx)": the cap and where it came from, for a message.
std::string context_words(const TuneOptions& o) {
  return std::to_string(o.ctx) + "-token context" +
         (o.ctx_source.empty() ? std::string() : " (" + o.ctx_source + ")");
}

// Whether the prompt of `rec` under `p` and the answer fit the context. A reader that refuses to
// count a prompt longer than its context (the native reader) says no with ContextOverflow; every
// other failure (a record without documents, a closed port, a 401, a tokenizer error) is that
// failure, named with the record's FILE:LINE, never "exceeds the context".
// `tokens`, when given, receives the prompt's length (0 when the reader refused to count it).
bool fits_context(reader::Reader& r, const TuneOptions& o, const eval::QaRecord& rec,
                  const Presentation& p, size_t* tokens = nullptr) {
  std::string prompt;
  try {
    prompt = render(rec, p, o.task, o.tmpl).prompt;
  } catch (const Error& e) {
    throw Error(record_where(o, rec), e.what());
  }
  try {
    const size_t n = size_t(r.count_tokens(prompt));
    if (tokens) *tokens = n;
    return n + size_t(o.max_tokens) <= o.ctx;
  } catch (const ContextOverflow&) {
    if (tokens) *tokens = 0;
    return false;
  } catch (const NotSupported&) {
    throw;
  } catch (const FileError&) {
    throw;
  } catch (const Error& e) {
    throw Error(record_where(o, rec), std::string("counting the prompt's tokens: ") + e.what());
  }
}

// What a candidate shows the reader: every prompt it renders for the dev records and their
// perturbations, hashed. Two candidates with the same signature (order edges and retrieved with
// k <= 2, say) are one measurement.
std::string prompt_signature(const TuneOptions& o, const std::vector<eval::QaRecord>& recs,
                             const Presentation& p) {
  std::string all;
  for (const eval::QaRecord& rec : recs) {
    const std::string pr = render(rec, p, o.task, o.tmpl).prompt;
    all += std::to_string(pr.size()) + ":" + pr;
  }
  return store::sha256_hex(all);
}

// Splits `cands` into the distinct candidates (kept in order) and the aliases of earlier ones.
std::vector<Presentation> without_aliases(const TuneOptions& o,
                                          const std::vector<Presentation>& cands,
                                          std::vector<std::pair<Presentation, size_t>>& aliases) {
  // The dev records and their perturbations (the robustness check's records), perturbed once.
  std::vector<eval::QaRecord> recs;
  for (const eval::QaRecord& rec : o.dev) {
    recs.push_back(rec);
    for (const std::string& k : robustness_kinds())
      if (auto pert = perturbed(rec, o.task, k, o.seed)) recs.push_back(std::move(*pert));
  }
  std::vector<Presentation> distinct;
  std::map<std::string, size_t> seen;
  for (const Presentation& p : cands) {
    auto [it, fresh] = seen.emplace(prompt_signature(o, recs, p), distinct.size());
    if (fresh)
      distinct.push_back(p);
    else
      aliases.emplace_back(p, it->second);
  }
  return distinct;
}

// The original presentation, the control arm and the side the winner is compared with: the
// records as given (no delimiter, plain, retrieved order, no selection) with every document, or
// else the largest k of the space whose prompts fit the context on every dev record; none when
// no k fits.
std::optional<Presentation> original_arm(reader::Reader& r, const TuneOptions& o) {
  std::vector<size_t> ks = {0};
  std::vector<size_t> given = o.space.ks;
  std::sort(given.rbegin(), given.rend());
  for (size_t k : given)
    if (k) ks.push_back(k);
  Presentation p = original_presentation();
  p.format_seed = o.space.format_seed;
  for (size_t k : ks) {
    p.k = k;
    bool fits = true;
    for (size_t i = 0; i < o.dev.size() && fits && o.ctx; ++i)
      fits = fits_context(r, o, o.dev[i], p);
    if (fits) return p;
  }
  return std::nullopt;
}

// The held-out evaluation; with shards, this shard's share of its answers and robustness pairs
// (split by prompt as the search's phases: each runs once over all shards), and the count of the
// cells left to other shards (then s.holdout stays empty).
PhaseState run_holdout(Runner& run, store::RunStore& st, const TuneOptions& o, TuneSummary& s,
                       const Presentation& original, const Presentation& tuned) {
  store::RunConfig rc;
  rc.pipeline = "tune holdout";
  rc.config = {{"task", task_name(o.task)},
               {"records", records_sha(o.holdout)},
               {"template_sha256", store::sha256_hex(o.tmpl)},
               {"max_tokens", o.max_tokens},
               {"kinds", robustness_kinds()}};
  rc.seed = int64_t(o.seed);
  std::vector<Presentation> sides = {original};
  if (!(tuned == original)) sides.push_back(tuned);
  // Records whose prompt does not fit the context under either side are left out (a note says
  // how many): the comparison is paired.
  std::vector<eval::QaRecord> recs;
  for (const eval::QaRecord& rec : o.holdout) {
    bool fits = true;
    for (const Presentation& p : sides)
      if (o.ctx && fits) fits = fits_context(run.r, o, rec, p);
    if (fits) recs.push_back(rec);
  }
  if (recs.size() < o.holdout.size())
    o.hooks.say("tune holdout: note: " + std::to_string(o.holdout.size() - recs.size()) + " of " +
                std::to_string(o.holdout.size()) +
                " held-out records left out: their prompts exceed the " + context_words(o) +
                " with the answer");
  if (recs.empty()) throw OptionError("holdout", "no held-out record fits the context");
  const size_t n = recs.size();
  const size_t rob_items = std::min(n, o.search.robust_items);
  common::Resumed res =
      common::begin_or_resume(st, rc, o.origin, o.hooks, "tune holdout", 0, "held-out answers");
  Ledger led(st, res.run);
  s.holdout_run = res.run;
  auto kinds_of = pair_kinds(o, recs, rob_items);
  std::vector<std::pair<std::string, std::string>> cells;
  std::vector<std::pair<size_t, size_t>> what;
  for (size_t c = 0; c < sides.size(); ++c)
    for (size_t i = 0; i < n; ++i) {
      cells.push_back({recs[i].id, acc_variant(label(sides[c]))});
      what.emplace_back(c, i);
    }
  // The answers and the robustness pairs do not depend on each other: a shard runs its share of
  // both before it stops for the merge.
  PhaseState ps = run_phase(
      o, run, led, "tune holdout", cells,
      [&](size_t j) {
        auto [c, i] = what[j];
        return render(recs[i], sides[c], o.task, o.tmpl).prompt;
      },
      [&](size_t j) {
        auto [c, i] = what[j];
        run.answer(led, recs[i], recs[i].id, sides[c], cells[j].second);
      },
      /*whole=*/false);
  std::vector<size_t> all(sides.size());
  std::iota(all.begin(), all.end(), 0);
  if (o.task != Task::Kv)
    ps.missing_elsewhere +=
        run_robustness(run, led, recs, rob_items, sides, all, kinds_of, "tune holdout robustness",
                       /*whole=*/false)
            .missing_elsewhere;
  if (ps.missing_elsewhere) return ps;
  Holdout h;
  // Paired over the records both sides answered: a record the reader failed on under either
  // side is unmeasured, never a wrong answer (nor a right one for the other side).
  std::vector<const Presentation*> side_of = {&sides.front(), &sides.back()};
  std::vector<size_t> paired;
  for (size_t i = 0; i < n; ++i) {
    bool both = true;
    for (const Presentation* p : side_of) {
      const store::Result* row = led.find(recs[i].id, acc_variant(label(*p)));
      both = both && row && row->correct;
    }
    if (both)
      paired.push_back(i);
    else
      ++h.unmeasured;
  }
  h.items = paired.size();
  if (h.unmeasured)
    o.hooks.say("tune holdout: note: " + std::to_string(h.unmeasured) + " of " + std::to_string(n) +
                " held-out records have no answer under one side (the reader failed): they are "
                "left out of the comparison, not counted as wrong; a rerun retries them");
  std::vector<Side*> out = {&h.original, &h.tuned};
  std::vector<std::vector<bool>> correct(2);
  for (size_t c = 0; c < 2; ++c) {
    const Presentation& p = *side_of[c];
    out[c]->label = label(p);
    size_t right = 0;
    double tokens = 0;
    for (size_t i : paired) {
      const store::Result* row = led.find(recs[i].id, acc_variant(label(p)));
      correct[c].push_back(*row->correct);
      right += *row->correct ? 1 : 0;
      tokens += double(row->prompt_tokens.value_or(0));
    }
    out[c]->accuracy = paired.empty() ? 0.0 : double(right) / double(paired.size());
    out[c]->tokens = paired.empty() ? 0.0 : tokens / double(paired.size());
    out[c]->robustness = std::get<0>(robustness_of(led, recs, rob_items, label(p), kinds_of));
  }
  for (const auto& kinds : kinds_of) h.prompts += kinds.size() * sides.size();
  h.prompts += n * sides.size();
  for (const Presentation& p : sides)  // a pair that shared another's answer ran no prompt
    h.prompts -= std::get<2>(robustness_of(led, recs, rob_items, label(p), kinds_of));
  std::vector<double> d;
  for (size_t i = 0; i < paired.size(); ++i)
    d.push_back(double(correct[1][i]) - double(correct[0][i]));
  if (!d.empty()) {
    eval::BootstrapCI ci = eval::bootstrap_mean_ci(d, 0.95, 10000, o.seed);
    h.diff_lo = ci.lo;
    h.diff_hi = ci.hi;
  }
  h.mcnemar_p = eval::mcnemar(correct[0], correct[1]).p_exact;
  s.holdout = h;
  return ps;
}

}  // namespace

TuneSummary run_tune(reader::Reader& r, store::RunStore& st, const TuneOptions& o) {
  if (o.dev.empty()) throw UsageError("tune", "the dev split has no record");
  if (o.task == Task::Kv &&
      (o.objective == Objective::Robust || o.objective == Objective::Balanced))
    throw OptionError("objective", std::string(objective_name(o.objective)) +
                                       " needs a robustness check, which the kv task has not "
                                       "(no sentences to perturb)");
  const bool attention = r.capabilities().attention;
  if (o.objective == Objective::Abs && !attention)
    throw OptionError("objective",
                      "abs needs a reader that gives attention (the native reader "
                      "or ragform serve), not " +
                          r.describe());
  if (o.holdout_overlap)
    o.hooks.say("tune: note: " + std::to_string(o.holdout_overlap) +
                " held-out records also in the dev split were dropped from the held-out split (" +
                std::to_string(o.holdout.size()) +
                " left): answers searched on would not be "
                "held out");
  TuneSummary s;
  s.budget = o.budget;
  std::vector<Presentation> all = candidates(o.space, o.task);
  // The control arm: the original presentation is measured on every rung and reaches the final
  // comparison whatever it scores, so the winner is always compared with it on the same records.
  // A space without it (say --delims - only) gets it as one more candidate.
  // (The abs objective only ranks ABS: it has no cuts to survive, and adds no candidate.)
  const bool control_arm = o.objective != Objective::Abs;
  const std::optional<Presentation> original = original_arm(r, o);
  if (control_arm && original && std::find(all.begin(), all.end(), *original) == all.end()) {
    all.push_back(*original);
    s.control_added = true;
  }

  // The context cap: a candidate whose prompt (plus the answer) does not fit is dropped.
  if (o.ctx && size_t(o.max_tokens) >= o.ctx)
    throw OptionError("max_tokens", std::to_string(o.max_tokens) +
                                        " answer tokens leave no room for a prompt in the " +
                                        context_words(o) + ": give fewer or a larger --ctx");
  std::vector<Presentation> cands;
  // The shortest prompt that did not fit: which candidate, which record, how many tokens (0: the
  // reader refused to count it); and whether every dropped candidate failed on that one record.
  struct Overflow {
    size_t cand = 0, record = 0, tokens = 0;
  };
  std::optional<Overflow> shortest;
  bool one_record = true;
  for (size_t c = 0; c < all.size(); ++c) {
    bool fits = true;
    size_t i = 0, tokens = 0;
    for (; o.ctx && i < o.dev.size(); ++i)
      if (!(fits = fits_context(r, o, o.dev[i], all[c], &tokens))) break;
    if (fits) {
      cands.push_back(all[c]);
      continue;
    }
    if (shortest && shortest->record != i) one_record = false;
    if (!shortest || (tokens && (!shortest->tokens || tokens < shortest->tokens)))
      shortest = Overflow{c, i, tokens};
  }
  s.dropped_for_context = all.size() - cands.size();
  // "<prompt> tokens + <answer> answer tokens > <ctx>" of the shortest overflow.
  auto tokens_over = [&] {
    return shortest->tokens
               ? std::to_string(shortest->tokens) + " prompt tokens + " +
                     std::to_string(o.max_tokens) + " answer tokens > " + std::to_string(o.ctx)
               : std::string("longer than the reader's own context");
  };
  if (s.dropped_for_context)
    o.hooks.say("tune: note: " + std::to_string(s.dropped_for_context) + " of " +
                std::to_string(all.size()) + " candidates dropped: their prompts exceed the " +
                context_words(o) +
                " with the answer on a dev record (the shortest: " + label(all[shortest->cand]) +
                " on " + record_where(o, o.dev[shortest->record]) + ", " + tokens_over() + ")");
  if (cands.empty()) {
    // One record to blame when every candidate failed on it and, under the shortest, every
    // other dev record fits.
    for (size_t i = 0; one_record && i < o.dev.size(); ++i)
      if (i != shortest->record) one_record = fits_context(r, o, o.dev[i], all[shortest->cand]);
    if (one_record && o.dev.size() > 1)
      throw UsageError("tune", record_where(o, o.dev[shortest->record]) +
                                   " fits under no candidate of the space, every other dev "
                                   "record does (its shortest prompt, under " +
                                   label(all[shortest->cand]) + ": " + tokens_over() +
                                   "): shorten its documents, leave it out, or give a larger "
                                   "--ctx");
    throw UsageError("tune", "no candidate of the space fits the " + context_words(o) +
                                 " on every dev record (the shortest prompt over it: " +
                                 label(all[shortest->cand]) + " on " +
                                 record_where(o, o.dev[shortest->record]) + ", " + tokens_over() +
                                 "); use smaller k values, shorter formats or a larger --ctx");
  }
  cands = without_aliases(o, cands, s.aliases);
  if (control_arm && original) {
    auto at = std::find(cands.begin(), cands.end(), *original);
    if (at != cands.end())
      s.control = size_t(at - cands.begin());
    else
      for (const auto& [p, of] : s.aliases)
        if (p == *original) s.control = of;  // measured as an earlier, identical candidate
  }
  if (s.control_added)
    o.hooks.say("tune: note: the original presentation " + label(*original) +
                " is not in the space: it joins the search as the control arm");
  else if (!original && control_arm)
    o.hooks.say("tune: note: the original presentation fits the " + context_words(o) +
                " under no k of the space: the search has no control arm");
  if (!s.aliases.empty())
    o.hooks.say("tune: note: " + std::to_string(s.aliases.size()) +
                " candidates render the same prompts as another one: measured once");

  SearchParams sp = o.search;
  sp.abs_only = o.objective == Objective::Abs;
  sp.abs_filter = sp.abs_filter && attention && !sp.abs_only;
  // A server without attention (any but ragform serve) still answers: accuracy and robustness
  // need only generation, so the search goes on without its cheap first filter.
  if (o.search.abs_filter && !attention && !sp.abs_only) {
    s.abs_skipped = true;
    o.hooks.say("tune: note: the ABS filter is skipped: " + r.describe() +
                " gives no attention (the native reader and ragform serve do)");
  }
  sp.robustness = o.task != Task::Kv && !sp.abs_only;
  sp.control = s.control.has_value();
  s.plan = plan_search(cands.size(), o.dev.size(), o.budget, sp);

  store::RunConfig rc;
  rc.pipeline = "tune";
  rc.config = {{"task", task_name(o.task)},
               {"records", records_sha(o.dev)},
               {"template_sha256", store::sha256_hex(o.tmpl)},
               {"max_tokens", o.max_tokens},
               {"space", space_to_json(o.space)},
               {"kinds", robustness_kinds()},
               {"abs", cnorm::AbsOptions{}.to_json()}};
  rc.seed = int64_t(o.seed);
  // The stored rows are not a share of this plan: they include an earlier, larger budget's rows
  // and answers shared by identical prompts, so the note states both counts side by side.
  RunHooks quiet = o.hooks;
  quiet.note = nullptr;
  common::Resumed res = common::begin_or_resume(st, rc, o.origin, quiet, "tune", 0, "rows");
  if (!res.done.empty())
    o.hooks.say("tune: resuming run " + std::to_string(res.run) + ": " +
                std::to_string(res.done.size()) +
                " rows already stored by earlier invocations (any budget); this budget's plan "
                "charges at most " +
                std::to_string(s.plan.total) + " prompts, stored answers included");
  s.run = res.run;
  Ledger led(st, res.run);
  Runner run(r, o);

  for (const Presentation& p : cands) s.candidates.push_back({p, {}, std::nullopt, "", false});
  if (s.control) s.candidates[*s.control].control = true;
  std::vector<Score> sc(cands.size());
  std::vector<size_t> alive(cands.size());
  std::iota(alive.begin(), alive.end(), 0);
  auto stop = [&](const std::string& phase, size_t elsewhere) {
    s.complete = false;
    s.pending = phase + ": this shard's share is stored; " + std::to_string(elsewhere) +
                " measurements belong to other shards: merge the shards' stores (ragform merge) "
                "and rerun to continue";
    s.new_prompts = run.new_prompts;
    return s;
  };

  // ABS: the filter, or the whole search for objective abs.
  if (s.plan.abs_cost) {
    std::vector<std::pair<std::string, std::string>> cells;
    std::vector<std::pair<size_t, size_t>> what;
    for (size_t c : alive)
      for (size_t i = 0; i < s.plan.abs_prompts; ++i) {
        cells.push_back({o.dev[i].id, abs_variant(label(cands[c]))});
        what.emplace_back(c, i);
      }
    PhaseState ps = run_phase(
        o, run, led, "tune abs", cells,
        [&](size_t j) {
          return render(o.dev[what[j].second], cands[what[j].first], o.task, o.tmpl).prompt;
        },
        [&](size_t j) {
          run.measure_abs(led, o.dev[what[j].second], cands[what[j].first], cells[j].second);
        });
    if (ps.missing_elsewhere) return stop("abs", ps.missing_elsewhere);
    for (size_t c : alive) {
      std::vector<double> v;
      for (size_t i = 0; i < s.plan.abs_prompts; ++i)
        v.push_back(led.find(o.dev[i].id, abs_variant(label(cands[c])))->scores.at("abs"));
      sc[c].abs = cnorm::abs_mean_std(v).first;
    }
    s.spent += s.plan.abs_cost;
    if (sp.abs_only) {
      s.winner = pick(sc, Objective::Abs, 0);
      s.finalists = {s.winner};
    } else {
      std::vector<size_t> order =
          keep_best(alive, s.control, s.plan.abs_keep,
                    [&](size_t a, size_t b) { return *sc[a].abs > *sc[b].abs; });
      for (size_t c : alive)
        if (!std::binary_search(order.begin(), order.end(), c)) s.candidates[c].dropped_at = "abs";
      alive = order;
    }
  }

  // Successive halving on accuracy.
  for (size_t ri = 0; ri < s.plan.rungs.size(); ++ri) {
    const Rung& rung = s.plan.rungs[ri];
    std::vector<std::pair<std::string, std::string>> cells;
    std::vector<std::pair<size_t, size_t>> what;
    for (size_t c : alive)
      for (size_t i = 0; i < rung.items; ++i) {
        cells.push_back({o.dev[i].id, acc_variant(label(cands[c]))});
        what.emplace_back(c, i);
      }
    const std::string stage = "tune rung " + std::to_string(ri);
    PhaseState ps = run_phase(
        o, run, led, stage, cells,
        [&](size_t j) {
          return render(o.dev[what[j].second], cands[what[j].first], o.task, o.tmpl).prompt;
        },
        [&](size_t j) {
          run.answer(led, o.dev[what[j].second], o.dev[what[j].second].id, cands[what[j].first],
                     cells[j].second);
        });
    if (ps.missing_elsewhere) return stop("rung " + std::to_string(ri), ps.missing_elsewhere);
    for (size_t c : alive) {
      std::optional<double> abs = sc[c].abs;
      sc[c] = accuracy_of(led, o.dev, rung.items, label(cands[c]));
      sc[c].abs = abs;
    }
    s.spent += rung.cost;
    if (ri == 0)
      for (size_t c : alive) s.candidates[c].first_rung_accuracy = sc[c].accuracy();
    std::vector<size_t> keep = best_by_accuracy(alive, sc, s.control, rung.keep);
    for (size_t c : alive)
      if (!std::binary_search(keep.begin(), keep.end(), c))
        s.candidates[c].dropped_at = "rung " + std::to_string(ri);
    alive = keep;
  }

  // Robustness on the finalists, then the objective.
  if (!sp.abs_only) {
    s.finalists = alive;
    if (sp.robustness) {
      const size_t items = s.plan.robust_items;
      auto kinds_of = pair_kinds(o, o.dev, items);
      PhaseState ps =
          run_robustness(run, led, o.dev, items, cands, alive, kinds_of, "tune robustness");
      if (ps.missing_elsewhere) return stop("robustness", ps.missing_elsewhere);
      for (size_t c : alive) {
        auto [rr, pairs, shared] = robustness_of(led, o.dev, items, label(cands[c]), kinds_of);
        sc[c].robustness = rr;
        sc[c].pairs = pairs;
        s.spent += pairs - shared;
      }
    }
    std::vector<Score> fin;
    for (size_t c : alive) fin.push_back(sc[c]);
    s.winner = alive[pick(fin, o.objective, o.robust_floor)];
    for (size_t c : alive)
      if (c != s.winner) s.candidates[c].dropped_at = "final";
  }
  for (size_t c = 0; c < cands.size(); ++c) s.candidates[c].score = sc[c];
  const size_t grid_items = s.plan.rungs.empty() ? s.plan.abs_prompts : s.plan.rungs.back().items;
  size_t pairs_per_candidate = 0;
  if (sp.robustness)
    for (const auto& k : pair_kinds(o, o.dev, s.plan.robust_items)) pairs_per_candidate += k.size();
  s.grid = cands.size() * (grid_items + pairs_per_candidate);

  s.profile.presentation = cands[s.winner];
  s.profile.searched = searched_dimensions(o.space);
  s.profile.model = o.model;
  s.profile.model_sha256 = o.origin.model_sha256;
  s.profile.reader = r.describe();
  s.profile.task = o.task;
  s.profile.objective = objective_name(o.objective);
  s.profile.store = o.store_path;
  s.profile.run = s.run;
  s.complete = true;

  const Presentation& winner = cands[s.winner];
  // The side the winner is compared with on the held-out split: the control arm (the winner's k
  // when the original fits under no k of the space).
  Presentation compared = original.value_or(original_presentation());
  if (!original) {
    compared.format_seed = o.space.format_seed;
    compared.k = winner.k;
  }
  if (!o.holdout.empty()) {
    PhaseState ps = run_holdout(run, st, o, s, compared, winner);
    if (ps.missing_elsewhere) return stop("holdout", ps.missing_elsewhere);
  }
  // What the profile deploys (deploy.h): the winner when the held-out split confirms it.
  const Holdout* h = s.holdout && s.holdout->items ? &*s.holdout : nullptr;
  s.deployment = decide_deployment(o.deploy, winner == compared, label(winner), h);
  s.profile.presentation = s.deployment.tuned ? winner : compared;
  s.profile.deployed = s.deployment.name();
  s.profile.why = s.deployment.why;
  s.profile.winner = label(winner);
  if (!sp.abs_only && s.plan.final_items() < kMinFinalRecords)
    o.hooks.say("tune: warning: the winner was chosen on " + std::to_string(s.plan.final_items()) +
                " dev records per finalist, too few to tell candidates apart (one answer is " +
                std::to_string(100 / std::max<size_t>(1, s.plan.final_items())) +
                " points): give a larger --budget, more dev records or a smaller space");
  s.new_prompts = run.new_prompts;
  st.set_run_meta(s.run, "tune_summary", summary_json(s, o));
  return s;
}

}  // namespace ragform::tune

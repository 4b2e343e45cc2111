// `ragform tune`: the held-out comparison of the winner with the original presentation
// (run_cells.h).
#include <algorithm>
#include <numeric>

#include "eval/stats.h"
#include "store/sha256.h"
#include "tune/run_cells.h"

namespace ragform::tune::detail {

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
               {"kinds", robustness_kinds()},
               {"stop", "after the first non-empty line"}};
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

}  // namespace ragform::tune::detail

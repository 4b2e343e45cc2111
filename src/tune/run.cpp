#include "tune/run.h"

#include <algorithm>
#include <numeric>

#include "base/error.h"
#include "pipelines/cnorm/cnorm.h"
#include "store/sha256.h"
#include "tune/run_cells.h"

namespace ragform::tune {

using namespace detail;

namespace {

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

// Whether a cut of `alive` by accuracy has anything to go on: two of the candidates it ranks (the
// control aside, which it keeps whatever its rank) differ in accuracy.
bool has_signal(const std::vector<size_t>& alive, const std::vector<Score>& sc,
                std::optional<size_t> control) {
  std::optional<double> first;
  for (size_t c : alive) {
    if (control && c == *control) continue;
    if (!first)
      first = sc[c].accuracy();
    else if (sc[c].accuracy() != *first)
      return true;
  }
  return false;
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
  if (o.holdout_repeats)
    o.hooks.say("tune: note: " + std::to_string(o.holdout_repeats) +
                " held-out records repeating an earlier held-out record (same question, answers "
                "and documents) were dropped (" +
                std::to_string(o.holdout.size()) +
                " left): copies would count as independent pairs in the held-out interval");
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
  std::vector<Presentation> cands = fitting_candidates(r, o, all, s);
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
               {"abs", cnorm::AbsOptions{}.to_json()},
               {"stop", "after the first non-empty line"}};
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

  // Successive halving on accuracy. `done`: the dev records every alive candidate has answered
  // (the last rung's, grown or not), so a rung after a grown one starts from them.
  size_t done = 0;
  for (size_t ri = 0; ri < s.plan.rungs.size(); ++ri) {
    const Rung& rung = s.plan.rungs[ri];
    const std::string where = "rung " + std::to_string(ri);
    // Answers every alive candidate on the first `items` dev records and scores it there.
    auto answer_rung = [&](size_t items, const std::string& stage) {
      std::vector<std::pair<std::string, std::string>> cells;
      std::vector<std::pair<size_t, size_t>> what;
      for (size_t c : alive)
        for (size_t i = 0; i < items; ++i) {
          cells.push_back({o.dev[i].id, acc_variant(label(cands[c]))});
          what.emplace_back(c, i);
        }
      PhaseState ps = run_phase(
          o, run, led, stage, cells,
          [&](size_t j) {
            return render(o.dev[what[j].second], cands[what[j].first], o.task, o.tmpl).prompt;
          },
          [&](size_t j) {
            run.answer(led, o.dev[what[j].second], o.dev[what[j].second].id, cands[what[j].first],
                       cells[j].second);
          });
      if (ps.missing_elsewhere) return ps;
      for (size_t c : alive) {
        std::optional<double> abs = sc[c].abs;
        sc[c] = accuracy_of(led, o.dev, items, label(cands[c]));
        sc[c].abs = abs;
      }
      return ps;
    };
    size_t items = std::max(rung.items, done);
    PhaseState ps = answer_rung(items, "tune " + where);
    if (ps.missing_elsewhere) return stop(where, ps.missing_elsewhere);
    s.spent += alive.size() * (items - done);
    // A cut among candidates that all scored the same would fall to the tie-breaker: grow the
    // rung's sample first (search.h kMaxRungGrowth).
    const size_t cap = std::min(rung.items * kMaxRungGrowth, s.plan.rungs.back().items);
    if (rung.keep < alive.size() && items < cap && !has_signal(alive, sc, s.control)) {
      TuneSummary::Growth g{ri, items, items, 0, false};
      while (g.to < cap && !g.signal) {
        const size_t to = std::min(cap, g.to * 2);
        size_t right = 0;  // what each ranked candidate answered right (all the same)
        for (size_t c : alive)
          if (!(s.control && c == *s.control)) right = sc[c].correct;
        o.hooks.say("tune: note: " + where + ": every candidate it ranks answered " +
                    std::to_string(right) + " of its " + std::to_string(g.to) +
                    " dev records right (no signal to cut on): growing it to " +
                    std::to_string(to) + " records before the cut (" +
                    std::to_string(alive.size() * (to - g.to)) + " prompts beyond the plan)");
        ps = answer_rung(to, "tune " + where + " grown");
        if (ps.missing_elsewhere) return stop(where + " grown", ps.missing_elsewhere);
        g.prompts += alive.size() * (to - g.to);
        g.to = to;
        g.signal = has_signal(alive, sc, s.control);
      }
      if (!g.signal)
        o.hooks.say("tune: note: " + where + ": still no signal on " + std::to_string(g.to) +
                    " dev records (the most it grows to): the cut falls to the tie-breaker "
                    "(fewer prompt tokens, then the earlier candidate)");
      s.spent += g.prompts;
      items = g.to;
      s.grown.push_back(g);
    }
    done = items;
    if (ri == 0)
      for (size_t c : alive) s.candidates[c].first_rung_accuracy = sc[c].accuracy();
    std::vector<size_t> keep = best_by_accuracy(alive, sc, s.control, rung.keep);
    for (size_t c : alive)
      if (!std::binary_search(keep.begin(), keep.end(), c)) s.candidates[c].dropped_at = where;
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

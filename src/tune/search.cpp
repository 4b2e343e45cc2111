#include "tune/search.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/error.h"
#include "base/options.h"

namespace ragform::tune {

namespace {

size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

// The candidates the ABS filter keeps of `others` (the control aside): at least one.
size_t abs_kept(size_t others, double share) {
  return others ? std::max<size_t>(1, size_t(std::ceil(double(others) * share))) : 0;
}

}  // namespace

nlohmann::ordered_json Plan::to_json() const {
  nlohmann::ordered_json rs = nlohmann::json::array();
  for (const Rung& r : rungs)
    rs.push_back(
        {{"candidates", r.candidates}, {"items", r.items}, {"keep", r.keep}, {"cost", r.cost}});
  return {{"candidates", candidates},
          {"abs_prompts", abs_prompts},
          {"abs_cost", abs_cost},
          {"abs_keep", abs_keep},
          {"rungs", rs},
          {"robust_items", robust_items},
          {"robust_cost", robust_cost},
          {"first_items", first_items},
          {"total", total},
          {"truncated", truncated},
          {"control", control},
          {"abs_keep_share", abs_keep_share},
          {"finalists", finalists},
          {"narrowed", narrowed},
          {"final_items", final_items()}};
}

size_t Plan::final_items() const {
  if (!rungs.empty()) return rungs.back().items;
  return abs_prompts;
}

Plan plan_with(size_t n, size_t n_dev, size_t first_items, const SearchParams& p) {
  if (n == 0) throw UsageError("tune", "the space has no candidate");
  if (n_dev == 0) throw UsageError("tune", "the dev split has no record");
  Plan pl;
  pl.candidates = n;
  pl.abs_keep_share = p.abs_keep;
  pl.finalists = p.finalists;
  // The control arm is one of the n candidates; every cut keeps it beside the best others.
  const size_t ctl = p.control && !p.abs_only ? 1 : 0;
  pl.control = ctl;
  size_t c = n;
  if (p.abs_filter || p.abs_only) {
    pl.abs_prompts = std::min(p.abs_prompts, n_dev);
    pl.abs_cost = n * pl.abs_prompts;
    pl.abs_keep = p.abs_only ? 1 : ctl + abs_kept(n - ctl, p.abs_keep);
    c = pl.abs_keep;
  }
  pl.total = pl.abs_cost;
  if (p.abs_only) return pl;
  pl.first_items = std::min(first_items, n_dev);
  const size_t eta = std::max<size_t>(2, p.eta);
  size_t items = pl.first_items, done = 0;
  for (;;) {
    Rung r;
    r.candidates = c;
    r.items = items;
    r.cost = c * (items - done);
    // Not last: at least two others, so a cut shrinks c.
    const bool last = c - ctl <= std::max<size_t>(1, p.finalists);
    r.keep = last ? c : ctl + ceil_div(c - ctl, eta);
    pl.rungs.push_back(r);
    pl.total += r.cost;
    if (last) break;
    done = items;
    c = r.keep;
    items = std::min(n_dev, items * eta);
  }
  if (p.robustness) {
    pl.robust_items = std::min(p.robust_items, pl.rungs.back().items);
    pl.robust_cost = pl.rungs.back().candidates * pl.robust_items * p.robust_kinds;
    pl.total += pl.robust_cost;
  }
  return pl;
}

size_t minimum_budget(size_t n, size_t n_dev, const SearchParams& p) {
  const Plan pl = plan_with(n, n_dev, 1, p);
  return pl.abs_cost + (pl.rungs.empty() ? 0 : pl.rungs[0].cost);
}

namespace {

// The plan with i_0 = 1 cut to the budget: the rungs that fit, the last of them final, then as
// many robustness records as the rest pays for.
Plan truncate_plan(Plan pl, size_t budget, const SearchParams& p) {
  pl.truncated = true;
  size_t total = pl.abs_cost, kept = 0;
  while (kept < pl.rungs.size() && total + pl.rungs[kept].cost <= budget)
    total += pl.rungs[kept++].cost;
  pl.rungs.resize(kept);
  pl.rungs.back().keep = pl.rungs.back().candidates;
  pl.robust_items = pl.robust_cost = 0;
  if (p.robustness && p.robust_kinds) {
    const size_t per_item = pl.rungs.back().candidates * p.robust_kinds;
    pl.robust_items =
        std::min({p.robust_items, pl.rungs.back().items, (budget - total) / per_item});
    pl.robust_cost = pl.robust_items * per_item;
  }
  pl.total = total + pl.robust_cost;
  return pl;
}

// The plan for these settings exactly (no narrowing).
Plan plan_fixed(size_t n, size_t n_dev, size_t budget, const SearchParams& p) {
  const size_t minimum = minimum_budget(n, n_dev, p);
  if (budget < minimum)
    throw OptionError("budget", std::to_string(budget) +
                                    " prompts cannot run the first rung of the search "
                                    "over " +
                                    std::to_string(n) + " candidates (" +
                                    (p.abs_filter || p.abs_only ? "the ABS pass and " : "") +
                                    "one dev record per candidate); the minimum is --budget " +
                                    std::to_string(minimum));
  Plan best = plan_with(n, n_dev, 1, p);
  if (best.total > budget) return truncate_plan(best, budget, p);
  for (size_t i = 2; i <= n_dev && !p.abs_only; ++i) {
    Plan pl = plan_with(n, n_dev, i, p);
    if (pl.total > budget) break;
    best = pl;
  }
  return best;
}

}  // namespace

Plan plan_search(size_t n, size_t n_dev, size_t budget, const SearchParams& p) {
  const bool abs_narrows = p.narrow_abs_keep && p.abs_filter && !p.abs_only;
  const bool fin_narrows = p.narrow_finalists && !p.abs_only && p.finalists > 2;
  if (!abs_narrows && !fin_narrows) return plan_fixed(n, n_dev, budget, p);
  // The settings to try, least narrowing first: abs_keep halved step by step (while that keeps
  // fewer candidates), and at each step the given finalists, then two.
  std::vector<SearchParams> tries;
  const size_t ctl = p.control ? 1 : 0;
  for (double keep = p.abs_keep;; keep /= 2) {
    SearchParams q = p;
    q.abs_keep = keep;
    tries.push_back(q);
    if (fin_narrows) {
      q.finalists = 2;
      tries.push_back(q);
    }
    if (!abs_narrows || n <= ctl || abs_kept(n - ctl, keep / 2) == abs_kept(n - ctl, keep)) break;
  }
  const size_t want_final = std::min(kMinFinalRecords, n_dev);
  const size_t want_first = std::min(kMinFirstRecords, n_dev);
  std::optional<Plan> best;
  std::optional<UsageError> error;  // the last: the most narrowed setting has the lowest minimum
  for (const SearchParams& q : tries) {
    Plan pl;
    try {
      pl = plan_fixed(n, n_dev, budget, q);
    } catch (const UsageError& e) {  // a budget below this setting's first rung
      error = e;
      continue;
    }
    pl.narrowed = q.abs_keep != p.abs_keep || q.finalists != p.finalists;
    if (pl.final_items() >= want_final && pl.first_items >= want_first) return pl;
    if (!best || pl.final_items() > best->final_items() ||
        (pl.final_items() == best->final_items() && pl.first_items > best->first_items))
      best = pl;
  }
  if (!best) throw *error;
  return *best;
}

}  // namespace ragform::tune

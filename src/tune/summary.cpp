// The search's summary as `ragform tune --json` and its text print it (and as the run stores it,
// run meta "tune_summary"): one rendering for the CLI, Python and the report's card.
#include "tune/run.h"

#include <cstdio>
#include <string>

#include "base/number_text.h"

namespace ragform::tune {

namespace {

std::string number(double v) { return significant(v, 4); }
}  // namespace

std::string spending_text(const TuneSummary& s, size_t dev_records) {
  const Plan& pl = s.plan;
  std::string t =
      "spent " + std::to_string(s.spent) + " of --budget " + std::to_string(s.budget) + " prompts";
  size_t beyond = 0;  // grown rungs (search.h kMaxRungGrowth): prompts the plan did not hold
  for (const auto& g : s.grown) beyond += g.prompts;
  if (beyond)
    t += " (" + std::to_string(beyond) +
         " for dev records that rungs with no signal added, beyond the plan)";
  // Whether the search cut candidates (the ABS filter, a halving rung) rather than measure all.
  bool cut = pl.abs_cost && !pl.rungs.empty() && pl.abs_keep < pl.candidates;
  for (const Rung& r : pl.rungs) cut = cut || r.keep < r.candidates;
  const bool covered = s.grid <= s.budget;
  if (!covered)
    t += "; a full grid over the same dev records would cost " + std::to_string(s.grid);
  else if (cut)  // the budget would pay for every candidate on every record: say why not
    t += "; the budget covers a full grid over the same dev records (" + std::to_string(s.grid) +
         " prompts), but the search cuts candidates (" +
         std::string(pl.abs_cost ? "the ABS filter, " : "") +
         "halving to --finalists) instead of measuring them all";
  else
    t += ": the full grid over the same dev records (" + std::to_string(s.grid) + " prompts" +
         (s.spent < s.grid ? ", less the answers that identical prompts share" : "") + ")";
  // A plan whose first rung already covers every dev record cannot grow with the budget.
  const bool largest = !pl.truncated && (pl.rungs.empty() || pl.first_items >= dev_records);
  if (largest && s.spent < s.budget) {
    t += "; the other " + std::to_string(s.budget - s.spent) + " are not needed";
    if (!covered || cut)
      t += ": every rung already answers all " + std::to_string(dev_records) + " dev records";
  }
  return t;
}

nlohmann::ordered_json summary_json(const TuneSummary& s, const TuneOptions& o) {
  nlohmann::ordered_json j;
  j["task"] = task_name(o.task);
  j["objective"] = objective_name(o.objective);
  if (o.objective == Objective::Balanced) j["robust_floor"] = o.robust_floor;
  j["complete"] = s.complete;
  if (!s.complete) j["pending"] = s.pending;
  if (s.complete) {
    j["profile"] = profile_to_json(s.profile);
    j["winner"] = label(s.candidates[s.winner].presentation);
    // What the profile deploys and why (deploy.h), and on how many dev records the winner was
    // chosen.
    j["deployed"] = s.deployment.name();
    j["why"] = s.deployment.why;
    j["deploy"] = deploy_rule_name(o.deploy);
    j["final_n"] = s.plan.final_items();
  }
  j["control"] = s.control ? nlohmann::json(label(s.candidates[*s.control].presentation))
                           : nlohmann::json(nullptr);
  j["budget"] = s.budget;
  j["spent"] = s.spent;
  j["grid"] = s.grid;
  j["candidates"] = s.candidates.size();
  j["aliases"] = nlohmann::json::array();
  for (const auto& [p, of] : s.aliases)
    j["aliases"].push_back(
        nlohmann::ordered_json{{"label", label(p)}, {"of", label(s.candidates[of].presentation)}});
  j["dropped_for_context"] = s.dropped_for_context;
  j["context"] = {{"tokens", o.ctx ? nlohmann::json(o.ctx) : nlohmann::json(nullptr)},
                  {"from", o.ctx_source}};
  j["abs_filter"] = s.plan.abs_cost ? "on" : s.abs_skipped ? "skipped: no attention" : "off";
  j["plan"] = s.plan.to_json();
  j["grown"] = nlohmann::json::array();
  for (const auto& g : s.grown)
    j["grown"].push_back(nlohmann::ordered_json{{"rung", g.rung},
                                                {"from", g.from},
                                                {"to", g.to},
                                                {"prompts", g.prompts},
                                                {"signal", g.signal}});
  j["finalists"] = nlohmann::json::array();
  for (size_t c : s.finalists) j["finalists"].push_back(label(s.candidates[c].presentation));
  nlohmann::ordered_json traj = nlohmann::json::array();
  for (const CandidateResult& c : s.candidates) {
    nlohmann::ordered_json t;
    t["label"] = label(c.presentation);
    t["presentation"] = to_json(c.presentation);
    t["dropped_at"] = c.dropped_at;
    t["control"] = c.control;
    t["accuracy"] = c.score.accuracy();
    t["n"] = c.score.n;
    t["tokens"] = c.score.tokens;
    t["robustness"] = c.score.robustness ? nlohmann::json(*c.score.robustness) : nullptr;
    t["abs"] = c.score.abs ? nlohmann::json(*c.score.abs) : nullptr;
    traj.push_back(t);
  }
  j["trajectory"] = traj;
  // Main effects: the mean first-rung accuracy of the candidates holding each value.
  nlohmann::ordered_json effects = nlohmann::json::object();
  if (!s.plan.rungs.empty())
    for (const std::string& dim : searched_dimensions(o.space)) {
      std::map<std::string, std::pair<double, size_t>> by;
      std::vector<std::string> seen;
      // An alias holds its own values with the accuracy of the candidate it was measured as.
      auto count = [&](const Presentation& p, const std::optional<double>& acc) {
        if (!acc) return;
        nlohmann::json v = to_json(p)[dim == "delimiter" ? "delimiter" : dim];
        std::string key = v.is_string() ? v.get<std::string>() : v.dump();
        if (dim == "spotlight") key = spotlight_value_name({p.spotlight, p.spotlight_tokens});
        if (!by.count(key)) seen.push_back(key);
        by[key].first += *acc;
        by[key].second += 1;
      };
      // The control added to a space that lacked it is not a value of the space.
      for (size_t c = 0; c < s.candidates.size(); ++c)
        if (!(s.control_added && s.control == c))
          count(s.candidates[c].presentation, s.candidates[c].first_rung_accuracy);
      for (const auto& [p, of] : s.aliases) count(p, s.candidates[of].first_rung_accuracy);
      nlohmann::ordered_json e = nlohmann::json::object();
      for (const auto& k : seen) e[k] = by[k].first / double(by[k].second);
      effects[dim] = e;
    }
  j["main_effects"] = effects;
  if (s.holdout) {
    const Holdout& h = *s.holdout;
    auto side = [](const Side& x) {
      return nlohmann::ordered_json{
          {"label", x.label},
          {"accuracy", x.accuracy},
          {"robustness", x.robustness ? nlohmann::json(*x.robustness) : nullptr},
          {"tokens", x.tokens}};
    };
    j["holdout"] = {{"items", h.items},        {"unmeasured", h.unmeasured},
                    {"prompts", h.prompts},    {"original", side(h.original)},
                    {"tuned", side(h.tuned)},  {"diff_ci95", {h.diff_lo, h.diff_hi}},
                    {"mcnemar_p", h.mcnemar_p}};
  } else {
    j["holdout"] = nullptr;
  }
  j["store"] = o.store_path;
  j["run"] = s.run;
  j["holdout_run"] = s.holdout_run;
  return j;
}

std::string summary_text(const TuneSummary& s, const TuneOptions& o) {
  std::string t;
  t += "tune: " + std::string(task_name(o.task)) + ", objective " + objective_name(o.objective);
  if (o.objective == Objective::Balanced) t += " (robustness floor " + number(o.robust_floor) + ")";
  t += "\n";
  t += "  space: " + std::to_string(s.candidates.size()) + " candidates";
  if (!s.aliases.empty())
    t += " (and " + std::to_string(s.aliases.size()) +
         " aliases: the same prompts as another candidate, measured once)";
  if (s.dropped_for_context)
    t += " (" + std::to_string(s.dropped_for_context) + " more dropped: over the context)";
  t += "\n  context cap: " +
       (o.ctx ? std::to_string(o.ctx) + " tokens of prompt and answer" : std::string("none")) +
       (o.ctx_source.empty() ? "" : " (" + o.ctx_source + ")");
  t += "\n  " + spending_text(s, o.dev.size()) + "\n";
  if (s.abs_skipped) t += "  abs: filter skipped: the reader gives no attention\n";
  if (s.control)
    t += "  control: " + label(s.candidates[*s.control].presentation) +
         (s.control_added ? " (the original presentation, not in the space)" : "") +
         ", measured on every rung\n";
  if (s.plan.narrowed)
    t += "  narrowed (the winner would otherwise rest on fewer than " +
         std::to_string(kMinFinalRecords) + " dev records per finalist): the ABS filter keeps " +
         number(s.plan.abs_keep_share) + " of the candidates, " + std::to_string(s.plan.finalists) +
         " finalists\n";
  if (s.plan.abs_cost)
    t += "  abs: " + std::to_string(s.plan.candidates) + " candidates x " +
         std::to_string(s.plan.abs_prompts) + " prompts, kept " + std::to_string(s.plan.abs_keep) +
         "\n";
  for (size_t i = 0; i < s.plan.rungs.size(); ++i) {
    const Rung& r = s.plan.rungs[i];
    t += "  rung " + std::to_string(i) + ": " + std::to_string(r.candidates) + " candidates x " +
         std::to_string(r.items) + " dev records";
    for (const auto& g : s.grown)
      if (g.rung == i)
        t += " (no signal: grown to " + std::to_string(g.to) + ", " + std::to_string(g.prompts) +
             " prompts beyond the plan" +
             (g.signal ? "" : ", still no signal: the cut fell to the tie-breaker") + ")";
    t += ", kept " + std::to_string(r.keep) + "\n";
  }
  if (s.plan.truncated)
    t += "  the budget cut the search short: the last rung's candidates are the finalists, with "
         "robustness on " +
         std::to_string(s.plan.robust_items) + " records\n";
  if (!s.complete) return t + "  " + s.pending + "\n";
  t += "  finalists, on " + std::to_string(s.plan.final_items()) + " dev records each" +
       (s.plan.final_items() < kMinFinalRecords ? " (too few to tell them apart)" : "") + ":\n";
  for (size_t c : s.finalists) {
    const CandidateResult& cr = s.candidates[c];
    t += std::string(c == s.winner ? "  * " : "    ") + label(cr.presentation) +
         (cr.control ? " [control]" : "") + ": accuracy " + number(cr.score.accuracy()) + " (" +
         std::to_string(cr.score.n) + "), robustness " +
         (cr.score.robustness ? number(*cr.score.robustness) : std::string("-")) + ", tokens " +
         number(cr.score.tokens) + (cr.score.abs ? ", abs " + number(*cr.score.abs) : "") + "\n";
  }
  t += "  winner: " + label(s.candidates[s.winner].presentation) + "\n";
  if (s.holdout) {
    const Holdout& h = *s.holdout;
    auto side = [](const Side& x) {
      return "accuracy " + number(x.accuracy) + ", robustness " +
             (x.robustness ? number(*x.robustness) : std::string("-")) + ", tokens " +
             number(x.tokens);
    };
    t += "  held out (" + std::to_string(h.items) + " records, " + std::to_string(h.prompts) +
         " prompts, not counted in the budget" +
         (h.unmeasured ? "; " + std::to_string(h.unmeasured) + " unmeasured records left out"
                       : std::string()) +
         "):\n";
    t += "    original " + h.original.label + ": " + side(h.original) + "\n";
    t += "    tuned    " + h.tuned.label + ": " + side(h.tuned) + "\n";
    t += "    accuracy difference 95% CI [" + number(h.diff_lo) + ", " + number(h.diff_hi) +
         "], McNemar p " + number(h.mcnemar_p) + "\n";
  }
  t += "  deployed (--deploy " + std::string(deploy_rule_name(o.deploy)) +
       "): " + s.deployment.name() + " " + label(s.profile.presentation) + ": " + s.deployment.why +
       "\n";
  return t;
}

}  // namespace ragform::tune

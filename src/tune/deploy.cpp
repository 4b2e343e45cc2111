#include "tune/deploy.h"

#include <cstdio>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/number_text.h"
#include "base/options.h"
#include "base/plural.h"
#include "tune/run.h"

namespace ragform::tune {

namespace {

std::string num(double v) { return significant(v, 3); }

// "held-out accuracy 0.41 (tuned) against 0.31 (original) on 200 records, 95% CI of the
// difference [0.03, 0.17], McNemar p 0.004"
std::string evidence(const Holdout& h) {
  return "held-out accuracy " + num(h.tuned.accuracy) + " (tuned) against " +
         num(h.original.accuracy) + " (original) on " +
         count_of(static_cast<long long>(h.items), "record") + ", 95% CI of the difference [" +
         num(h.diff_lo) + ", " + num(h.diff_hi) + "], McNemar p " + num(h.mcnemar_p);
}

}  // namespace

DeployRule parse_deploy_rule(std::string_view s) {
  if (s == "confirmed") return DeployRule::Confirmed;
  if (s == "best") return DeployRule::Best;
  throw OptionError("deploy", "confirmed or best, got '" + excerpt(s) + "'");
}

const char* deploy_rule_name(DeployRule r) { return r == DeployRule::Best ? "best" : "confirmed"; }

Deployment decide_deployment(DeployRule rule, bool winner_is_original,
                             const std::string& winner_label, const Holdout* h) {
  Deployment d;
  if (winner_is_original) {
    d.why = "the search's winner is the original presentation" +
            (h ? " (" + evidence(*h) + ")" : std::string());
    return d;
  }
  const bool confirmed = h && h->items > 0 && h->diff_lo > 0;
  if (rule == DeployRule::Best) {
    d.tuned = true;
    if (!h || h->items == 0)
      d.why = "--deploy best: the winner " + winner_label +
              " is written without a held-out confirmation (no held-out record was measured)";
    else
      d.why = std::string(confirmed ? "the held-out split confirms the winner"
                                    : "--deploy best: the winner is written although the "
                                      "held-out split does not confirm it") +
              ": " + evidence(*h);
    return d;
  }
  if (!h || h->items == 0) {
    d.why = "no held-out record was measured, so the winner " + winner_label +
            " is not confirmed: the original presentation is written (--deploy best writes the "
            "winner)";
    return d;
  }
  if (confirmed) {
    d.tuned = true;
    d.why = "the held-out split confirms the winner: " + evidence(*h);
    return d;
  }
  d.why = "the held-out split does not confirm the winner " + winner_label + " (" + evidence(*h) +
          (h->diff_hi < 0 ? ": the original answers better" : ": the interval includes 0") +
          "), so the original presentation is written (--deploy best writes the winner)";
  return d;
}

}  // namespace ragform::tune

// Which presentation `ragform tune` deploys: the search's winner only when the held-out split
// confirms it, else the original presentation — so a search that found noise ships no change.
//
//   confirmed (the default)  the winner when the 95% bootstrap CI of the paired held-out accuracy
//                            difference (winner - original) lies above 0, else the original;
//                            without a held-out evaluation (no held-out records, or every one
//                            unmeasured) the winner cannot be confirmed: the original.
//   best                     the winner whatever the held-out split says (the reason states
//                            what it said).
// When the winner is the original presentation itself the deployment is "original" under both.
// The confirmation reads accuracy under every objective: a winner chosen for robustness or ABS
// is confirmed only if it also answers better (docs/tune.md).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace ragform::tune {

enum class DeployRule { Confirmed, Best };
DeployRule parse_deploy_rule(std::string_view s);  // OptionError("deploy", ...) otherwise
const char* deploy_rule_name(DeployRule r);

struct Holdout;

struct Deployment {
  bool tuned = false;  // the winner is deployed (else the original presentation)
  std::string why;     // one sentence, with the held-out numbers and CI when there are any
  const char* name() const { return tuned ? "tuned" : "original"; }
};

// winner_is_original: the search's winner renders the original presentation (the held-out
// comparison then has one side). `holdout`: the evaluation, when it ran and measured a record.
Deployment decide_deployment(DeployRule rule, bool winner_is_original,
                             const std::string& winner_label, const Holdout* holdout);

}  // namespace ragform::tune

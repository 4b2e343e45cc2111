#include "tune/judge.h"

#include <tuple>

#include "base/error.h"
#include "base/options.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/sure/sure.h"
#include "text/metrics.h"

namespace ragform::tune {

Objective parse_objective(std::string_view s) {
  if (s == "accuracy") return Objective::Accuracy;
  if (s == "robust") return Objective::Robust;
  if (s == "balanced") return Objective::Balanced;
  if (s == "abs") return Objective::Abs;
  throw OptionError("objective",
                    "unknown objective '" + std::string(s) + "' (accuracy, robust, balanced, abs)");
}

const char* objective_name(Objective o) {
  switch (o) {
    case Objective::Accuracy:
      return "accuracy";
    case Objective::Robust:
      return "robust";
    case Objective::Balanced:
      return "balanced";
    case Objective::Abs:
      return "abs";
  }
  return "accuracy";
}

reader::GenerateParams answer_params(int max_tokens) {
  reader::GenerateParams g;
  g.max_tokens = max_tokens;
  g.temperature = 0;
  g.stop_after_line = true;  // the first non-empty line (cnorm::run_sweep says why)
  return g;
}

bool grade(const std::string& generated, const std::vector<std::string>& answers) {
  return text::substring_match(cnorm::first_line(generated), answers) > 0.5;
}

const std::vector<std::string>& robustness_kinds() {
  static const std::vector<std::string> k = {"logic/reverse", "logic/random"};
  return k;
}

std::optional<eval::QaRecord> perturbed(const eval::QaRecord& record, Task t,
                                        const std::string& kind, uint64_t seed) {
  if (t == Task::Kv) return std::nullopt;
  const int g = gold_index(record, t);
  if (g < 0) return std::nullopt;
  std::optional<sure::Kind> k = sure::parse_kind(kind);
  if (!k) throw Error("tune", "unknown perturbation '" + kind + "'");
  const eval::Context& ctx = record.ctxs[size_t(g)];
  sure::RuleOptions opt;
  opt.seed = seed;
  sure::Perturbation pt =
      sure::apply_rule(*k, {ctx.title, ctx.text}, opt, record.id + "/" + std::to_string(g));
  if (pt.failed || !pt.note.empty() || pt.text == ctx.text) return std::nullopt;
  eval::QaRecord out = record;
  out.ctxs[size_t(g)].text = pt.text;
  // The sentences of a HotpotQA paragraph no longer index the perturbed text.
  out.ctxs[size_t(g)].sentences.clear();
  out.ctxs[size_t(g)].sentence_offsets.clear();
  return out;
}

size_t pick(const std::vector<Score>& scores, Objective o, double floor) {
  if (scores.empty()) throw Error("tune", "no candidate to pick from");
  // Lexicographic: the objective's own measure first, then every objective breaks its ties by
  // higher accuracy and then fewer tokens (judge.h, docs/tune.md); equal keys keep the earlier
  // candidate. Under `abs` the search measures ABS alone (accuracy and tokens are 0 for every
  // candidate), so its ties fall to the earlier candidate, as cnorm calibrate's argmax.
  using Key = std::tuple<double, double, double, double>;
  auto key = [&](const Score& s) -> Key {
    const double rob = s.robustness.value_or(-1), acc = s.accuracy(), cost = -s.tokens;
    switch (o) {
      case Objective::Accuracy:
        return {acc, cost, 0.0, 0.0};
      case Objective::Robust:
        return {rob, acc, cost, 0.0};
      case Objective::Balanced: {
        const bool ok = rob >= floor;
        return ok ? Key{1.0, acc, cost, 0.0} : Key{0.0, rob, acc, cost};
      }
      case Objective::Abs:
        return {s.abs.value_or(-1), acc, cost, 0.0};
    }
    return {0.0, 0.0, 0.0, 0.0};
  };
  size_t best = 0;
  for (size_t i = 1; i < scores.size(); ++i)
    if (key(scores[i]) > key(scores[best])) best = i;
  return best;
}

}  // namespace ragform::tune

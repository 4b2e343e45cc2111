#include "pipelines/sure/metrics.h"

#include "eval/stats.h"
#include "pipelines/sure/taxonomy.h"

namespace ragform::sure {

const char* to_string(Subset s) {
  switch (s) {
    case Subset::KG:
      return "K-G";
    case Subset::KN:
      return "K-N";
    case Subset::UG:
      return "U-G";
    case Subset::UN:
      return "U-N";
  }
  return "?";
}

Subset make_subset(bool known, bool golden) {
  return known ? (golden ? Subset::KG : Subset::KN) : (golden ? Subset::UG : Subset::UN);
}

Rates compute_rates(const std::vector<Outcome>& group, uint64_t seed, size_t resamples) {
  Rates r;
  r.n = static_cast<int64_t>(group.size());
  if (group.empty()) return r;
  std::vector<double> robust;
  for (const auto& o : group) {
    int c = o.label();
    r.lose += c == 1;
    r.robust += c == 0;
    r.win += c == -1;
    r.org_correct += o.y_org;
    r.pert_correct += o.y_pert;
    robust.push_back(c == 0 ? 1.0 : 0.0);
  }
  double n = static_cast<double>(r.n);
  r.lr = r.lose / n;  // eq. 3 and its WR / LR analogues
  r.rr = r.robust / n;
  r.wr = r.win / n;
  r.org = r.org_correct / n;
  r.acc = r.pert_correct / n;
  if (r.n >= 2) {
    auto ci = eval::bootstrap_mean_ci(robust, 0.95, resamples, seed);
    r.rr_ci_lo = ci.lo;
    r.rr_ci_hi = ci.hi;
  }
  r.mcnemar_p = eval::mcnemar(static_cast<uint64_t>(r.lose), static_cast<uint64_t>(r.win)).p_exact;
  return r;
}

nlohmann::ordered_json ReportRow::to_json() const {
  nlohmann::ordered_json j;
  j["scope"] = scope;
  j["key"] = key;
  j["subset"] = subset;
  j["n"] = rates.n;
  j["lose"] = rates.lose;
  j["robust"] = rates.robust;
  j["win"] = rates.win;
  j["LR"] = rates.lr;
  j["RR"] = rates.rr;
  j["WR"] = rates.wr;
  j["Org"] = rates.org;
  j["Acc"] = rates.acc;
  if (rates.rr_ci_lo) {
    j["RR_ci95"] = {*rates.rr_ci_lo, *rates.rr_ci_hi};
  } else {
    j["RR_ci95"] = nullptr;
  }
  j["mcnemar_p"] = rates.mcnemar_p;
  return j;
}

std::vector<ReportRow> robustness_report(const std::vector<Outcome>& outcomes, uint64_t seed,
                                         size_t resamples) {
  std::vector<ReportRow> rows;
  const Subset subsets[] = {Subset::KG, Subset::KN, Subset::UG, Subset::UN};
  auto add = [&](const std::string& scope, const std::string& key, auto&& pred) {
    std::vector<Outcome> all;
    for (const auto& o : outcomes)
      if (pred(o)) all.push_back(o);
    if (all.empty()) return;
    rows.push_back({scope, key, "all", compute_rates(all, seed, resamples)});
    for (Subset s : subsets) {
      std::vector<Outcome> g;
      for (const auto& o : all)
        if (o.subset == s) g.push_back(o);
      if (!g.empty()) rows.push_back({scope, key, to_string(s), compute_rates(g, seed, resamples)});
    }
  };
  add("overall", "", [](const Outcome&) { return true; });
  for (const auto& c : categories())
    add("category", c, [&](const Outcome& o) { return o.category == c; });
  for (const auto& k : all_kinds())
    add("perturbation", k.name, [&](const Outcome& o) { return o.perturbation == k.name; });
  return rows;
}

}  // namespace ragform::sure

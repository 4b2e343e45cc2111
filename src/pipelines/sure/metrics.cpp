#include "pipelines/sure/metrics.h"

#include <map>
#include <string>

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

namespace {

// The counts and rates of a group, without the bootstrap (which needs n >= 2 and resamples).
Rates count_rates(const std::vector<Outcome>& group) {
  Rates r;
  r.n = static_cast<int64_t>(group.size());
  if (group.empty()) return r;
  for (const auto& o : group) {
    int c = o.label();
    r.lose += c == 1;
    r.robust += c == 0;
    r.win += c == -1;
    r.org_correct += o.y_org;
    r.pert_correct += o.y_pert;
  }
  std::map<std::string, bool> originals;
  for (const auto& o : group) originals.emplace(o.pair_id, o.y_org);
  r.originals = static_cast<int64_t>(originals.size());
  for (const auto& [id, right] : originals) r.originals_correct += right;
  double n = static_cast<double>(r.n);
  r.lr = r.lose / n;  // eq. 3 and its WR / LR analogues
  r.rr = r.robust / n;
  r.wr = r.win / n;
  r.org = double(r.originals_correct) / double(r.originals);  // each original once
  r.acc = r.pert_correct / n;
  r.mcnemar_p = eval::mcnemar(static_cast<uint64_t>(r.lose), static_cast<uint64_t>(r.win)).p_exact;
  return r;
}

}  // namespace

Rates compute_rates(const std::vector<Outcome>& group, uint64_t seed, size_t resamples) {
  Rates r = count_rates(group);
  if (r.n >= 2) {
    std::vector<double> robust;
    for (const auto& o : group) robust.push_back(o.label() == 0 ? 1.0 : 0.0);
    auto ci = eval::bootstrap_mean_ci(robust, 0.95, resamples, seed);
    r.rr_ci_lo = ci.lo;
    r.rr_ci_hi = ci.hi;
  }
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
  j["originals"] = rates.originals;
  j["Acc"] = rates.acc;
  if (scope == "category") j["perturbations"] = perturbations;
  if (rates.rr_ci_lo) {
    j["RR_ci95"] = {*rates.rr_ci_lo, *rates.rr_ci_hi};
  } else {
    j["RR_ci95"] = nullptr;
  }
  j["mcnemar_p"] = rates.mcnemar_p;
  return j;
}

std::optional<ReportRow> category_robustness(const std::vector<Outcome>& outcomes,
                                             const std::string& category) {
  ReportRow row{"category", category, "golden", {}, 0};
  Rates& m = row.rates;
  std::map<std::string, bool> originals;  // over the category's perturbations, each once
  for (const auto& k : all_kinds()) {
    if (k.category != category) continue;
    std::vector<Outcome> g;
    for (const auto& o : outcomes)
      if (o.perturbation == k.name && (o.subset == Subset::KG || o.subset == Subset::UG))
        g.push_back(o);
    if (g.empty()) continue;
    for (const auto& o : g) originals.emplace(o.pair_id, o.y_org);
    Rates r = count_rates(g);
    ++row.perturbations;
    m.n += r.n;
    m.lose += r.lose;
    m.robust += r.robust;
    m.win += r.win;
    m.org_correct += r.org_correct;
    m.pert_correct += r.pert_correct;
    m.lr += r.lr;
    m.rr += r.rr;
    m.wr += r.wr;
    m.org += r.org;
    m.acc += r.acc;
  }
  if (row.perturbations == 0) return std::nullopt;
  m.originals = static_cast<int64_t>(originals.size());
  for (const auto& [id, right] : originals) m.originals_correct += right;
  double k = row.perturbations;
  m.lr /= k;
  m.rr /= k;
  m.wr /= k;
  m.org /= k;
  m.acc /= k;
  m.mcnemar_p = eval::mcnemar(static_cast<uint64_t>(m.lose), static_cast<uint64_t>(m.win)).p_exact;
  return row;
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
    rows.push_back({scope, key, "all", compute_rates(all, seed, resamples), 0});
    for (Subset s : subsets) {
      std::vector<Outcome> g;
      for (const auto& o : all)
        if (o.subset == s) g.push_back(o);
      if (!g.empty())
        rows.push_back({scope, key, to_string(s), compute_rates(g, seed, resamples), 0});
    }
  };
  add("overall", "", [](const Outcome&) { return true; });
  for (const auto& c : categories())
    if (auto row = category_robustness(outcomes, c)) rows.push_back(*row);
  for (const auto& c : categories())
    add("category_pooled", c, [&](const Outcome& o) { return o.category == c; });
  for (const auto& k : all_kinds())
    add("perturbation", k.name, [&](const Outcome& o) { return o.perturbation == k.name; });
  return rows;
}

}  // namespace ragform::sure

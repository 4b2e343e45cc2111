#include "pipelines/cnorm/analysis.h"
#include "pipelines/cnorm/detail/numeric.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>

#include "base/error.h"
#include "eval/stats.h"

namespace ragform::cnorm {

using detail::round9;

std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    double rank = (double(i) + double(j)) / 2 + 1;  // mean of ranks i+1 .. j+1
    for (size_t t = i; t <= j; ++t) r[order[t]] = rank;
    i = j + 1;
  }
  return r;
}

std::optional<double> spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw Error("spearman", "x and y differ in length");
  if (x.size() < 2) return std::nullopt;
  auto rx = average_ranks(x), ry = average_ranks(y);
  double n = double(x.size()), mx = (n + 1) / 2, sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - mx);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - mx) * (ry[i] - mx);
  }
  if (sxx == 0 || syy == 0) return std::nullopt;
  return sxy / std::sqrt(sxx * syy);
}

namespace {

double quantile7(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double h = (double(v.size()) - 1) * q;
  size_t lo = size_t(std::floor(h));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - double(lo)) * (v[hi] - v[lo]);
}

}  // namespace

RankCorrelation bootstrap_spearman(const std::vector<double>& x,
                                   const std::vector<std::vector<double>>& acc, double level,
                                   size_t resamples, uint64_t seed) {
  if (!(level > 0 && level < 1)) throw Error("bootstrap", "level must be in (0, 1)");
  for (const auto& row : acc)
    if (row.size() != x.size()) throw Error("bootstrap", "an accuracy row has the wrong length");
  RankCorrelation out;
  out.n = x.size();
  if (acc.empty()) return out;
  const size_t n = acc.size();
  auto accuracy_of = [&](const std::vector<size_t>& idx) {
    std::vector<double> m(x.size(), 0.0);
    for (size_t i : idx)
      for (size_t c = 0; c < x.size(); ++c) m[c] += acc[i][c] / double(idx.size());
    return m;
  };
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t(0));
  out.rho = spearman(x, accuracy_of(all));
  std::mt19937_64 rng(seed);
  // Uniform index in [0, n) by rejection sampling (platform-independent, unlike
  // std::uniform_int_distribution).
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::vector<double> rhos;
  std::vector<size_t> idx(n);
  for (size_t b = 0; b < resamples; ++b) {
    for (auto& i : idx) {
      uint64_t u;
      do u = rng();
      while (u >= limit);
      i = size_t(u % n);
    }
    if (auto r = spearman(x, accuracy_of(idx))) rhos.push_back(*r);
  }
  out.resamples = rhos.size();
  if (!rhos.empty()) {
    out.lo = quantile7(rhos, (1 - level) / 2);
    out.hi = quantile7(rhos, (1 + level) / 2);
  }
  return out;
}

std::vector<size_t> best_by_sample_size(const std::vector<CandidateScore>& candidates) {
  if (candidates.empty()) throw Error("cnorm", "no candidates");
  const size_t S = candidates[0].abs.size();
  for (const auto& c : candidates)
    if (c.abs.size() != S || S == 0)
      throw Error("cnorm",
                  "stability of f* needs every candidate scored on the same S prompts "
                  "(an exhaustive search)");
  std::vector<size_t> best;
  for (size_t s = 1; s <= S; ++s) {
    size_t b = 0;
    double bm = -1;
    for (size_t c = 0; c < candidates.size(); ++c) {
      double m = 0;
      for (size_t t = 0; t < s; ++t) m += candidates[c].abs[t];
      m /= double(s);
      if (m > bm) {
        bm = m;
        b = c;
      }
    }
    best.push_back(b);
  }
  return best;
}

namespace {
double f9(double v) { return round9(v); }

using Notes = std::function<void(const std::string&)>;

// Stability of f* in S (5.3), from the profile's per-prompt scores: the best candidate with the
// first S samples, for every S, and the S from which it no longer changes.
nlohmann::json stability(const Profile& prof, const Notes& note) {
  try {
    auto best = best_by_sample_size(prof.candidates);
    nlohmann::json rows = nlohmann::json::array();
    size_t stable_from = best.size();
    for (size_t s = best.size(); s-- > 0;)
      if (best[s] == best.back())
        stable_from = s + 1;
      else
        break;
    std::string line;
    for (size_t s = 0; s < best.size(); ++s) {
      rows.push_back({{"S", s + 1}, {"best", prof.candidates[best[s]].label()}});
      line += " " + prof.candidates[best[s]].label();
    }
    note("f* by S = 1.." + std::to_string(best.size()) + ":" + line +
         " (stable from S = " + std::to_string(stable_from) + ")");
    return {{"best_by_S", rows}, {"stable_from_S", stable_from}};
  } catch (const Error& e) {
    return {{"error", e.what()}};
  }
}

// With every candidate evaluated: ABS against accuracy (Spearman over the candidates, bootstrapped
// over questions answered under all of them) and prompt length against OAA (Pearson); written
// into out["abs_vs_accuracy"] and out["token_count_vs_oaa"].
void candidate_correlations(
    const Profile& prof, const std::vector<VariantSummary>& avg,
    const std::map<std::string, std::map<std::string, std::pair<double, double>>>& per_question,
    const std::map<std::string, std::pair<double, double>>& tokens, const Notes& note,
    nlohmann::json& out) {
  auto oaa_of = [&](const std::string& name) -> std::optional<double> {
    for (const auto& s : avg)
      if (s.name == name) return s.oaa;
    return std::nullopt;
  };
  std::vector<double> abs, oaa, tok;
  std::vector<std::string> names;
  nlohmann::json per = nlohmann::json::array();
  for (const auto& c : prof.candidates) {
    std::string v = "f:" + c.label();
    auto o = oaa_of(v);
    auto t = tokens.find(v);
    if (!o || t == tokens.end() || t->second.second == 0) continue;
    names.push_back(v);
    abs.push_back(c.mean);
    oaa.push_back(*o);
    tok.push_back(t->second.first / t->second.second);
    per.push_back({{"candidate", c.label()},
                   {"abs_mean", f9(c.mean)},
                   {"oaa", f9(*o)},
                   {"mean_prompt_tokens", f9(tok.back())}});
  }
  // Per question accuracy under every candidate (questions answered under all of them).
  std::vector<std::vector<double>> acc;
  for (const auto& [q, by_v] : per_question) {
    std::vector<double> row;
    for (const auto& v : names) {
      auto it = by_v.find(v);
      if (it == by_v.end() || it->second.second == 0) break;
      row.push_back(it->second.first / it->second.second);
    }
    if (row.size() == names.size()) acc.push_back(row);
  }
  RankCorrelation rc = bootstrap_spearman(abs, acc);
  auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::json(f9(*v)) : nlohmann::json(nullptr);
  };
  out["abs_vs_accuracy"] = {{"spearman_rho", opt(rc.rho)},
                            {"ci95", {opt(rc.lo), opt(rc.hi)}},
                            {"resamples", rc.resamples},
                            {"questions", acc.size()},
                            {"candidates", per}};
  nlohmann::json tc = {{"candidates", names.size()}};
  try {
    auto pr = eval::pearson(tok, oaa);
    tc["pearson_r"] = f9(pr.r);
    tc["p"] = f9(pr.p);
  } catch (const Error& e) {
    tc["pearson_r"] = nullptr;
    tc["note"] = e.what();
  }
  out["token_count_vs_oaa"] = tc;
  char buf[200];
  std::snprintf(buf, sizeof buf, "ABS vs accuracy: Spearman rho %s [%s, %s] over %zu candidates",
                rc.rho ? std::to_string(*rc.rho).c_str() : "n/a",
                rc.lo ? std::to_string(*rc.lo).c_str() : "n/a",
                rc.hi ? std::to_string(*rc.hi).c_str() : "n/a", names.size());
  note(buf);
  note("tokens vs OAA: Pearson r " +
       (tc["pearson_r"].is_null() ? std::string("n/a (") + tc["note"].get<std::string>() + ")"
                                  : std::to_string(tc["pearson_r"].get<double>())));
}

// The density sweep's variants ("p=X"): OAA and OPA by the share p of delimited positions.
nlohmann::json density_rows(const std::vector<VariantSummary>& avg) {
  nlohmann::json d = nlohmann::json::array();
  for (const auto& s : avg)
    if (s.name.rfind("p=", 0) == 0)
      d.push_back({{"p", std::strtod(s.name.c_str() + 2, nullptr)},
                   {"oaa", f9(s.oaa)},
                   {"opa", f9(s.opa)}});
  return d;
}

}  // namespace

nlohmann::json eval_analysis(
    const Profile& prof, const std::vector<VariantSummary>& avg,
    const std::map<std::string, std::map<std::string, std::pair<double, double>>>& per_question,
    const std::map<std::string, std::pair<double, double>>& tokens, bool all_candidates,
    bool density, std::vector<std::string>* lines) {
  const Notes note = [&](const std::string& l) {
    if (lines) lines->push_back(l);
  };
  nlohmann::json out = nlohmann::json::object();
  out["stability"] = stability(prof, note);
  if (all_candidates) candidate_correlations(prof, avg, per_question, tokens, note, out);
  if (density) out["density"] = density_rows(avg);
  return out;
}

}  // namespace ragform::cnorm

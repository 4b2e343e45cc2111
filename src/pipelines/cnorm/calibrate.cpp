#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/detail/numeric.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string_view>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_file.h"
#include "base/json_keys.h"
#include "base/json_number.h"
#include "pipelines/cnorm/abs.h"
#include "store/sha256.h"

namespace ragform::cnorm {

using detail::argmax_mean;
using detail::mean_std;
using detail::round9;

nlohmann::json AbsOptions::to_json() const {
  const char* m = heads == HeadMode::Mean      ? "mean"
                  : heads == HeadMode::PerHead ? "per-head"
                                               : "single";
  nlohmann::json j = {{"layer", layer}, {"heads", m}, {"context_span", context_span}};
  if (heads == HeadMode::Single) j["head"] = head;
  return j;
}

// Applies `stat` (ABS or its centroid mu, section 4.2) to the key span [tb, te) of the row's
// attention, reduced over heads as AbsOptions says (mean row, mean over heads, or one head).
template <class Stat>
double reduce_row(const reader::AttentionRows& row, const AbsOptions& o, size_t tb, size_t te,
                  Stat stat) {
  auto slice = [&](const std::vector<float>& a) {
    size_t e = std::min(te, a.size());
    if (tb >= e)
      throw Error("ABS", "empty key span [" + std::to_string(tb) + ", " + std::to_string(te) +
                             ") of a " + std::to_string(a.size()) + "-token row");
    return std::vector<float>(a.begin() + std::ptrdiff_t(tb), a.begin() + std::ptrdiff_t(e));
  };
  switch (o.heads) {
    case HeadMode::Mean:
      return stat(slice(row.mean));
    case HeadMode::PerHead: {
      if (row.heads.empty()) throw Error("ABS", "the reader returned no per-head rows");
      double s = 0;
      for (const auto& h : row.heads) s += stat(slice(h));
      return s / double(row.heads.size());
    }
    case HeadMode::Single:
      for (size_t i = 0; i < row.head_ids.size(); ++i)
        if (row.head_ids[i] == o.head) return stat(slice(row.heads.at(i)));
      throw Error("ABS", "head " + std::to_string(o.head) + " not in the attention result");
  }
  return 0;
}

double row_abs(const reader::AttentionRows& row, const AbsOptions& o, size_t tb, size_t te) {
  return reduce_row(row, o, tb, te,
                    [](const std::vector<float>& a) { return attention_balance_score(a); });
}

double row_mu(const reader::AttentionRows& row, const AbsOptions& o, size_t tb, size_t te) {
  return reduce_row(row, o, tb, te,
                    [](const std::vector<float>& a) { return attention_centroid(a); });
}

std::vector<double> mass_by_tenth(const std::vector<float>& a, size_t tb, size_t te) {
  te = std::min(te, a.size());
  if (tb >= te) throw Error("ABS", "empty span for the attention mass by position");
  std::vector<double> m(10, 0.0);
  double total = 0;
  const size_t n = te - tb;
  for (size_t t = tb; t < te; ++t) {
    m[std::min<size_t>(9, (t - tb) * 10 / n)] += a[t];
    total += a[t];
  }
  if (!(total > 0)) throw Error("ABS", "the attention over the span sums to zero");
  for (double& x : m) x /= total;
  return m;
}

namespace {

// The key span ABS is computed over, and the documents' span (raw prompts only).
struct Spans {
  size_t tb = 0, te = 0;  // ABS span
  size_t cb = 0, ce = 0;  // documents' token span
  bool has_context = false;
};

Spans find_spans(reader::Reader& r, const Prompt& p, const AbsOptions& o, size_t T, bool detail) {
  Spans s;
  s.te = T;
  if (!o.context_span && !detail) return s;
  if (r.chat_mode() != "raw") {
    if (o.context_span)
      throw UsageError("--context-span",
                       "needs raw prompts (not --chat): the token span of the documents is found "
                       "by counting prefix tokens");
    s.ce = T;
    return s;
  }
  s.cb = size_t(r.count_tokens(p.text.substr(0, p.ctx_begin)));
  s.ce = size_t(r.count_tokens(p.text.substr(0, p.ctx_end)));
  s.has_context = true;
  if (o.context_span) {
    s.tb = s.cb;
    s.te = s.ce;
  }
  return s;
}

}  // namespace

PromptMeasure measure_prompt(reader::Reader& r, const Prompt& p, const AbsOptions& o) {
  reader::AttentionQuery q;
  q.layers = {o.layer};
  q.query_positions = {-1};
  if (o.heads == HeadMode::Single) q.heads = {o.head};
  auto res = r.attention(p.text, q);
  if (res.rows.empty()) throw Error("ABS", "the reader returned no attention row");
  const auto& row = res.rows[0];
  Spans sp = find_spans(r, p, o, row.mean.size(), true);
  PromptMeasure m;
  m.abs = row_abs(row, o, sp.tb, sp.te);
  m.mu = row_mu(row, o, sp.tb, sp.te);
  m.attention = row.mean;
  if (o.heads == HeadMode::Single)
    for (size_t i = 0; i < row.head_ids.size(); ++i)
      if (row.head_ids[i] == o.head) m.attention = row.heads[i];
  m.tokens = res.pieces;
  m.span_begin = sp.cb;
  m.span_end = std::min(sp.ce, m.attention.size());
  m.span_is_context = sp.has_context;
  if (m.span_begin >= m.span_end) {  // no documents (or a tokenizer disagreement): whole prompt
    m.span_begin = 0;
    m.span_end = m.attention.size();
    m.span_is_context = false;
  }
  m.mass_by_position = mass_by_tenth(m.attention, m.span_begin, m.span_end);
  return m;
}

nlohmann::json calibration_row_extra(const PromptMeasure& m, const CandidateScore& c,
                                     const PromptSpec& ps) {
  nlohmann::json mass = nlohmann::json::array();
  for (double x : m.mass_by_position) mass.push_back(round9(x));
  nlohmann::json e = {{"delimiter", c.delim.original ? c.delim.name : c.delim.text},
                      {"p", c.p},
                      {"format", c.wrapper},
                      {"gold_position", ps.gold_pos},
                      {"k", ps.k},
                      {"mass_by_position", mass},
                      {"mass_span", {m.span_begin, m.span_end}},
                      {"mass_span_is_context", m.span_is_context}};
  if (m.attention.size() <= 2048) {
    nlohmann::json att = nlohmann::json::array();
    for (float x : m.attention) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", double(x));
      att.push_back(std::strtod(buf, nullptr));
    }
    e["attention"] = att;
    e["tokens"] = m.tokens;
  }
  return e;
}

double prompt_abs(reader::Reader& r, const Prompt& p, const AbsOptions& o) {
  reader::AttentionQuery q;
  q.layers = {o.layer};
  q.query_positions = {-1};
  if (o.heads == HeadMode::Single) q.heads = {o.head};
  auto res = r.attention(p.text, q);
  if (res.rows.empty()) throw Error("ABS", "the reader returned no attention row");
  Spans sp = find_spans(r, p, o, res.rows[0].mean.size(), false);
  return row_abs(res.rows[0], o, sp.tb, sp.te);
}

std::pair<double, double> abs_mean_std(const std::vector<double>& abs) {
  return abs.empty() ? std::pair<double, double>{0.0, 0.0} : mean_std(abs);
}

std::pair<double, double> detail::mean_std(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= double(v.size());
  if (v.size() < 2) return {m, 0.0};
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return {m, std::sqrt(ss / double(v.size() - 1))};
}

size_t detail::argmax_mean(const std::vector<CandidateScore>& c) {
  if (c.empty()) throw Error("cnorm", "no candidate formats");
  size_t best = 0;
  for (size_t i = 1; i < c.size(); ++i)
    if (c[i].mean > c[best].mean) best = i;
  return best;
}

std::vector<CandidateScore> candidate_list(const CalibrationSetup& setup) {
  std::vector<double> grid = setup.p_grid.empty() ? std::vector<double>{setup.p} : setup.p_grid;
  std::vector<CandidateScore> out;
  bool first_p = true;
  for (double p : grid) {
    validate_p(p);
    for (const auto& d : setup.candidates) {
      if (d.original) {
        // The unformatted text does not depend on p: one candidate, recorded with p = 0.
        if (first_p) {
          CandidateScore c;
          c.delim = d;
          c.p = 0;
          out.push_back(std::move(c));
        }
        continue;
      }
      CandidateScore c;
      c.delim = d;
      c.p = p;
      if (grid.size() > 1) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "@p=%g", p);
        c.name = d.name + buf;
      }
      out.push_back(std::move(c));
    }
    first_p = false;
  }
  for (const auto& w : setup.wrappers) {
    CandidateScore c;
    c.delim = {"none", ""};
    c.p = 0;
    c.wrapper = parse_wrapper(w);
    c.name = c.wrapper;
    out.push_back(std::move(c));
  }
  std::set<std::string> names;
  for (const auto& c : out)
    if (!names.insert(c.label()).second)
      throw UsageError("cnorm calibrate", "candidate '" + c.label() + "' given twice");
  return out;
}

Format candidate_format(const CandidateScore& c, uint64_t seed) {
  return Format{c.delim, c.p, seed, c.wrapper};
}

Calibration run_calibration(const CalibrationSetup& setup, const std::vector<PromptSpec>& prompts,
                            const ScoreFn& score) {
  if (prompts.empty()) throw Error("cnorm calibrate", "no sampled prompts");
  if (setup.candidates.empty() && setup.wrappers.empty())
    throw Error("cnorm calibrate", "no candidate delimiters");
  Calibration cal;
  cal.candidates = candidate_list(setup);
  const size_t C = cal.candidates.size(), S = prompts.size();
  // Scores candidate c on prompts [abs.size(), upto).
  auto extend = [&](size_t c, size_t upto) {
    CandidateScore& cs = cal.candidates[c];
    Format fmt = candidate_format(cs, setup.seed);
    for (size_t s = cs.abs.size(); s < upto; ++s) {
      const PromptSpec& ps = prompts[s];
      Prompt pr =
          render(setup.task, setup.tmpl, *ps.item, arrange(*ps.item, ps.k, ps.gold_pos), fmt);
      cs.abs.push_back(score(c, s, pr));
      ++cal.passes;
    }
    std::tie(cs.mean, cs.std) = mean_std(cs.abs);
  };
  nlohmann::json rounds = nlohmann::json::array();
  if (setup.search == Search::Exhaustive) {
    for (size_t c = 0; c < C; ++c) extend(c, S);
    cal.best = argmax_mean(cal.candidates);
    rounds.push_back({{"candidates", C}, {"prompts", S}});
  } else {
    size_t R = 1;
    while ((size_t(1) << R) < C) ++R;  // ceil(log2 C), at least 1
    std::vector<size_t> alive(C);
    for (size_t c = 0; c < C; ++c) alive[c] = c;
    for (size_t r = 0; r < R; ++r) {
      size_t div = size_t(1) << (R - 1 - r);
      size_t sr = std::max<size_t>(1, (S + div - 1) / div);
      for (size_t c : alive) extend(c, sr);
      rounds.push_back({{"candidates", alive.size()}, {"prompts", sr}});
      std::vector<size_t> order = alive;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return cal.candidates[a].mean > cal.candidates[b].mean;
      });
      if (r + 1 == R) {
        cal.best = order[0];
        break;
      }
      size_t keep = (order.size() + 1) / 2;
      for (size_t i = keep; i < order.size(); ++i)
        cal.candidates[order[i]].eliminated_in_round = int(r);
      order.resize(keep);
      std::sort(order.begin(), order.end());  // back to F's order, so ties keep "first in F"
      alive = order;
    }
  }
  cal.search = {{"method", setup.search == Search::Exhaustive ? "exhaustive" : "halving"},
                {"rounds", rounds},
                {"forward_passes", cal.passes},
                {"exhaustive_passes", C * S}};
  return cal;
}

Calibration calibrate(reader::Reader& r, const CalibrationSetup& setup,
                      const std::vector<PromptSpec>& prompts,
                      const std::function<void(size_t, size_t, const Prompt&, double)>& on_prompt) {
  return run_calibration(setup, prompts, [&](size_t c, size_t s, const Prompt& pr) {
    double a = prompt_abs(r, pr, setup.abs);
    if (on_prompt) on_prompt(c, s, pr, a);
    return a;
  });
}

Format profile_format(const Profile& p) { return Format{p.best, p.p, p.seed, p.best_wrapper}; }

double detail::round9(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

nlohmann::json profile_to_json(const Profile& p) {
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : p.candidates) {
    nlohmann::json abs = nlohmann::json::array();
    for (double a : c.abs) abs.push_back(round9(a));
    nlohmann::json cj = {{"delimiter", c.delim.name},
                         {"abs_mean", round9(c.mean)},
                         {"abs_std", round9(c.std)},
                         {"abs", abs}};
    if (c.p >= 0) cj["p"] = round9(c.p);
    if (!c.wrapper.empty()) cj["format"] = c.wrapper;
    if (!c.name.empty()) cj["name"] = c.name;
    if (c.eliminated_in_round >= 0) cj["eliminated_in_round"] = c.eliminated_in_round;
    cands.push_back(std::move(cj));
  }
  nlohmann::json j = {{"model_sha256", p.model_sha256},
                      {"task", p.task},
                      {"p", round9(p.p)},
                      {"seed", p.seed},
                      {"S", p.S},
                      {"best", p.best_name.empty() ? p.best.name : p.best_name},
                      {"candidates", cands},
                      {"config", p.extra}};
  if (!p.best_wrapper.empty()) j["best_format"] = p.best_wrapper;
  if (!p.search.empty()) j["search"] = p.search;
  return j;
}

namespace {

// The prefix of a profile's errors: "<where>: profile", or `where` alone when it names the profile
// already ("profile", "request 'profile'"), so no message says "profile: profile: ...".
std::string profile_where(const std::string& where) {
  auto ends = [&](std::string_view s) {
    return where.size() >= s.size() && where.compare(where.size() - s.size(), s.size(), s) == 0;
  };
  return ends("profile") || ends("profile'") ? where : where + ": profile";
}

// A value that is not the object `cnorm calibrate` writes at all (a string, an array, an object
// with none of its fields): said as such, rather than as the first field it lacks.
void require_profile_shape(const nlohmann::json& j, const std::string& where) {
  static const char* const kFields[] = {"model_sha256", "task", "p", "best", "candidates"};
  bool any = false;
  if (j.is_object())
    for (const char* f : kFields) any |= j.contains(f);
  if (any) return;
  throw Error(where, std::string("not a C-NORM profile: expected the JSON object `cnorm "
                                 "calibrate` writes (model_sha256, task, p, seed, S, best, "
                                 "candidates), got ") +
                         (j.is_object() ? "an object without those fields" : j.type_name()));
}

}  // namespace

Profile profile_from_json(const nlohmann::json& j_in, const std::string& where_in) {
  const std::string where = profile_where(where_in);
  // A key whose value is null is a key not given (base/json_keys.h; pass 19: a candidate's
  // "p": null was "expected number"); every fault of the document is a UsageError (CLI exit 2,
  // Python ValueError), as its unknown keys are.
  const nlohmann::json j = without_nulls(j_in);
  require_profile_shape(j, where);
  // What profile_to_json writes (base/json_keys.h: a misspelt key is refused, not ignored).
  only_json_keys(j,
                 {"model_sha256", "task", "p", "seed", "S", "best", "best_format", "candidates",
                  "config", "search"},
                 where, "a C-NORM profile");
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!j.contains(name)) throw UsageError(where, std::string("missing field '") + name + "'");
    return j.at(name);
  };
  auto bad = [&](const char* name, const char* want) {
    return UsageError(where, std::string("field '") + name + "': expected " + want);
  };
  Profile p;
  if (!field("model_sha256").is_string()) throw bad("model_sha256", "string");
  p.model_sha256 = j["model_sha256"];
  if (!field("task").is_string()) throw bad("task", "string");
  p.task = j["task"];
  parse_task(p.task);
  if (!field("p").is_number() || !(j["p"].get<double>() >= 0 && j["p"].get<double>() <= 1))
    throw bad("p", "number in [0, 1]");
  p.p = j["p"];
  // Integers however written (2.0 as 2: base/json_number.h; pass 13).
  long long seed = 0, S = 0;
  if (field("seed").is_number_unsigned())
    p.seed = j["seed"].get<uint64_t>();
  else if (json_whole_number(j["seed"], seed) && seed >= 0)
    p.seed = uint64_t(seed);
  else
    throw bad("seed", "non-negative integer");
  if (!json_whole_number(field("S"), S) || S < 1) throw bad("S", "positive integer");
  p.S = size_t(S);
  if (!field("best").is_string()) throw bad("best", "string");
  if (!field("candidates").is_array() || j["candidates"].empty())
    throw bad("candidates", "non-empty array");
  for (const auto& c_in : j["candidates"]) {
    const nlohmann::json c = without_nulls(c_in);
    if (!c.is_object() || !c.contains("delimiter") || !c["delimiter"].is_string() ||
        !c.contains("abs_mean") || !c["abs_mean"].is_number() || !c.contains("abs_std") ||
        !c["abs_std"].is_number())
      throw bad("candidates", "objects with delimiter (string), abs_mean and abs_std (numbers)");
    only_json_keys(
        c,
        {"delimiter", "abs_mean", "abs_std", "abs", "p", "format", "name", "eliminated_in_round"},
        where, "a candidate of 'candidates'");
    CandidateScore cs;
    try {
      cs.delim = parse_delimiter(c["delimiter"].get<std::string>());
    } catch (const UsageError& e) {
      throw UsageError(where, std::string("candidate delimiter: ") + e.what());
    }
    cs.mean = c["abs_mean"];
    cs.std = c["abs_std"];
    // Every key read is checked (pass 19: "abs": "junk" and a non-number among the values were
    // dropped silently).
    if (c.contains("abs")) {
      if (!c["abs"].is_array()) throw bad("candidates[].abs", "array of numbers");
      for (const auto& a : c["abs"]) {
        if (!a.is_number()) throw bad("candidates[].abs", "array of numbers");
        cs.abs.push_back(a);
      }
    }
    cs.p = p.p;
    if (c.contains("p")) {
      if (!c["p"].is_number() || !(c["p"].get<double>() >= 0 && c["p"].get<double>() <= 1))
        throw bad("candidates[].p", "number in [0, 1]");
      cs.p = c["p"];
    }
    if (c.contains("format")) {
      if (!c["format"].is_string()) throw bad("candidates[].format", "string");
      try {
        cs.wrapper = parse_wrapper(c["format"].get<std::string>());
      } catch (const UsageError& e) {
        throw UsageError(where, std::string("candidate format: ") + e.what());
      }
    }
    if (c.contains("name")) {
      if (!c["name"].is_string()) throw bad("candidates[].name", "string");
      cs.name = c["name"];
    }
    if (c.contains("eliminated_in_round")) {
      long long round = 0;
      if (!json_whole_number(c["eliminated_in_round"], round) || round < 0 || round > INT_MAX)
        throw bad("candidates[].eliminated_in_round", "non-negative integer");
      cs.eliminated_in_round = int(round);
    }
    p.candidates.push_back(std::move(cs));
  }
  bool found = false;
  for (const auto& c : p.candidates)
    if (!found && c.label() == j["best"].get<std::string>()) {
      p.best = c.delim;
      p.best_wrapper = c.wrapper;
      p.best_name = c.name;
      found = true;
    }
  if (!found)
    throw UsageError(
        where, "best delimiter '" + j["best"].get<std::string>() + "' is not among the candidates");
  // Written beside "best" when a format wrapper won, for a reader of the file; the best
  // candidate decides what is applied (CnormApplyFixture.TheBestCandidateDecidesForAll).
  if (j.contains("best_format") && !j["best_format"].is_string())
    throw bad("best_format", "string");
  if (j.contains("config")) {
    if (!j["config"].is_object()) throw bad("config", "object");
    p.extra = j["config"];
  }
  if (j.contains("search")) {
    if (!j["search"].is_object()) throw bad("search", "object");
    p.search = j["search"];
  }
  return p;
}

Profile load_profile(const std::string& path) {
  return profile_from_json(read_settings_json_file(path, "profile"), path);
}

std::string profile_mismatch(const Profile& p, const std::string& model_sha256,
                             const std::string& task) {
  std::string why;
  if (p.task != task) why = "the profile was calibrated for task " + p.task + ", not " + task;
  if (p.model_sha256 != model_sha256) {
    if (!why.empty()) why += "; ";
    why += "the profile was calibrated on another model (sha256 " +
           (p.model_sha256.empty() ? std::string("none") : p.model_sha256.substr(0, 12)) +
           ", this model " + model_sha256.substr(0, 12) + ")";
  }
  return why;
}

void save_profile(const Profile& p, const std::string& path) {
  write_file_atomically(path, profile_to_json(p).dump(2) + "\n", "cnorm");
}

std::string cache_key(const nlohmann::json& identity) { return store::sha256_hex(identity.dump()); }

std::optional<Profile> cache_lookup(const std::string& dir, const std::string& key) {
  std::string path = dir + "/" + key + ".json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return load_profile(path);
}

void cache_store(const std::string& dir, const std::string& key, const Profile& p) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cnorm", "cannot create cache directory " + dir + ": " + ec.message());
  save_profile(p, dir + "/" + key + ".json");
}

}  // namespace ragform::cnorm

#include "pipelines/cnorm/calibrate.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "pipelines/cnorm/abs.h"
#include "store/sha256.h"

namespace ragform::cnorm {

nlohmann::json AbsOptions::to_json() const {
  const char* m = heads == HeadMode::Mean      ? "mean"
                  : heads == HeadMode::PerHead ? "per-head"
                                               : "single";
  nlohmann::json j = {{"layer", layer}, {"heads", m}, {"context_span", context_span}};
  if (heads == HeadMode::Single) j["head"] = head;
  return j;
}

double row_abs(const reader::AttentionRows& row, const AbsOptions& o, size_t tb, size_t te) {
  auto slice = [&](const std::vector<float>& a) {
    size_t e = std::min(te, a.size());
    if (tb >= e)
      throw Error("ABS", "empty key span [" + std::to_string(tb) + ", " + std::to_string(te) +
                             ") of a " + std::to_string(a.size()) + "-token row");
    return std::vector<float>(a.begin() + std::ptrdiff_t(tb), a.begin() + std::ptrdiff_t(e));
  };
  switch (o.heads) {
    case HeadMode::Mean:
      return attention_balance_score(slice(row.mean));
    case HeadMode::PerHead: {
      if (row.heads.empty()) throw Error("ABS", "the reader returned no per-head rows");
      double s = 0;
      for (const auto& h : row.heads) s += attention_balance_score(slice(h));
      return s / double(row.heads.size());
    }
    case HeadMode::Single:
      for (size_t i = 0; i < row.head_ids.size(); ++i)
        if (row.head_ids[i] == o.head) return attention_balance_score(slice(row.heads.at(i)));
      throw Error("ABS", "head " + std::to_string(o.head) + " not in the attention result");
  }
  return 0;
}

double prompt_abs(reader::Reader& r, const Prompt& p, const AbsOptions& o) {
  reader::AttentionQuery q;
  q.layers = {o.layer};
  q.query_positions = {-1};
  if (o.heads == HeadMode::Single) q.heads = {o.head};
  auto res = r.attention(p.text, q);
  if (res.rows.empty()) throw Error("ABS", "the reader returned no attention row");
  size_t tb = 0, te = res.rows[0].mean.size();
  if (o.context_span) {
    if (r.chat_mode() != "raw")
      throw UsageError("--context-span",
                       "needs raw prompts (not --chat): the token span of the documents is found "
                       "by counting prefix tokens");
    tb = size_t(r.count_tokens(p.text.substr(0, p.ctx_begin)));
    te = size_t(r.count_tokens(p.text.substr(0, p.ctx_end)));
  }
  return row_abs(res.rows[0], o, tb, te);
}

std::pair<double, double> mean_std(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= double(v.size());
  if (v.size() < 2) return {m, 0.0};
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return {m, std::sqrt(ss / double(v.size() - 1))};
}

size_t argmax_mean(const std::vector<CandidateScore>& c) {
  if (c.empty()) throw Error("cnorm", "no candidate formats");
  size_t best = 0;
  for (size_t i = 1; i < c.size(); ++i)
    if (c[i].mean > c[best].mean) best = i;
  return best;
}

Calibration calibrate(reader::Reader& r, const CalibrationSetup& setup,
                      const std::vector<PromptSpec>& prompts,
                      const std::function<void(size_t, size_t, const Prompt&, double)>& on_prompt) {
  if (prompts.empty()) throw Error("cnorm calibrate", "no sampled prompts");
  if (setup.candidates.empty()) throw Error("cnorm calibrate", "no candidate delimiters");
  Calibration cal;
  for (size_t f = 0; f < setup.candidates.size(); ++f) {
    CandidateScore cs;
    cs.delim = setup.candidates[f];
    Format fmt{cs.delim, setup.p, setup.seed};
    for (size_t s = 0; s < prompts.size(); ++s) {
      const PromptSpec& ps = prompts[s];
      Prompt pr =
          render(setup.task, setup.tmpl, *ps.item, arrange(*ps.item, ps.k, ps.gold_pos), fmt);
      double a = prompt_abs(r, pr, setup.abs);
      cs.abs.push_back(a);
      if (on_prompt) on_prompt(f, s, pr, a);
    }
    std::tie(cs.mean, cs.std) = mean_std(cs.abs);
    cal.candidates.push_back(std::move(cs));
  }
  cal.best = argmax_mean(cal.candidates);
  return cal;
}

double round9(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

nlohmann::json profile_to_json(const Profile& p) {
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : p.candidates) {
    nlohmann::json abs = nlohmann::json::array();
    for (double a : c.abs) abs.push_back(round9(a));
    cands.push_back({{"delimiter", c.delim.name},
                     {"abs_mean", round9(c.mean)},
                     {"abs_std", round9(c.std)},
                     {"abs", abs}});
  }
  return {{"model_sha256", p.model_sha256},
          {"task", p.task},
          {"p", round9(p.p)},
          {"seed", p.seed},
          {"S", p.S},
          {"best", p.best.name},
          {"candidates", cands},
          {"config", p.extra}};
}

Profile profile_from_json(const nlohmann::json& j, const std::string& where) {
  auto field = [&](const char* name) -> const nlohmann::json& {
    if (!j.is_object() || !j.contains(name))
      throw Error(where, std::string("profile: missing field '") + name + "'");
    return j.at(name);
  };
  auto bad = [&](const char* name, const char* want) {
    return Error(where, std::string("profile: field '") + name + "': expected " + want);
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
  if (!field("seed").is_number_unsigned() &&
      !(j["seed"].is_number_integer() && j["seed"].get<int64_t>() >= 0))
    throw bad("seed", "non-negative integer");
  p.seed = j["seed"].get<uint64_t>();
  if (!field("S").is_number_integer() || j["S"].get<int64_t>() < 1)
    throw bad("S", "positive integer");
  p.S = j["S"].get<size_t>();
  if (!field("best").is_string()) throw bad("best", "string");
  if (!field("candidates").is_array() || j["candidates"].empty())
    throw bad("candidates", "non-empty array");
  for (const auto& c : j["candidates"]) {
    if (!c.is_object() || !c.contains("delimiter") || !c["delimiter"].is_string() ||
        !c.contains("abs_mean") || !c["abs_mean"].is_number() || !c.contains("abs_std") ||
        !c["abs_std"].is_number())
      throw bad("candidates", "objects with delimiter (string), abs_mean and abs_std (numbers)");
    CandidateScore cs;
    try {
      cs.delim = parse_delimiter(c["delimiter"].get<std::string>());
    } catch (const UsageError& e) {
      throw Error(where, std::string("profile: candidate delimiter: ") + e.what());
    }
    cs.mean = c["abs_mean"];
    cs.std = c["abs_std"];
    if (c.contains("abs") && c["abs"].is_array())
      for (const auto& a : c["abs"])
        if (a.is_number()) cs.abs.push_back(a);
    p.candidates.push_back(std::move(cs));
  }
  bool found = false;
  for (const auto& c : p.candidates)
    if (c.delim.name == j["best"].get<std::string>()) {
      p.best = c.delim;
      found = true;
    }
  if (!found)
    throw Error(where, "profile: best delimiter '" + j["best"].get<std::string>() +
                           "' is not among the candidates");
  if (j.contains("config") && j["config"].is_object()) p.extra = j["config"];
  return p;
}

Profile load_profile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cnorm", "cannot read profile " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(path, std::string("profile is not JSON: ") + e.what());
  }
  return profile_from_json(j, path);
}

void save_profile(const Profile& p, const std::string& path) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cnorm", "cannot write " + tmp);
    out << profile_to_json(p).dump(2) << "\n";
    if (!out.flush()) throw Error("cnorm", "cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("cnorm", "cannot rename " + tmp + " to " + path + ": " + ec.message());
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

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/ragform/cnorm";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ragform/cnorm";
  return ".ragform-cache/cnorm";
}

}  // namespace ragform::cnorm

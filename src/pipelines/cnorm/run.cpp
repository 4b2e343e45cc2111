#include "pipelines/cnorm/run.h"
#include "pipelines/cnorm/detail/numeric.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/stable_hash.h"
#include "pipelines/cnorm/analysis.h"
#include "reader/measured.h"
#include "reader/prefill_meter.h"
#include "reader/provenance.h"
#include "store/sha256.h"

namespace ragform::cnorm {

using detail::round9;
namespace {

// The prefill accounting of this invocation (what the prefix cache saved), kept with the run.
void store_prefill(store::RunStore& st, int64_t run, const reader::PrefillMeter& m) {
  if (auto c = m.counts()) st.set_run_meta(run, "prefill", reader::to_json(*c));
  // Which servers answered (a remote reader): provenance beside the run, not its identity.
  if (auto sv = reader::servers_meta(m.reader()); !sv.is_null())
    st.set_run_meta(run, "servers", sv);
}

using common::Stage;

// The origin a run records: the caller's tool version and model with the description and chat
// mode of the reader that answers, so that a run never names another reader than the one it used.
RunOrigin origin_with(const RunOrigin& o, const reader::Reader& r) {
  return common::origin_of(r, o.tool_version, o.model_path, o.model_sha256);
}

// ---------------------------------------------------------------- calibrate

// The S prompts of a calibration: sampled by the seeded permutation, k fitted to the context, the
// gold position of each (qa: seeded per item; kv and needle: the item's own when it fits).
struct CalibrationPrompts {
  std::vector<PromptSpec> specs;
  size_t k = 0;  // the fitted k (a prompt of an item with fewer documents has fewer)
};
CalibrationPrompts calibration_prompts(reader::Reader& r, const std::vector<Item>& items,
                                       const CalibrateOptions& opt,
                                       const std::vector<Format>& fmts) {
  const CalibrationSetup& setup = opt.setup;
  const Task task = setup.task;
  // A longbench question whose prompt cannot fit the context is passed over: with Drop, one that
  // does not fit as written under every candidate; cut to fit, one whose instruction, question
  // and choices leave no room for its context.
  std::vector<const Item*> sample;
  size_t too_long = 0;
  const bool cut = task == Task::Longbench && opt.overflow == Overflow::TruncateMiddle;
  for (size_t i : seeded_permutation(items.size(), setup.seed)) {
    if (sample.size() >= opt.samples) break;
    if (cut && !longbench_fits_cut(r, items[i], opt.ctx)) {
      ++too_long;
      continue;
    }
    if (task == Task::Longbench && !cut) {
      try {
        fit_k(r, task, setup.tmpl, {items[i]}, 1, fmts, opt.ctx);
      } catch (const NotSupported&) {
        throw;
      } catch (const Error& e) {
        if (reader::is_outage(e)) throw;  // the server failed, not the prompt's length
        ++too_long;
        continue;
      }
    }
    sample.push_back(&items[i]);
  }
  if (too_long)
    opt.hooks.say("cnorm calibrate: note: " + std::to_string(too_long) +
                  " questions passed over: their prompt does not fit --ctx " +
                  std::to_string(opt.ctx) + " tokens" + (cut ? " even without its context" : ""));
  if (sample.empty()) throw Error("cnorm calibrate", "no question fits the context");
  if (sample.size() < opt.samples)
    opt.hooks.say("cnorm calibrate: only " + std::to_string(sample.size()) +
                  " items, S reduced to that");

  // kv prompts hold every record of the file (k is not used); other tasks k documents. Either is
  // reduced, with a note, until every prompt fits the context.
  size_t k_req = opt.k;
  if (task == Task::Kv) {
    k_req = 0;
    for (const Item* it : sample) k_req = std::max(k_req, it->distractors.size() + 1);
  }
  std::vector<Item> sampled;
  for (const Item* it : sample) sampled.push_back(*it);
  // A longbench prompt holds one context, cut to fit when it must (score_candidates).
  size_t k_eff =
      cut ? std::min<size_t>(k_req, 1) : fit_k(r, task, setup.tmpl, sampled, k_req, fmts, opt.ctx);
  if (k_eff < k_req)
    opt.hooks.say("cnorm calibrate: note: k reduced from " + std::to_string(k_req) + " to " +
                  std::to_string(k_eff) + (task == Task::Kv ? " records" : " documents") +
                  " so that every prompt fits --ctx " + std::to_string(opt.ctx) + " tokens");
  std::vector<PromptSpec> specs;
  for (const Item* it : sample) {
    PromptSpec ps{it, std::min(k_eff, it->distractors.size() + 1), 0};
    // kv and needle keep their own gold position (the file's, the generator's) when it fits.
    ps.gold_pos = task == Task::Qa ? size_t(splitmix64_mix(setup.seed ^ fnv1a64(it->id)) % ps.k)
                                   : it->natural_position % ps.k;
    specs.push_back(ps);
  }
  return {specs, k_eff};
}

// Everything that can change a calibration's result: the cache key and the run's identity.
nlohmann::json calibration_identity(const CalibrateOptions& opt, const reader::Reader& r,
                                    const std::vector<CandidateScore>& cand_list, size_t k_eff,
                                    size_t n_prompts, nlohmann::json& config) {
  const CalibrationSetup& setup = opt.setup;
  nlohmann::json dl = nlohmann::json::array();
  // "original" and "none" both replace with "": the unformatted candidate is named.
  for (const auto& d : setup.candidates) dl.push_back(d.original ? d.name : d.text);
  nlohmann::json cands_id = nlohmann::json::array();
  for (const auto& c : cand_list)
    cands_id.push_back({c.delim.original ? c.delim.name : c.delim.text, c.p, c.wrapper});
  config = {{"k", k_eff},
            {"attention", setup.abs.to_json()},
            {"template_sha256", store::sha256_hex(setup.tmpl)},
            {"input_sha256", opt.input_sha256},
            {"chat_mode", r.chat_mode()},
            {"system_sha256", opt.system_sha256}};
  // Only a cut longbench calibration names its overflow: a Drop one keeps the identity (and
  // cache key) of the calibrations made before the option, which all passed over long questions.
  if (setup.task == Task::Longbench && opt.overflow == Overflow::TruncateMiddle)
    config["overflow"] = overflow_name(opt.overflow);
  nlohmann::json identity = {{"model_sha256", opt.origin.model_sha256},
                             {"task", task_name(setup.task)},
                             {"p", setup.p},
                             {"seed", setup.seed},
                             {"S", n_prompts},
                             {"delimiters", dl},
                             {"config", config},
                             {"version", 2}};
  if (!setup.p_grid.empty() || !setup.wrappers.empty() || setup.search != Search::Exhaustive) {
    identity["candidates"] = cands_id;
    identity["search"] = setup.search == Search::Halving ? "halving" : "exhaustive";
  }
  return identity;
}

Calibration score_candidates(reader::Reader& r, store::RunStore* st, const CalibrateOptions& opt,
                             const std::vector<CandidateScore>& cand_list,
                             const std::vector<PromptSpec>& specs, const nlohmann::json& identity,
                             CalibrateSummary& sum) {
  const CalibrationSetup& setup = opt.setup;
  if (!opt.dump_dir.empty()) std::filesystem::create_directories(opt.dump_dir);
  std::map<store::Key, double> stored;  // (instance, variant) -> ABS of finished rows
  if (st) {
    store::RunConfig rc;
    rc.pipeline = "cnorm calibrate";
    rc.config = identity;
    rc.seed = int64_t(setup.seed);
    sum.run = common::begin_or_resume(*st, rc, origin_with(opt.origin, r), opt.hooks,
                                      "cnorm calibrate", 0, "scored prompts")
                  .run;
    st->for_each_result(sum.run, [&](const store::Result& row) {
      auto it = row.scores.find("abs");
      if (row.status == store::Status::ok && it != row.scores.end())
        stored[{row.instance, row.variant}] = it->second;
    });
  }
  Stage prog(opt.hooks, "cnorm calibrate", uint64_t(specs.size() * cand_list.size()));
  reader::PrefillMeter meter(r);
  const bool longbench = setup.task == Task::Longbench;
  Calibration cal = run_calibration(setup, specs, [&](size_t c, size_t s, const Prompt& rendered) {
    const CandidateScore& cand = cand_list[c];
    const std::string& inst = specs[s].item->id;
    // A longbench prompt over the context is cut (or, with Drop, was never sampled).
    std::optional<FittedPrompt> fitted;
    if (longbench) {
      fitted = fit_longbench_prompt(r, *specs[s].item, candidate_format(cand, setup.seed), opt.ctx,
                                    opt.overflow);
      if (!fitted)
        throw Error("cnorm calibrate", "question " + inst + ": the prompt of candidate " +
                                           cand.label() + " does not fit --ctx " +
                                           std::to_string(opt.ctx) + " tokens");
      sum.truncation.add(inst, fitted->tokens_removed);
    }
    const Prompt& pr = fitted ? fitted->prompt : rendered;
    if (!opt.dump_dir.empty()) {
      std::string path =
          opt.dump_dir + "/f" + std::to_string(c) + "-s" + std::to_string(s) + ".txt";
      // Whole or not at all, and never through a link planted at a prompt's name (pass 14).
      write_file_atomically(path, pr.text, "cnorm calibrate --dump-prompts");
    }
    prog.add();
    if (!st) return prompt_abs(r, pr, setup.abs);
    if (auto it = stored.find({inst, cand.label()}); it != stored.end()) {
      ++sum.reused;
      return it->second;
    }
    auto t0 = std::chrono::steady_clock::now();
    PromptMeasure m = measure_prompt(r, pr, setup.abs);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    store::Result row;
    row.run = sum.run;
    row.instance = inst;
    row.variant = cand.label();
    row.prompt = pr.text;
    row.prompt_tokens = int64_t(m.attention.size());
    row.scores = {{"abs", m.abs}, {"mu", m.mu}};
    row.timings_ms = {{"total", ms}};
    row.extra = calibration_row_extra(m, cand, specs[s]);
    if (fitted) row.extra["tokens_removed"] = fitted->tokens_removed;
    st->put(row);
    return m.abs;
  });
  if (st) store_prefill(*st, sum.run, meter);
  if (st && longbench) st->set_run_meta(sum.run, "truncation", sum.truncation.to_json());
  return cal;
}

CalibrateSummary calibrate_impl(reader::Reader& r, store::RunStore* st,
                                const std::vector<Item>& items, const CalibrateOptions& opt) {
  const CalibrationSetup& setup = opt.setup;
  if (items.empty()) throw Error("cnorm calibrate", "no items");
  const std::vector<CandidateScore> cand_list = candidate_list(setup);
  std::vector<Format> fmts;
  for (const auto& c : cand_list) fmts.push_back(candidate_format(c, setup.seed));
  const CalibrationPrompts prompts = calibration_prompts(r, items, opt, fmts);
  const std::vector<PromptSpec>& specs = prompts.specs;
  nlohmann::json config;
  nlohmann::json identity =
      calibration_identity(opt, r, cand_list, prompts.k, specs.size(), config);
  const std::string key = cache_key(identity);

  CalibrateSummary sum;
  std::optional<Profile> cached;
  // With a store the store is the resume mechanism and must hold every row: no cache shortcut.
  if (!opt.cache_dir.empty() && !st) cached = cache_lookup(opt.cache_dir, key);
  if (cached) {
    sum.profile = *cached;
    sum.from_cache = true;
    opt.hooks.say("cnorm calibrate: reusing cached profile " + opt.cache_dir + "/" + key +
                  ".json (same model, task and config)");
    return sum;
  }
  Calibration cal = score_candidates(r, st, opt, cand_list, specs, identity, sum);
  if (sum.reused)
    opt.hooks.say("cnorm calibrate: " + std::to_string(sum.reused) + " scores read from the store");
  if (std::string cut = sum.truncation.note("cnorm calibrate: note", opt.ctx); !cut.empty())
    opt.hooks.say(cut);
  Profile& prof = sum.profile;
  prof.model_sha256 = opt.origin.model_sha256;
  prof.task = task_name(setup.task);
  const CandidateScore& best = cal.candidates[cal.best];
  // The deployed ratio: setup.p unless the (f, p) search chose another. "original" deploys the
  // text as it came whatever p is; the profile keeps the calibration's p for Min-Token.
  prof.p = best.delim.original ? setup.p : best.p;
  prof.seed = setup.seed;
  prof.S = specs.size();
  prof.candidates = cal.candidates;
  prof.best = best.delim;
  prof.best_wrapper = best.wrapper;
  prof.best_name = best.name;
  prof.search = cal.search;
  prof.extra = config;
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& s : specs) ids.push_back({{"id", s.item->id}, {"gold_position", s.gold_pos}});
  prof.extra["samples"] = ids;
  if (!opt.cache_dir.empty()) cache_store(opt.cache_dir, key, prof);
  return sum;
}

// ---------------------------------------------------------------- eval

// The variants of a sweep: Baseline, C-NORM, Min-Token (chosen over `all` at k), then the extra
// variants of the analyses: every candidate, and f* at every p of the density sweep.
struct SweepPlan {
  std::vector<Variant> extra;
  std::vector<Format> fit_formats;  // every format a prompt may take, for fitting k
};

SweepPlan plan_variants(const EvalOptions& opt, const std::vector<Delimiter>& cands) {
  const Profile& prof = opt.profile;
  SweepPlan plan;
  plan.fit_formats = {{cands[0], 0.0, prof.seed}, profile_format(prof)};
  for (const auto& d : cands) plan.fit_formats.push_back({d, prof.p, prof.seed});
  if (opt.all_candidates)
    for (const auto& c : prof.candidates)
      plan.extra.push_back({"f:" + c.label(), candidate_format(c, prof.seed)});
  for (double v : opt.density) {
    char name[40];
    std::snprintf(name, sizeof name, "p=%g", v);
    Format f = profile_format(prof);
    f.p = v;
    plan.extra.push_back({name, f});
  }
  for (const auto& v : plan.extra) plan.fit_formats.push_back(v.format);
  return plan;
}

// k for the sweep: the requested k (kv: every record, the same count in every item), reduced
// until every prompt and its answer fit the context.
size_t sweep_k(reader::Reader& r, const EvalOptions& opt, const std::vector<Item>& all,
               const std::vector<Format>& fmts) {
  size_t budget = opt.ctx > size_t(opt.max_tokens) ? opt.ctx - size_t(opt.max_tokens) : 1;
  size_t k_req = opt.k;
  if (opt.task == Task::Kv) {
    k_req = all[0].distractors.size() + 1;
    for (const auto& it : all)
      if (it.distractors.size() + 1 != k_req)
        throw Error("cnorm eval", "kv item " + it.id + " has " +
                                      std::to_string(it.distractors.size() + 1) + " records, " +
                                      all[0].id + " has " + std::to_string(k_req) +
                                      ": one evaluation needs one record count");
  }
  size_t k_eff = fit_k(r, opt.task, opt.tmpl, all, k_req, fmts, budget);
  if (k_eff < k_req)
    opt.hooks.say("cnorm eval: note: k reduced from " + std::to_string(k_req) + " to " +
                  std::to_string(k_eff) + (opt.task == Task::Kv ? " records" : " documents") +
                  " so that every prompt and answer fit --ctx " + std::to_string(opt.ctx) +
                  " tokens");
  return k_eff;
}

// What the analyses need across seeds: (correct, answers) per (seed/question, variant) and
// (prompt tokens, prompts) per variant.
struct AnalysisTallies {
  std::map<std::string, std::map<std::string, std::pair<double, double>>> per_question;
  std::map<std::string, std::pair<double, double>> tokens;
};

// One seed's run: the sweep over this process's items, then the summary from the store.
SeedRun run_seed(reader::Reader& r, store::RunStore& st, const EvalOptions& opt,
                 const SweepSetup& setup, const std::vector<Item>& items, uint64_t seed,
                 AnalysisTallies& tally) {
  std::vector<Item> mine;
  for (const auto& it : items)
    if (!opt.keep || opt.keep(it.id)) mine.push_back(it);
  const Profile& prof = opt.profile;
  // The run: identity = everything that changes an answer; one run per seed.
  store::RunConfig rc;
  rc.pipeline = "cnorm eval";
  rc.config = {{"task", task_name(opt.task)},
               {"k", setup.k},
               {"items", items.size()},
               {"input_sha256", opt.input_sha256},
               {"template_sha256", store::sha256_hex(opt.tmpl)},
               {"max_tokens", opt.max_tokens},
               {"p", prof.p},
               {"cnorm_delimiter", prof.best.text},
               {"min_token_delimiter", setup.variants[2].format.delim.text},
               {"format_seed", prof.seed},
               {"stop", "after the first non-empty line"}};
  if (setup.natural_positions) rc.config["positions"] = "natural";
  if (!prof.best_wrapper.empty()) rc.config["cnorm_format"] = prof.best_wrapper;
  rc.seed = int64_t(seed);
  SeedRun out;
  out.seed = seed;
  const size_t total =
      mine.size() * (setup.natural_positions ? 1 : setup.k) * setup.variants.size();
  // The stage names the seed, so that the resume note says which seed's run it resumes.
  const std::string stage = "cnorm eval seed " + std::to_string(seed);
  common::Resumed res = common::begin_or_resume(st, rc, origin_with(opt.origin, r), opt.hooks,
                                                stage, total, "answers");
  out.run = res.run;
  const std::set<store::Key>& done = res.done;
  {
    Stage prog(opt.hooks, stage, total);
    prog.add(done.size());
    reader::PrefillMeter meter(r);
    run_sweep(
        r, setup, mine,
        [&](const std::string& inst, const std::string& v) {
          return done.count({inst, v}) > 0;
        },
        [&](const CellAnswer& c) {
          store::Result row;
          row.run = out.run;
          row.instance = c.instance;
          row.variant = variant_key(c.variant, c.position);
          row.prompt = c.prompt;
          row.prompt_tokens = c.prompt_tokens;
          row.output = c.output;
          row.correct = c.correct;
          row.scores = {{"substring_match", c.correct ? 1.0 : 0.0}};
          row.timings_ms = {{"total", c.ms}};
          const Format* vf = nullptr;
          for (const auto& v : setup.variants)
            if (v.name == c.variant) vf = &v.format;
          row.extra = {{"variant", c.variant},
                       {"position", c.position},
                       {"gold_position", c.position},
                       {"delimiter", vf ? format_label(*vf) : "(unformatted)"},
                       {"answer", c.answer}};
          st.put(row);
          prog.add();
        });
    store_prefill(st, out.run, meter);
  }
  // The summary is computed from the store, so a resumed run counts every stored answer.
  std::vector<Graded> graded;
  st.for_each_result(out.run, [&](const store::Result& row) {
    if (row.status != store::Status::ok || !row.correct || !row.extra.contains("variant") ||
        !row.extra.contains("position"))
      return;
    std::string v = row.extra["variant"].get<std::string>();
    graded.push_back({v, row.extra["position"].get<size_t>(), *row.correct});
    auto& cell = tally.per_question[std::to_string(seed) + "/" + row.instance][v];
    cell.first += *row.correct ? 1 : 0;
    cell.second += 1;
    if (row.prompt_tokens) {
      tally.tokens[v].first += double(*row.prompt_tokens);
      tally.tokens[v].second += 1;
    }
  });
  std::vector<std::string> names;
  for (const auto& v : setup.variants) names.push_back(v.name);
  out.variants = summarize(graded, names, setup.k);
  return out;
}

nlohmann::json variants_json(const std::vector<Variant>& variants,
                             const std::vector<VariantSummary>& sums) {
  nlohmann::json vs = nlohmann::json::array();
  for (size_t i = 0; i < sums.size(); ++i) {
    const auto& s = sums[i];
    nlohmann::json acc = nlohmann::json::array();
    for (double x : s.accuracy) acc.push_back(round9(x));
    vs.push_back({{"name", s.name},
                  {"delimiter", format_label(variants[i].format)},
                  {"p", variants[i].format.deployed_p()},
                  {"oaa", round9(s.oaa)},
                  {"opa", round9(s.opa)},
                  {"best_position", s.best_position + 1},  // 1-based, as the paper's figures
                  {"accuracy", acc},
                  {"n", s.n}});
  }
  return vs;
}

}  // namespace

CalibrateSummary run_calibrate(reader::Reader& r, store::RunStore& st,
                               const std::vector<Item>& items, const CalibrateOptions& opt) {
  return calibrate_impl(r, &st, items, opt);
}

CalibrateSummary run_calibrate(reader::Reader& r, const std::vector<Item>& items,
                               const CalibrateOptions& opt) {
  return calibrate_impl(r, nullptr, items, opt);
}

}  // namespace ragform::cnorm

namespace ragform::cnorm {

std::string format_label(const Format& f) {
  if (!f.wrapper.empty()) return f.wrapper;
  if (f.delim.original) return "original";
  return f.p > 0 ? f.delim.name : "(unformatted)";
}

std::vector<Delimiter> min_token_candidates(const Profile& prof) {
  std::vector<Delimiter> cands;
  for (const auto& c : prof.candidates)
    if (c.wrapper.empty() && !c.delim.original &&
        std::find(cands.begin(), cands.end(), c.delim) == cands.end())
      cands.push_back(c.delim);
  return cands;
}

EvalSummary run_eval(reader::Reader& r, store::RunStore& st,
                     const std::vector<std::vector<Item>>& items, const EvalOptions& opt) {
  if (items.empty() || items.size() != opt.seeds.size())
    throw Error("cnorm eval", "one item set per seed expected");
  std::vector<Item> all;
  for (const auto& per : items) all.insert(all.end(), per.begin(), per.end());
  if (all.empty()) throw Error("cnorm eval", "no items");
  const Profile& prof = opt.profile;
  // A profile calibrated on another prompt (e.g. lost-in-the-middle's, the default before the
  // paper's) still deploys, but its f* was chosen on other prompts than these.
  const auto cal_tmpl = prof.extra.find("template_sha256");
  if (cal_tmpl != prof.extra.end() && *cal_tmpl != store::sha256_hex(opt.tmpl))
    opt.hooks.say(
        "cnorm eval: note: the profile was calibrated with another prompt template "
        "(config.template_sha256 differs): calibrate with this evaluation's template for f* on "
        "these prompts");
  // Min-Token chooses among the profile's delimiters, at the profile's p.
  std::vector<Delimiter> cands = min_token_candidates(prof);
  if (cands.empty()) cands.push_back({"none", ""});
  SweepPlan plan = plan_variants(opt, cands);
  // k and Min-Token are decided over the items of every seed, so every seed runs the same
  // variants with the same k.
  const size_t k_eff = sweep_k(r, opt, all, plan.fit_formats);
  Delimiter min_tok =
      cands[min_token_index(r, opt.task, opt.tmpl, all, k_eff, cands, prof.p, prof.seed)];

  SweepSetup setup;
  setup.task = opt.task;
  setup.tmpl = opt.tmpl;
  setup.k = k_eff;
  setup.gen.max_tokens = opt.max_tokens;
  setup.natural_positions = opt.natural_positions;
  setup.variants = {{"baseline", {{"none", ""}, 0.0, prof.seed}},
                    {"cnorm", profile_format(prof)},
                    {"min-token", {min_tok, prof.p, prof.seed}}};
  for (const auto& v : plan.extra) {
    for (const auto& w : setup.variants)
      if (w.name == v.name) throw UsageError("--density", "variant " + v.name + " given twice");
    setup.variants.push_back(v);
  }

  EvalSummary sum;
  sum.k = k_eff;
  sum.items = items[0].size();
  sum.variants = setup.variants;
  AnalysisTallies tally;
  std::vector<std::vector<VariantSummary>> per_seed;
  for (size_t si = 0; si < opt.seeds.size(); ++si) {
    sum.per_seed.push_back(run_seed(r, st, opt, setup, items[si], opt.seeds[si], tally));
    per_seed.push_back(sum.per_seed.back().variants);
  }
  sum.average = average_over_seeds(per_seed);
  sum.analysis = eval_analysis(prof, sum.average, tally.per_question, tally.tokens,
                               opt.all_candidates, !opt.density.empty(), &sum.analysis_lines);
  return sum;
}

nlohmann::json eval_summary_json(const EvalSummary& s, const EvalOptions& opt) {
  nlohmann::json seeds_json = nlohmann::json::array();
  for (const auto& sr : s.per_seed)
    seeds_json.push_back(
        {{"seed", sr.seed}, {"run", sr.run}, {"variants", variants_json(s.variants, sr.variants)}});
  return {{"task", task_name(opt.task)},
          {"analysis", s.analysis},
          {"k", s.k},
          {"items", s.items},
          {"seeds", opt.seeds},
          {"variants", variants_json(s.variants, s.average)},
          {"per_seed", seeds_json}};
}

LongbenchSummary run_longbench(reader::Reader& r, store::RunStore& st,
                               const std::vector<McItem>& items, const LongbenchOptions& opt) {
  const Profile& prof = opt.profile;
  if (items.empty()) throw Error("cnorm eval", "no questions");
  Format cn = profile_format(prof);
  if (!cn.wrapper.empty())
    throw UsageError("--profile", "document formats are not supported for longbench");
  std::vector<Delimiter> cands = min_token_candidates(prof);
  if (cands.empty()) cands.push_back({"none", ""});
  const size_t budget = opt.ctx > size_t(opt.max_tokens) ? opt.ctx - size_t(opt.max_tokens) : 1;
  std::vector<Format> fmts = {{{"none", ""}, 0.0, prof.seed}, cn};
  for (const auto& d : cands) fmts.push_back({d, prof.p, prof.seed});
  McFit mf = fit_mc_items(r, items, fmts, budget, opt.overflow);
  LongbenchSummary sum;
  sum.items = mf.items.size();
  sum.left_out = mf.left_out;
  sum.overflow = opt.overflow;
  sum.extract = opt.extract;
  const bool cut = opt.overflow == Overflow::TruncateMiddle;
  if (sum.left_out)
    opt.hooks.say("cnorm eval: note: " + std::to_string(sum.left_out) + " of " +
                  std::to_string(items.size()) +
                  " questions left out: their prompt and answer do not fit --ctx " +
                  std::to_string(opt.ctx) + " tokens" + (cut ? " even without their context" : ""));
  if (mf.items.empty()) throw Error("cnorm eval", "no question fits the context");
  size_t mt = 0;  // Min-Token: fewest tokens over the fitted questions (first on ties)
  for (size_t c = 1; c < cands.size(); ++c)
    if (mf.tokens[2 + c] < mf.tokens[2 + mt]) mt = c;
  sum.variants = {{"baseline", {{"none", ""}, 0.0, prof.seed}},
                  {"cnorm", cn},
                  {"min-token", {cands[mt], prof.p, prof.seed}}};

  store::RunConfig rc;
  rc.pipeline = "cnorm eval";
  rc.config = {{"task", "longbench"},
               {"items", mf.items.size()},
               {"input_sha256", opt.input_sha256},
               {"max_tokens", opt.max_tokens},
               {"p", prof.p},
               {"cnorm_delimiter", cn.delim.text},
               {"min_token_delimiter", cands[mt].text},
               {"format_seed", prof.seed}};
  // Only a cut run names its overflow: a Drop run keeps the identity of the runs made before the
  // option (which all dropped), and a cut run never resumes one of them.
  if (cut) rc.config["overflow"] = overflow_name(opt.overflow);
  // The same for the answer extraction: rows are graded when answered, so a strict run must never
  // resume (or merge with) a lenient one; lenient runs keep the identity they had before.
  if (opt.extract != Extract::Lenient) rc.config["extract"] = extract_name(opt.extract);
  const std::vector<Variant>& variants = sum.variants;
  const uint64_t total = mf.items.size() * variants.size();
  common::Resumed res = common::begin_or_resume(st, rc, origin_with(opt.origin, r), opt.hooks,
                                                "cnorm eval longbench", total, "answers");
  sum.run = res.run;
  const std::set<store::Key>& done = res.done;
  reader::GenerateParams gen;
  gen.max_tokens = opt.max_tokens;
  {
    Stage prog(opt.hooks, "cnorm eval longbench", total);
    prog.add(done.size());
    reader::PrefillMeter meter(r);
    run_mc(
        r, mf.items, variants, gen, budget, opt.overflow, opt.extract,
        [&](const std::string& id, const std::string& v) {
          return (opt.keep && !opt.keep(id)) || done.count({id, v}) > 0;
        },
        [&](const McAnswer& a, const McItem& it) {
          store::Result row;
          row.run = sum.run;
          row.instance = it.id;
          row.variant = variants[a.variant].name;
          row.prompt = a.prompt;
          row.prompt_tokens = a.prompt_tokens;
          row.output = a.output;
          row.correct = a.correct;
          row.scores = {{"accuracy", a.correct ? 1.0 : 0.0}};
          row.timings_ms = {{"total", a.ms}};
          row.extra = {{"variant", row.variant},
                       {"delimiter", format_label(variants[a.variant].format)},
                       {"difficulty", it.difficulty},
                       {"length", it.length},
                       {"gold", std::string(1, it.answer)},
                       {"extracted", a.extracted ? std::string(1, *a.extracted) : std::string()},
                       {"tokens_removed", a.tokens_removed}};
          st.put(row);
          prog.add();
        });
    store_prefill(st, sum.run, meter);
  }
  // Accuracy and the cut prompts come from the store, so a resumed run counts every answer.
  std::vector<McGraded> graded;
  st.for_each_result(sum.run, [&](const store::Result& row) {
    if (row.status != store::Status::ok || !row.correct || !row.extra.contains("difficulty"))
      return;
    graded.push_back({row.variant, row.extra["difficulty"].get<std::string>(),
                      row.extra["length"].get<std::string>(), *row.correct});
    if (row.extra.contains("tokens_removed"))
      sum.truncation.add(row.instance, row.extra["tokens_removed"].get<size_t>());
  });
  for (const auto& v : variants) sum.summaries.push_back(summarize_mc(graded, {v.name})[0]);
  st.set_run_meta(sum.run, "truncation", sum.truncation.to_json());
  if (std::string line = sum.truncation.note("cnorm eval: note", opt.ctx); !line.empty())
    opt.hooks.say(line);
  return sum;
}

nlohmann::json longbench_summary_json(const LongbenchSummary& s) {
  nlohmann::json vs = nlohmann::json::array();
  for (size_t i = 0; i < s.summaries.size(); ++i) {
    const McSummary& m = s.summaries[i];
    nlohmann::json bd = nlohmann::json::object(), bl = nlohmann::json::object();
    for (const auto& [k, a] : m.by_difficulty)
      bd[k] = {{"accuracy", round9(a.first)}, {"n", a.second}};
    for (const auto& [k, a] : m.by_length) bl[k] = {{"accuracy", round9(a.first)}, {"n", a.second}};
    vs.push_back({{"name", m.variant},
                  {"delimiter", format_label(s.variants[i].format)},
                  {"p", s.variants[i].format.deployed_p()},
                  {"accuracy", round9(m.accuracy)},
                  {"n", m.n},
                  {"by_difficulty", bd},
                  {"by_length", bl}});
  }
  return {{"task", "longbench"},
          {"items", s.items},
          {"left_out", s.left_out},
          {"overflow", overflow_name(s.overflow)},
          {"extract", extract_name(s.extract)},
          {"truncated", s.truncation.to_json()},
          {"run", s.run},
          {"variants", vs}};
}

}  // namespace ragform::cnorm

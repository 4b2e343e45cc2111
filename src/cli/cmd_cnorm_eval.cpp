// ragform cnorm eval: C-NORM's evaluation (cnorm-surface-formatting.txt) — Baseline / C-NORM /
// Min-Token by gold-position sweep over qa, kv and needle items (section 5.1, OAA and OPA), with
// the candidate and density analyses, or LongBench-v2-style multiple choice (5.2). The logic lives
// in src/pipelines/cnorm; this file reads flags and files and prints. The other verbs:
// cmd_cnorm.cpp.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "base/error.h"
#include "base/progress.h"
#include "cli/cnorm_verbs.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "cli/shard.h"
#include "pipelines/cnorm/analysis.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/format.h"
#include "pipelines/cnorm/longbench.h"
#include "pipelines/cnorm/sweep.h"
#include "pipelines/cnorm/tasks.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::cli::cnorm_verbs {

using namespace ragform::cnorm;

namespace {

// How a variant's format is named in summaries and eval rows.
std::string format_label(const Format& f) {
  if (!f.wrapper.empty()) return f.wrapper;
  if (f.delim.original) return "original";
  return f.p > 0 ? f.delim.name : "(unformatted)";
}

// `cnorm eval --task longbench`: LongBench-v2-style multiple choice (section 5.2, longbench.h).
// Baseline, C-NORM and Min-Token (fewest tokens over the evaluated prompts among the profile's
// delimiters); questions whose prompt and answer do not fit --ctx are left out with a note.
// The profile's check (calibrate.h profile_mismatch): a UsageError unless forced, then a note.
void check_profile(const Profile& prof, const std::string& model_sha, const std::string& task,
                   bool force) {
  std::string why = profile_mismatch(prof, model_sha, task);
  if (why.empty()) return;
  if (!force) throw UsageError("--profile", why + " (calibrate for this pair, or --force)");
  note("cnorm eval: note: --force: " + why);
}

// Min-Token's candidates (5.2): the profile's delimiters; not its document formats and not the
// unformatted 'original', which is the Baseline.
std::vector<Delimiter> min_token_candidates(const Profile& prof) {
  std::vector<Delimiter> cands;
  for (const auto& c : prof.candidates)
    if (c.wrapper.empty() && !c.delim.original &&
        std::find(cands.begin(), cands.end(), c.delim) == cands.end())
      cands.push_back(c.delim);
  return cands;
}

int eval_longbench(ReaderFlags& rf, const std::string& input, const Profile& prof, int limit,
                   int max_tokens, const std::string& store_path, const Shard& shard, bool force) {
  std::vector<McItem> items = build_mc_items(load_records(input));
  if (limit > 0 && items.size() > size_t(limit)) items.resize(size_t(limit));
  if (items.empty()) throw Error("cnorm eval", "no questions in " + input);
  Format cn = profile_format(prof);
  if (!cn.wrapper.empty())
    throw UsageError("--profile", "document formats are not supported for longbench");
  const std::string model_sha = store::sha256_file(rf.model.value);
  check_profile(prof, model_sha, "longbench", force);
  auto reader = rf.open_native();
  std::vector<Delimiter> cands = min_token_candidates(prof);
  if (cands.empty()) cands.push_back({"none", ""});
  const size_t budget = size_t(std::max(1, rf.ctx.value - max_tokens));
  std::vector<Format> fmts = {{{"none", ""}, 0.0, prof.seed}, cn};
  for (const auto& d : cands) fmts.push_back({d, prof.p, prof.seed});
  McFit mf = fit_mc_items(*reader, items, fmts, budget);
  std::vector<McItem>& fit = mf.items;
  const size_t left_out = mf.left_out;
  if (left_out)
    note("cnorm eval: note: " + std::to_string(left_out) + " of " + std::to_string(items.size()) +
         " questions left out: their prompt and answer do not fit --ctx " +
         std::to_string(rf.ctx.value) + " tokens");
  if (fit.empty()) throw Error("cnorm eval", "no question fits the context");
  size_t mt = 0;  // Min-Token: fewest tokens over the fitted questions (first on ties)
  for (size_t c = 1; c < cands.size(); ++c)
    if (mf.tokens[2 + c] < mf.tokens[2 + mt]) mt = c;
  std::vector<Variant> variants = {{"baseline", {{"none", ""}, 0.0, prof.seed}},
                                   {"cnorm", cn},
                                   {"min-token", {cands[mt], prof.p, prof.seed}}};
  std::vector<std::string> names;
  for (const auto& v : variants) names.push_back(v.name);

  store::RunStore st(store_path);
  store::RunConfig rc;
  rc.pipeline = "cnorm eval";
  rc.config = {{"task", "longbench"},
               {"items", fit.size()},
               {"input_sha256", store::sha256_file(input)},
               {"max_tokens", max_tokens},
               {"p", prof.p},
               {"cnorm_delimiter", cn.delim.text},
               {"min_token_delimiter", cands[mt].text},
               {"format_seed", prof.seed}};
  record_reader(rc, rf.model.value, model_sha, *reader);
  int64_t run = st.begin_run(rc);
  auto done = st.done_keys(run);
  reader::GenerateParams gen;
  gen.max_tokens = max_tokens;
  {
    Progress prog("cnorm eval longbench", fit.size() * variants.size());
    prog.add(done.size());
    run_mc(
        *reader, fit, variants, gen,
        [&](const std::string& id, const std::string& v) {
          return !shard.keeps(id) || done.count({id, v}) > 0;
        },
        [&](const McAnswer& a, const McItem& it) {
          store::Result r;
          r.run = run;
          r.instance = it.id;
          r.variant = variants[a.variant].name;
          r.prompt = a.prompt;
          r.prompt_tokens = a.prompt_tokens;
          r.output = a.output;
          r.correct = a.correct;
          r.scores = {{"accuracy", a.correct ? 1.0 : 0.0}};
          r.timings_ms = {{"total", a.ms}};
          r.extra = {{"variant", r.variant},
                     {"delimiter", format_label(variants[a.variant].format)},
                     {"difficulty", it.difficulty},
                     {"length", it.length},
                     {"gold", std::string(1, it.answer)},
                     {"extracted", a.extracted ? std::string(1, *a.extracted) : std::string()}};
          st.put(r);
          prog.add();
        });
  }
  std::vector<McGraded> graded;
  st.for_each_result(run, [&](const store::Result& r) {
    if (r.status != store::Status::ok || !r.correct || !r.extra.contains("difficulty")) return;
    graded.push_back({r.variant, r.extra["difficulty"].get<std::string>(),
                      r.extra["length"].get<std::string>(), *r.correct});
  });
  nlohmann::json vs = nlohmann::json::array();
  for (size_t i = 0; i < variants.size(); ++i) {
    McSummary s = summarize_mc(graded, {names[i]})[0];
    nlohmann::json bd = nlohmann::json::object(), bl = nlohmann::json::object();
    for (const auto& [k, a] : s.by_difficulty) bd[k] = {{"accuracy", f9(a.first)}, {"n", a.second}};
    for (const auto& [k, a] : s.by_length) bl[k] = {{"accuracy", f9(a.first)}, {"n", a.second}};
    vs.push_back({{"name", s.variant},
                  {"delimiter", format_label(variants[i].format)},
                  {"p", variants[i].format.p},
                  {"accuracy", f9(s.accuracy)},
                  {"n", s.n},
                  {"by_difficulty", bd},
                  {"by_length", bl}});
    std::fprintf(stderr, "  %-10s accuracy %.4f (n = %zu)\n", s.variant.c_str(), s.accuracy, s.n);
  }
  print_json_line({{"task", "longbench"},
                   {"items", fit.size()},
                   {"left_out", left_out},
                   {"store", store_path},
                   {"run", run},
                   {"shard", shard.describe()},
                   {"variants", vs}});
  return 0;
}

}  // namespace

int run_cnorm_eval(const std::vector<std::string>& argv) {
  Args a("cnorm eval",
         "Gold-position sweep: Baseline vs C-NORM vs Min-Token, OAA and OPA (C-NORM 5.1).",
         "Per question: the gold passage plus k-1 distractors (other questions' gold passages "
         "without its\n"
         "answers, seeded), the gold at each of the k positions; greedy answer, graded by "
         "best_subspan_em on\n"
         "its first line. Every prompt and answer is stored in --store (one run per seed, one row "
         "per\n"
         "question, position and variant; a rerun resumes). Prints one JSON summary line: the "
         "variants\n"
         "averaged over the seeds, and each seed's own.");
  ReaderFlags rf(a);
  auto& input =
      a.opt<std::string>("--input", "FILE", "QA records (qa) or key-value records (kv)", "");
  auto& task_s = a.opt<std::string>("--task", "TASK", "qa, kv, needle or longbench", "qa");
  auto& positions = a.opt<std::string>(
      "--positions", "MODE",
      "all (move the gold to every position) or natural (each item's own gold position, for "
      "data that already has every position, e.g. `ragform kv generate`)",
      "all");
  auto& profile =
      a.opt<std::string>("--profile", "FILE", "profile from cnorm calibrate").required();
  auto& k = a.opt<int>("-k,--docs", "K", "documents per prompt", 10).range(1, kMaxInt);
  auto& limit =
      a.opt<int>("--limit", "N", "questions to evaluate (0 = all; needle: default 20)", 0);
  auto& seeds_s =
      a.opt<std::string>("--seeds", "LIST",
                         "seeds of the distractors (needle: of the items), comma-separated "
                         "(default: the profile's seed)",
                         "");
  auto& max_tokens =
      a.opt<int>("-n,--max-tokens", "N", "maximum answer tokens", 16).range(1, kMaxInt);
  auto& tmpl_path = a.opt<std::string>("--template", "FILE",
                                       "prompt template (default: lost-in-the-middle's)", "");
  auto& shared = a.opt<std::string>("--shared", "DIR",
                                    "the shared data folder (default: found automatically)", "");
  auto& store_path = a.opt<std::string>("--store", "FILE", "SQLite run store").required();
  auto& all_cands = a.flag("--all-candidates",
                           "also evaluate every profile candidate (variants f:<name>): rank "
                           "correlation of ABS with accuracy and the token-count analysis");
  auto& density = a.opt<std::string>(
      "--density", "LIST",
      "density sweep (Figure 6): f* at each p of LIST (variants p=<p>), e.g. 0,0.25,0.5,0.75,1",
      "");
  auto& force = a.flag(
      "--force", "evaluate a profile calibrated on another model or task (refused otherwise)");
  auto& sys_preset = a.opt<std::string>(
      "--system-preset", "NAME", "named system prompt for --chat: llama2-chat (Appendix D)", "");
  ShardFlag sf(a);
  if (!a.parse(argv)) return 0;

  const Shard shard = sf.shard();
  apply_system_preset(rf, sys_preset.value);
  if (task_s.value == "longbench") {
    if (max_tokens.value < 1) throw UsageError("--max-tokens", "must be at least 1");
    if (limit.value < 0) throw UsageError("--limit", "must be >= 0");
    return eval_longbench(rf, input.value, load_profile(profile.value), limit.value,
                          max_tokens.value, store_path.value, shard, force.value);
  }
  Task task = parse_task(task_s.value);
  if (positions.value != "all" && positions.value != "natural")
    throw UsageError("--positions", "expected all or natural, got '" + positions.value + "'");
  if (k.value < 1) throw UsageError("-k", "must be at least 1");
  if (limit.value < 0) throw UsageError("--limit", "must be >= 0");
  if (max_tokens.value < 1) throw UsageError("--max-tokens", "must be at least 1");
  Profile prof = load_profile(profile.value);
  const std::string model_sha = store::sha256_file(rf.model.value);
  check_profile(prof, model_sha, task_name(task), force.value);
  std::vector<uint64_t> seeds;
  if (seeds_s.value.empty()) {
    seeds = {prof.seed};
  } else {
    std::set<int> seen;
    for (int s : parse_int_list("--seeds", seeds_s.value)) {
      if (s < 0) throw UsageError("--seeds", "seeds must be >= 0");
      if (!seen.insert(s).second)
        throw UsageError("--seeds", "seed " + std::to_string(s) + " given twice");
      seeds.push_back(uint64_t(s));
    }
  }
  std::string tmpl = template_for(task, tmpl_path.value, shared.value);
  size_t n_needle = limit.value > 0 ? size_t(limit.value) : 20;
  // One item set per seed; k and Min-Token are decided over all of them, so every seed runs the
  // same variants with the same k.
  std::vector<std::vector<Item>> per_seed;
  std::vector<Item> all;
  for (uint64_t sd : seeds) {
    std::vector<Item> items = task_items(task, input.value, size_t(k.value), sd, n_needle);
    if (limit.value > 0 && items.size() > size_t(limit.value)) items.resize(size_t(limit.value));
    if (items.empty()) throw Error("cnorm eval", "no items");
    std::set<std::string> ids;
    for (const auto& it : items)
      if (!ids.insert(it.id).second)
        throw Error("cnorm eval",
                    "duplicate item id '" + it.id + "' (the run store needs unique ids)");
    all.insert(all.end(), items.begin(), items.end());
    per_seed.push_back(std::move(items));
  }

  auto reader = rf.open_native();
  // Min-Token chooses among the profile's delimiters, at the profile's p.
  std::vector<Delimiter> cands = min_token_candidates(prof);
  if (cands.empty()) cands.push_back({"none", ""});
  std::vector<Format> fmts = {{cands[0], 0.0, prof.seed}, profile_format(prof)};
  for (const auto& d : cands) fmts.push_back({d, prof.p, prof.seed});
  // Extra variants of the analyses: every candidate, and f* at every p of the density sweep.
  std::vector<Variant> extra_variants;
  if (all_cands.value)
    for (const auto& c : prof.candidates)
      extra_variants.push_back({"f:" + c.label(), candidate_format(c, prof.seed)});
  if (!density.value.empty())
    for (const auto& tok : split_list(density.value)) {
      char* end = nullptr;
      double v = std::strtod(tok.c_str(), &end);
      if (tok.empty() || *end != '\0' || !(v >= 0 && v <= 1))
        throw UsageError("--density", "'" + tok + "' is not a number in [0, 1]");
      char name[40];
      std::snprintf(name, sizeof name, "p=%g", v);
      Format f = profile_format(prof);
      f.p = v;
      extra_variants.push_back({name, f});
    }
  for (const auto& v : extra_variants) fmts.push_back(v.format);
  size_t budget =
      size_t(rf.ctx.value) > size_t(max_tokens.value) ? size_t(rf.ctx.value - max_tokens.value) : 1;
  // kv prompts hold every record of an item (-k is not used).
  size_t k_req = size_t(k.value);
  if (task == Task::Kv) {
    k_req = all[0].distractors.size() + 1;
    for (const auto& it : all)
      if (it.distractors.size() + 1 != k_req)
        throw Error("cnorm eval", "kv item " + it.id + " has " +
                                      std::to_string(it.distractors.size() + 1) + " records, " +
                                      all[0].id + " has " + std::to_string(k_req) +
                                      ": one evaluation needs one record count");
  }
  size_t k_eff = fit_k(*reader, task, tmpl, all, k_req, fmts, budget);
  if (k_eff < k_req)
    note("cnorm eval: note: k reduced from " + std::to_string(k_req) + " to " +
         std::to_string(k_eff) + (task == Task::Kv ? " records" : " documents") +
         " so that every prompt and answer fit --ctx " + std::to_string(rf.ctx.value) + " tokens");
  Delimiter min_tok =
      cands[min_token_index(*reader, task, tmpl, all, k_eff, cands, prof.p, prof.seed)];

  SweepSetup setup;
  setup.task = task;
  setup.tmpl = tmpl;
  setup.k = k_eff;
  setup.gen.max_tokens = max_tokens.value;
  setup.natural_positions = positions.value == "natural";
  setup.variants = {{"baseline", {{"none", ""}, 0.0, prof.seed}},
                    {"cnorm", profile_format(prof)},
                    {"min-token", {min_tok, prof.p, prof.seed}}};
  for (const auto& v : extra_variants) {
    for (const auto& w : setup.variants)
      if (w.name == v.name) throw UsageError("--density", "variant " + v.name + " given twice");
    setup.variants.push_back(v);
  }
  std::vector<std::string> names;
  for (const auto& v : setup.variants) names.push_back(v.name);

  auto variants_json = [&](const std::vector<VariantSummary>& sums) {
    nlohmann::json vs = nlohmann::json::array();
    for (size_t i = 0; i < sums.size(); ++i) {
      const auto& s = sums[i];
      nlohmann::json acc = nlohmann::json::array();
      for (double x : s.accuracy) acc.push_back(f9(x));
      vs.push_back({{"name", s.name},
                    {"delimiter", format_label(setup.variants[i].format)},
                    {"p", setup.variants[i].format.p},
                    {"oaa", f9(s.oaa)},
                    {"opa", f9(s.opa)},
                    {"best_position", s.best_position + 1},  // 1-based, as the paper's figures
                    {"accuracy", acc},
                    {"n", s.n}});
    }
    return vs;
  };

  store::RunStore st(store_path.value);
  std::vector<std::vector<VariantSummary>> sums_per_seed;
  // For the analyses: (correct, answers) per (seed/question, variant); (tokens, prompts) per
  // variant.
  std::map<std::string, std::map<std::string, std::pair<double, double>>> per_question;
  std::map<std::string, std::pair<double, double>> tokens;
  nlohmann::json seeds_json = nlohmann::json::array();
  for (size_t si = 0; si < seeds.size(); ++si) {
    // k, Min-Token and the run identity come from every item, so the shards of one evaluation
    // write the same runs and `ragform merge` joins them; only the sweep is split.
    const std::vector<Item>& items = per_seed[si];
    std::vector<Item> mine;
    for (const auto& it : items)
      if (shard.keeps(it.id)) mine.push_back(it);
    // The run: identity = everything that changes an answer; one run per seed.
    store::RunConfig rc;
    rc.pipeline = "cnorm eval";
    rc.config = {{"task", task_name(task)},
                 {"k", k_eff},
                 {"items", items.size()},
                 {"input_sha256", input.value.empty() ? "" : store::sha256_file(input.value)},
                 {"template_sha256", store::sha256_hex(tmpl)},
                 {"max_tokens", max_tokens.value},
                 {"p", prof.p},
                 {"cnorm_delimiter", prof.best.text},
                 {"min_token_delimiter", min_tok.text},
                 {"format_seed", prof.seed}};
    if (setup.natural_positions) rc.config["positions"] = "natural";
    if (!prof.best_wrapper.empty()) rc.config["cnorm_format"] = prof.best_wrapper;
    record_reader(rc, rf.model.value, model_sha, *reader);
    rc.seed = int64_t(seeds[si]);
    int64_t run = st.begin_run(rc);
    auto done = st.done_keys(run);
    size_t total = mine.size() * (setup.natural_positions ? 1 : k_eff) * setup.variants.size();
    if (!done.empty())
      note("cnorm eval: resuming run " + std::to_string(run) + " (seed " +
           std::to_string(seeds[si]) + "): " + std::to_string(done.size()) + " of " +
           std::to_string(total) + " answers already stored");
    {
      Progress prog("cnorm eval seed " + std::to_string(seeds[si]), total);
      prog.add(done.size());
      run_sweep(
          *reader, setup, mine,
          [&](const std::string& inst, const std::string& v) {
            return done.count({inst, v}) > 0;
          },
          [&](const CellAnswer& c) {
            store::Result r;
            r.run = run;
            r.instance = c.instance;
            r.variant = variant_key(c.variant, c.position);
            r.prompt = c.prompt;
            r.prompt_tokens = c.prompt_tokens;
            r.output = c.output;
            r.correct = c.correct;
            r.scores = {{"substring_match", c.correct ? 1.0 : 0.0}};
            r.timings_ms = {{"total", c.ms}};
            const Format* vf = nullptr;
            for (const auto& v : setup.variants)
              if (v.name == c.variant) vf = &v.format;
            r.extra = {{"variant", c.variant},
                       {"position", c.position},
                       {"gold_position", c.position},
                       {"delimiter", vf ? format_label(*vf) : "(unformatted)"},
                       {"answer", c.answer}};
            st.put(r);
            prog.add();
          });
    }
    // The summary is computed from the store, so a resumed run counts every stored answer.
    std::vector<Graded> graded;
    st.for_each_result(run, [&](const store::Result& r) {
      if (r.status != store::Status::ok || !r.correct || !r.extra.contains("variant") ||
          !r.extra.contains("position"))
        return;
      std::string v = r.extra["variant"].get<std::string>();
      graded.push_back({v, r.extra["position"].get<size_t>(), *r.correct});
      auto& cell = per_question[std::to_string(seeds[si]) + "/" + r.instance][v];
      cell.first += *r.correct ? 1 : 0;
      cell.second += 1;
      if (r.prompt_tokens) {
        tokens[v].first += double(*r.prompt_tokens);
        tokens[v].second += 1;
      }
    });
    sums_per_seed.push_back(summarize(graded, names, k_eff));
    seeds_json.push_back(
        {{"seed", seeds[si]}, {"run", run}, {"variants", variants_json(sums_per_seed.back())}});
  }

  auto avg = average_over_seeds(sums_per_seed);
  for (const auto& s : avg)
    std::fprintf(stderr, "  %-10s OAA %.4f  OPA %.4f (best position %zu of %zu)\n", s.name.c_str(),
                 s.oaa, s.opa, s.best_position + 1, s.accuracy.size());
  std::vector<std::string> analysis_lines;
  nlohmann::json analysis = eval_analysis(prof, avg, per_question, tokens, all_cands.value,
                                          !density.value.empty(), &analysis_lines);
  for (const auto& l : analysis_lines) note("  " + l);
  print_json_line({{"task", task_name(task)},
                   {"analysis", analysis},
                   {"k", k_eff},
                   {"items", per_seed[0].size()},
                   {"seeds", seeds},
                   {"store", store_path.value},
                   {"shard", shard.describe()},
                   {"variants", variants_json(avg)},
                   {"per_seed", seeds_json}});
  return 0;
}

}  // namespace ragform::cli::cnorm_verbs

// C-NORM's experiments through its runners (pipelines/cnorm/run.h): run_calibrate for the profile
// (sections 4.1-4.2), then run_eval (the gold-position sweep, 5.1; KV retrieval, section 2 and
// Appendix A) or run_longbench (5.2).
#include <algorithm>

#include "base/error.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/cnorm.h"
#include "reproduce/jobs.h"
#include "store/sha256.h"

namespace ragform::reproduce::detail {

namespace {

cnorm::RunHooks hooks(const Options& opt) {
  return {opt.hooks.note, opt.hooks.begin, opt.hooks.advance, opt.hooks.end};
}

cnorm::RunOrigin origin(const Options& opt) {
  return {opt.tool_version, opt.model_path, opt.model_sha256};
}

// The paper's method names for the runner's variants.
std::string method_name(const std::string& v) {
  if (v == "baseline") return "Baseline";
  if (v == "cnorm") return "C-NORM";
  if (v == "min-token") return "Min-Token";
  return v;
}

// OAA and OPA of each averaged variant. OAA's interval treats every answer as independent (answers
// of one question at several positions are not; docs/reproduce.md).
void sweep_values(const cnorm::EvalSummary& s, std::vector<Value>& out) {
  for (const auto& v : s.average) {
    size_t n = 0;
    for (size_t c : v.n) n += c;
    out.push_back(proportion(method_name(v.name), "OAA", v.oaa * double(n), double(n), 1.0));
    size_t nb = v.best_position < v.n.size() ? v.n[v.best_position] : 0;
    out.push_back(proportion(method_name(v.name), "OPA", v.opa * double(nb), double(nb), 1.0));
  }
}

cnorm::CalibrateOptions calibrate_options(cnorm::Task task, const std::string& tmpl, size_t S,
                                          size_t k, const std::string& input_sha256,
                                          const Options& opt) {
  cnorm::CalibrateOptions co;
  co.setup.task = task;
  co.setup.tmpl = tmpl;
  co.setup.candidates = cnorm::default_delimiters();
  co.setup.p = 0.5;  // section 5.1: "The ratio p in C-NORM is fixed at p = 0.5"
  co.setup.seed = 0;
  co.samples = S;
  co.k = k;
  co.ctx = opt.ctx;
  co.origin = origin(opt);
  co.input_sha256 = input_sha256;
  co.hooks = hooks(opt);
  return co;
}

Job sweep_job(const Planned& p, const Options& opt, cnorm::Task task) {
  const Sizes& z = sizes_of(opt.scale);
  const std::string input = p.inputs.at(0), input_sha256 = store::sha256_file(input);
  // The paper's own prompts, built into the pipeline: App. D's qa prompt (with its "Search
  // Results:" label) and App. B's key-value prompt (no "JSON data:" line).
  const std::string tmpl = cnorm::load_template(task, "", "");
  auto records = eval::load_qa_file(input).records;
  // Paper: 500 questions (5.1) / samples (section 2); 3 seeds for the NQ sweep (5.1: "averaged
  // over three random seeds"), one for KV (section 2 names none). KV: the shared file's 75 records
  // per sample are cut to 40, section 2's low-density setting (fewer below paper scale).
  const bool kv_task = task == cnorm::Task::Kv;
  const size_t n = kv_task ? z.kv_items : z.nq_items, S = z.calibration_S, k = 10;
  const size_t kv_records = z.kv_records;
  std::vector<uint64_t> seeds;
  for (uint64_t sd = 0; sd < (kv_task ? 1 : z.nq_seeds); ++sd) seeds.push_back(sd);
  std::vector<std::vector<cnorm::Item>> per_seed;
  for (uint64_t sd : seeds) {
    std::vector<std::string> skipped;
    auto items = task == cnorm::Task::Kv ? cnorm::build_kv_items(records)
                                         : cnorm::build_qa_items(records, k, sd, &skipped);
    if (items.size() > n) items.resize(n);
    if (kv_task)
      for (auto& it : items)
        if (it.distractors.size() > kv_records - 1) it.distractors.resize(kv_records - 1);
    if (items.empty()) throw Error("reproduce", "no items in " + input);
    per_seed.push_back(std::move(items));
  }
  const size_t docs = task == cnorm::Task::Kv ? per_seed[0][0].distractors.size() + 1 : k;
  const size_t cands = cnorm::default_delimiters().size();
  const bool kv = task == cnorm::Task::Kv;
  Job j;
  j.planned = p;
  j.max_tokens = cnorm::answer_tokens(task);  // the sweep's own default (setup.h)
  const size_t variants = 3 + (kv ? cands : 0);
  j.prompts = S * cands + seeds.size() * per_seed[0].size() * docs * variants;
  j.sample_prompt = cnorm::render(task, tmpl, per_seed[0][0],
                                  cnorm::arrange(per_seed[0][0], docs, 0), cnorm::Format{})
                        .text;
  j.note = kv ? std::to_string(kv_records) + " of the shared file's 75 records per sample" +
                    (kv_records == 40 ? " (section 2's low density)" : "") +
                    "; every profile delimiter is evaluated, not only '-' and '&'"
              : "";
  if (opt.scale != Scale::Paper)
    j.note += std::string(j.note.empty() ? "" : "; ") + scale_name(opt.scale) +
              " scale: " + std::to_string(per_seed[0].size()) + " items, S = " + std::to_string(S) +
              ", " + (seeds.size() == 1 ? "one seed" : std::to_string(seeds.size()) + " seeds");
  j.run = [=, per_seed = std::move(per_seed)](reader::Reader& r, store::RunStore& st) {
    auto co = calibrate_options(task, tmpl, S, docs, input_sha256, opt);
    auto cal = cnorm::run_calibrate(r, st, per_seed[0], co);
    cnorm::EvalOptions eo;
    eo.task = task;
    eo.tmpl = tmpl;
    eo.profile = cal.profile;
    eo.seeds = seeds;
    eo.k = docs;
    eo.ctx = opt.ctx;
    eo.max_tokens = j.max_tokens;
    eo.all_candidates = kv;  // every delimiter: '&' (section 2) and the token analysis (App. A)
    eo.origin = origin(opt);
    eo.input_sha256 = input_sha256;
    eo.hooks = hooks(opt);
    auto sum = cnorm::run_eval(r, st, per_seed, eo);
    std::vector<Value> out;
    sweep_values(sum, out);
    if (kv) {
      // Section 2: the records' own hyphenated UUIDs (the baseline) vs '&' in place of '-'.
      for (const auto& v : std::vector<Value>(out)) {
        Value c = v;
        c.method = v.method == "Baseline" ? "UUID (-)" : "Modified UUID (&)";
        if ((v.method == "Baseline" || v.method == "f:&") && v.metric == "OAA") out.push_back(c);
      }
      const auto& tc = sum.analysis.value("token_count_vs_oaa", nlohmann::json::object());
      if (tc.contains("pearson_r") && tc["pearson_r"].is_number())
        out.push_back({"delimiters", "Pearson r (prompt tokens vs OAA)",
                       tc["pearson_r"].get<double>(), std::nullopt, std::nullopt,
                       tc.value("candidates", size_t(0))});
    }
    return out;
  };
  return j;
}

Job longbench_job(const Planned& p, const Options& opt) {
  const Sizes& z = sizes_of(opt.scale);
  const std::string input = p.inputs.at(0), input_sha256 = store::sha256_file(input);
  auto items = cnorm::build_mc_items(eval::load_qa_file(input).records);
  if (z.longbench_items && items.size() > z.longbench_items) items.resize(z.longbench_items);
  if (items.empty()) throw Error("reproduce", "no questions in " + input);
  std::vector<cnorm::Item> cal_items;
  for (const auto& mc : items) cal_items.push_back(cnorm::mc_to_item(mc));
  const size_t S = z.calibration_S, cands = cnorm::default_delimiters().size();
  Job j;
  j.planned = p;
  j.prompts = S * cands + items.size() * 3;
  j.max_tokens = 16;
  j.sample_prompt = cnorm::longbench_prompt(items[0], cnorm::Format{});
  j.note = opt.scale == Scale::Paper ? ""
                                     : std::string(scale_name(opt.scale)) +
                                           " scale: " + std::to_string(items.size()) + " questions";
  j.run = [=](reader::Reader& r, store::RunStore& st) {
    auto co = calibrate_options(cnorm::Task::Longbench, cnorm::longbench_template(), S, 1,
                                input_sha256, opt);
    auto cal = cnorm::run_calibrate(r, st, cal_items, co);
    cnorm::LongbenchOptions lo;
    lo.profile = cal.profile;
    lo.ctx = opt.ctx;
    // LongBench-v2's own answer extraction (pred.py extract_answer), not ragform's lenient rules.
    lo.extract = cnorm::Extract::Strict;
    lo.origin = origin(opt);
    lo.input_sha256 = input_sha256;
    lo.hooks = hooks(opt);
    auto sum = cnorm::run_longbench(r, st, items, lo);
    std::vector<Value> out;
    for (const auto& s : sum.summaries) {
      const std::string m = method_name(s.variant);
      out.push_back(proportion(m, "accuracy overall", s.accuracy * double(s.n), double(s.n), 100));
      for (const auto* by : {&s.by_difficulty, &s.by_length})
        for (const auto& [key, an] : *by)
          out.push_back(proportion(m, "accuracy " + key, an.first * double(an.second),
                                   double(an.second), 100));
    }
    return out;
  };
  return j;
}

}  // namespace

Job cnorm_job(const Planned& p, const Options& opt) {
  if (p.info.name == "nq-sweep") return sweep_job(p, opt, cnorm::Task::Qa);
  if (p.info.name == "kv-retrieval") return sweep_job(p, opt, cnorm::Task::Kv);
  return longbench_job(p, opt);
}

}  // namespace ragform::reproduce::detail

// The catalogue of reproducible experiments, their data, and the "reproduce" run that holds the
// measured values (report/paper_section.cpp reads it).
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "base/options.h"
#include "reproduce/jobs.h"

namespace ragform::reproduce {

namespace fs = std::filesystem;

const char* scale_name(Scale s) {
  switch (s) {
    case Scale::Smoke:
      return "smoke";
    case Scale::Study:
      return "study";
    case Scale::Paper:
      break;
  }
  return "paper";
}

Scale parse_scale(const std::string& name) {
  return Scale(option_choice("scale", name, {"smoke", "study", "paper"}));
}

const Sizes& sizes_of(Scale s) {
  // smoke: a few items per experiment. study: 40 NQ questions x 10 positions x 3 variants (1,200
  // answers, ~30 min) and 5 KV samples of 20 records x 20 positions x 14 variants (1,400 answers of
  // ~1,000 tokens); SURE 20 per cell of 200 questions; all 300 HotpotQA questions. paper: the
  // papers' sizes (500 questions, 3 seeds; 40 records per KV sample; every question).
  static const Sizes smoke{2, 1, 2, 6, 2, 4, 5, 8, 2};
  static const Sizes study{40, 1, 5, 20, 8, 20, 0, 200, 20};
  static const Sizes paper{500, 3, 500, 40, 8, 0, 0, 0, 0};
  return s == Scale::Smoke ? smoke : s == Scale::Study ? study : paper;
}

const std::vector<ExperimentInfo>& experiments() {
  static const std::vector<ExperimentInfo> v = {
      {"cnorm", "nq-sweep",
       "controlled NQ-Open sweep: Baseline / C-NORM / Min-Token, OAA and OPA (section 5.1, "
       "Figure 5)",
       "500 questions, gold + 9 distractors at every position, p = 0.5, S = 8, 3 seeds, greedy"},
      {"cnorm", "kv-retrieval",
       "key-value retrieval under every delimiter: UUID (-) vs Modified UUID (&) OAA (section 2), "
       "prompt tokens vs OAA (Appendix A)",
       "500 samples (section 2), 200 for the token analysis, gold at every position, greedy"},
      {"cnorm", "longbench",
       "LongBench-v2 multiple choice: Baseline / Min-Token / C-NORM accuracy by difficulty and "
       "length (section 5.2, Table 1)",
       "503 questions, LongBench's official template, chat models"},
      {"sure", "sure-wiki",
       "robustness to rule-based perturbations (logic, format, metadata): LR / RR / WR, Org / Acc "
       "per subset (Table 1)",
       "SURE_Wiki instances of every cell, temperature 0.1, string-match grading"},
      {"sure", "sig-trivial",
       "category robustness rate on SIG_Trivial, string-match grading (Table 3)",
       "SIG_Trivial pairs (Bing-retrieved TriviaQA documents)"},
      {"spotlight", "multihopqa",
       "SpotlightRAG span selection (K = 6) and the generator's exact match, without training "
       "(Table 2)",
       "MultiHopQA, K = 6 sentences, token Top-k = 5, frozen retriever (w/o Train)"},
  };
  return v;
}

std::vector<ExperimentInfo> experiments_of(const std::string& paper) {
  std::vector<ExperimentInfo> out;
  for (const auto& e : experiments())
    if (e.paper == paper) out.push_back(e);
  if (out.empty())
    throw UsageError("reproduce",
                     "unknown paper '" + paper + "' (expected cnorm, sure or spotlight)");
  return out;
}

namespace {

// The inputs of an experiment, or the one line naming the data set that is missing.
void find_inputs(Planned& p, const Options& opt) {
  const std::string litm = opt.shared_dir + "/data/lost-in-the-middle/";
  auto need_shared = [&](const std::vector<std::string>& files, const std::string& set) {
    for (const auto& f : files) {
      if (opt.shared_dir.empty() || !fs::exists(f)) {
        p.missing = set + " not found (" + f + "; give --shared DIR holding data/)";
        return;
      }
      p.inputs.push_back(f);
    }
  };
  auto need_data = [&](const std::string& file, const std::string& set, const std::string& how) {
    std::string f = opt.data_dir.empty() ? "" : opt.data_dir + "/" + file;
    if (f.empty() || !fs::exists(f)) {
      p.missing =
          set + " is not in the shared data: put it at --data DIR/" + file + " (" + how + ")";
      return;
    }
    p.inputs.push_back(f);
  };
  const std::string& n = p.info.name;
  if (n == "nq-sweep")
    need_shared({litm + "nq-open-oracle.jsonl.gz"}, "lost-in-the-middle NQ-Open");
  else if (n == "kv-retrieval")
    need_shared({litm + "kv-retrieval-75_keys.jsonl.gz"}, "lost-in-the-middle KV retrieval");
  else if (n == "longbench")
    need_data("longbench-v2.json", "LongBench-v2",
              "data.json of the THUDM/LongBench-v2 data set on Hugging Face");
  else if (n == "sure-wiki")
    need_shared({litm + "nq-open-oracle.jsonl.gz"}, "lost-in-the-middle NQ-Open");
  else if (n == "sig-trivial")
    need_data("sig-trivial.jsonl", "SIG_Trivial",
              "QA records with retrieved passages, one JSON object a line, from the SURE authors");
  else if (n == "multihopqa")
    need_shared({opt.shared_dir + "/data/hotpotqa-distractor/dev.jsonl",
                 opt.shared_dir + "/data/embeddings/glove-50d-5k.json"},
                "HotpotQA distractor dev with GloVe vectors");
}

}  // namespace

std::vector<Planned> plan(const Options& opt) {
  std::vector<Planned> out;
  for (const auto& e : experiments_of(opt.paper)) {
    if (!opt.experiment.empty() && e.name != opt.experiment) continue;
    Planned p{e, {}, ""};
    find_inputs(p, opt);
    out.push_back(std::move(p));
  }
  if (out.empty()) {
    std::string names;
    for (const auto& e : experiments_of(opt.paper)) names += (names.empty() ? "" : ", ") + e.name;
    throw UsageError("--experiment", "'" + opt.experiment + "' is not an experiment of " +
                                         opt.paper + " (" + names + ")");
  }
  return out;
}

std::pair<double, double> wilson(double k, double n) {
  if (n <= 0) return {0.0, 1.0};
  const double z = 1.959963984540054, p = k / n, z2 = z * z;
  double c = (p + z2 / (2 * n)) / (1 + z2 / n);
  double h = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n);
  // Rounding leaves c - h a few ulps above 0 (or c + h below 1) at k = 0 (k = n).
  double lo = c - h < 1e-12 ? 0.0 : c - h, hi = c + h > 1 - 1e-12 ? 1.0 : c + h;
  return {lo, hi};
}

namespace detail {
store::RunConfig run_config(const std::string& pipeline, const nlohmann::json& config,
                            const reader::Reader& r, const Options& opt) {
  store::RunConfig rc;
  rc.pipeline = pipeline;
  rc.config = config;
  rc.tool_version = opt.tool_version;
  rc.model_path = opt.model_path;
  rc.model_sha256 = opt.model_sha256;
  rc.reader = r.describe();
  rc.chat_mode = r.chat_mode();
  return rc;
}

void note_unmeasured(const Options& opt, const std::string& stage, int64_t n, int64_t of,
                     const std::string& what) {
  if (n > 0 && opt.hooks.note)
    opt.hooks.note(stage + ": " + std::to_string(n) + " of " + std::to_string(of) + " " + what +
                   " unmeasured (a rerun with the same --store retries them)");
}

Value proportion(const std::string& method, const std::string& metric, double k, double n,
                 double scale) {
  auto [lo, hi] = wilson(k, n);
  Value v{method, metric, n > 0 ? scale * k / n : 0.0, scale * lo, scale * hi, size_t(n)};
  return v;
}
}  // namespace detail

Job make_job(const Planned& p, const Options& opt) {
  if (!p.missing.empty()) throw Error("reproduce " + p.info.paper + " " + p.info.name, p.missing);
  if (p.info.paper == "cnorm") return detail::cnorm_job(p, opt);
  if (p.info.paper == "sure") return detail::sure_job(p, opt);
  return detail::spotlight_job(p, opt);
}

JobResult run_job(reader::Reader& r, store::RunStore& st, const Job& job, const Options& opt) {
  JobResult out;
  out.values = job.run(r, st);
  const store::RunConfig rc = detail::run_config("reproduce",
                                                 {{"paper", job.planned.info.paper},
                                                  {"experiment", job.planned.info.name},
                                                  {"scale", scale_name(opt.scale)},
                                                  {"model_name", opt.model_name},
                                                  {"paper_model", opt.paper_model},
                                                  {"note", job.note},
                                                  {"setting", job.planned.info.setting}},
                                                 r, opt);
  out.run = st.begin_run(rc);
  // The values follow from the pipelines' stored rows, so a resumed run computes the same ones:
  // a row already stored is kept.
  auto done = st.done_keys(out.run);
  for (const auto& v : out.values) {
    if (done.count({v.method, v.metric})) continue;
    store::Result row;
    row.run = out.run;
    row.instance = v.method;
    row.variant = v.metric;
    if (!v.measured()) {
      // No value rather than a 0 the report would print beside the paper's; a resume that
      // measures it replaces the row.
      row.status = store::Status::unmeasured;
      row.error = "not measured: no item behind this value was measured";
      st.put(row);
      continue;
    }
    row.scores = {{"value", v.value}, {"n", double(v.n)}};
    if (v.lo && v.hi) {
      row.scores["ci_lo"] = *v.lo;
      row.scores["ci_hi"] = *v.hi;
    }
    st.put(row);
  }
  return out;
}

}  // namespace ragform::reproduce

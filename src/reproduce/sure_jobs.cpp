// SURE's experiments through its front door (pipelines/sure/sure.h): the rule-based perturbations
// (apply_rule, section 3.3) of each question's passage, evaluate_pairs (3.5, store-backed) and
// robustness_report (Table 1 rows; the category means of Figure 4 / Table 3).
#include <algorithm>
#include <map>
#include <memory>

#include "base/error.h"
#include "eval/datasets.h"
#include "pipelines/sure/sure.h"
#include "reproduce/jobs.h"

namespace ragform::reproduce::detail {

namespace {

// The paper's names (Table 1 rows, subsets, Table 3 columns) for the pipeline's.
const std::map<std::string, std::string>& table1_names() {
  static const std::map<std::string, std::string> m = {
      {"style/simple", "Simple"},
      {"style/complex", "Complex"},
      {"source/llm-generated", "LLM-Generated"},
      {"source/self-generated", "Self-Generated"},
      {"logic/reverse", "Reverse"},
      {"logic/random", "Random"},
      {"logic/llm-ranked", "LLM-Ranked"},
      {"format/json", "JSON"},
      {"format/html", "HTML"},
      {"format/yaml", "YAML"},
      {"format/markdown", "Markdown"},
      {"metadata/timestamp-pre", "Timestamp (pre)"},
      {"metadata/timestamp-post", "Timestamp (post)"},
      {"metadata/datasource-wiki", "Datasource (wiki)"},
      {"metadata/datasource-twitter", "Datasource (twitter)"}};
  return m;
}
std::string subset_name(const std::string& s) {
  return s == "K-G"   ? "Known-Golden"
         : s == "K-N" ? "Known-Noise"
         : s == "U-G" ? "Unknown-Golden"
         : s == "U-N" ? "Unknown-Noise"
                      : s;
}
std::string category_name(const std::string& c) {
  if (c == "metadata") return "Metadata";
  std::string o = c;
  if (!o.empty()) o[0] = char(o[0] - 'a' + 'A');
  return o;
}

// Each question with retrieved passages: its own gold passage first, then the gold passages of
// the next two questions (in file order) as retrieved noise, so that section 4.2's four cells
// (Known/Unknown x Golden/Noise) can all be filled from NQ-Open's oracle file.
std::vector<eval::QaRecord> with_noise(std::vector<eval::QaRecord> recs) {
  std::vector<eval::QaRecord> out;
  const size_t n = recs.size();
  for (size_t i = 0; i < n; ++i) {
    if (recs[i].ctxs.empty()) continue;
    eval::QaRecord r = recs[i];
    r.ctxs.resize(1);
    r.ctxs[0].id = r.id + "/0";
    for (size_t d = 1; d <= 2 && n > 2; ++d) {
      const auto& other = recs[(i + d) % n];
      if (other.ctxs.empty()) continue;
      eval::Context c = other.ctxs[0];
      c.id = other.id + "/0";
      c.isgold = false;
      c.hasanswer.reset();
      r.ctxs.push_back(std::move(c));
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The rule-based perturbations (section 3.3) of each prepared instance's passage.
std::vector<sure::Pair> make_pairs(const std::vector<nlohmann::ordered_json>& rows) {
  std::vector<sure::Pair> pairs;
  sure::RuleOptions ro;
  for (const auto& row : rows) {
    const auto& c = row.at("ctxs").at(0);
    const std::string title = c.value("title", ""), text = c.value("text", "");
    for (const auto& k : sure::all_kinds()) {
      if (k.needs != sure::NeedsReader::None) continue;  // style/source/llm-ranked need an LLM
      sure::Pair p =
          sure::pair_of(row.at("id").get<std::string>(), 0, row.at("question").get<std::string>(),
                        row.at("answers").get<std::vector<std::string>>(), {title, text}, k.kind);
      auto pt = sure::apply_rule(k.kind, {title, text}, ro, p.id);
      if (pt.failed) continue;
      p.perturbed = pt.text;
      p.note = pt.note;
      pairs.push_back(std::move(p));
    }
  }
  return pairs;
}

// Table 1 values of the report rows (percentages, as the paper prints them).
void table1_values(const std::vector<sure::ReportRow>& rows, std::vector<Value>& out) {
  for (const auto& row : rows) {
    const auto& r = row.rates;
    const double n = double(r.n);
    if (row.scope == "perturbation" && table1_names().count(row.key) && row.subset != "all") {
      const std::string m = table1_names().at(row.key), s = subset_name(row.subset);
      out.push_back(proportion(m, s + " RR", double(r.robust), n, 100));
      if (row.subset == "U-N") continue;  // the paper gives RR only for U-N
      out.push_back(proportion(m, s + " LR", double(r.lose), n, 100));
      out.push_back(proportion(m, s + " WR", double(r.win), n, 100));
      out.push_back(proportion(m, s + " Acc", double(r.pert_correct), n, 100));
    }
    // Org is the originals' accuracy: each original once, however many of the category's
    // perturbations it was paired with.
    if (row.scope == "category_pooled" && row.subset != "all" && row.subset != "U-N")
      out.push_back(proportion(category_name(row.key) + " (category)",
                               subset_name(row.subset) + " Org", double(r.originals_correct),
                               double(r.originals), 100));
  }
}

// Table 3: the category robustness rate (mean of its perturbations' RR).
void table3_values(const std::vector<sure::ReportRow>& rows, std::vector<Value>& out) {
  for (const auto& row : rows)
    if (row.scope == "category") {
      std::string c = row.key == "metadata" ? "Meta" : category_name(row.key);
      out.push_back({"string match", "RR " + c, 100 * row.rates.rr, std::nullopt, std::nullopt,
                     size_t(row.rates.n)});
    }
}

}  // namespace

Job sure_job(const Planned& p, const Options& opt) {
  const Sizes& z = sizes_of(opt.scale);
  const bool trivial = p.info.name == "sig-trivial";
  eval::LoadOptions lo;
  lo.limit = z.sure_questions;
  const std::string input = p.inputs.at(0);
  auto recs = eval::load_qa_file(input, lo).records;
  if (!trivial) recs = with_noise(std::move(recs));  // SIG_Trivial brings its own passages
  if (recs.empty()) throw Error("reproduce", "no questions with passages in " + input);
  sure::PrepareOptions po;  // temperature 0.1, 32 tokens (Appendix D), seed 0
  po.per_cell = z.sure_per_cell ? z.sure_per_cell : recs.size();
  const size_t kinds = 10;  // the rule-based perturbations
  Job j;
  j.planned = p;
  j.max_tokens = po.max_tokens;
  // Closed-book answers (prepare), then per instance its closed-book, original and perturbed
  // prompts. A question is Known or Unknown, so it fills at most two cells (its Golden and one
  // Noise passage): at most min(4 x per_cell, 2 x questions) instances.
  const size_t instances = std::min(4 * po.per_cell, 2 * recs.size());
  j.prompts = recs.size() + instances * (2 + kinds);
  j.note =
      std::string(
          "rule-based perturbations only (logic reverse/random, 4 formats, 4 "
          "metadata), no NLI filter; ") +
      (trivial ? ""
               : "NQ-Open gold passages stand in for SURE_Wiki, other questions' "
                 "gold passages for the retrieved noise") +
      (opt.scale == Scale::Paper
           ? std::string()
           : std::string("; ") + scale_name(opt.scale) + " scale: " + std::to_string(recs.size()) +
                 " questions, " + std::to_string(po.per_cell) + " instances per cell");
  const auto prompts = sure::load_prompts(opt.sure_prompts_dir);
  j.sample_prompt =
      sure::rag_prompt(prompts, "(Title: " + recs[0].ctxs[0].title + ") " + recs[0].ctxs[0].text,
                       recs[0].question, false);
  j.run = [=](reader::Reader& r, store::RunStore& st) {
    // Section 4.2: Known/Unknown by the closed-book answer, Golden/Noise by the passage.
    const auto origin = common::origin_of(r, opt.tool_version, opt.model_path, opt.model_sha256);
    sure::PrepareOptions prep = po;
    prep.origin = origin;
    prep.hooks = opt.hooks;
    const auto prepared = sure::run_prepare(&r, st, prompts, recs, prep);
    note_unmeasured(opt, "sure prepare", int64_t(prepared.unmeasured), int64_t(prepared.questions),
                    "closed-book rows");
    auto pairs = make_pairs(prepared.rows);
    if (pairs.empty()) throw Error("reproduce", "no instances prepared from " + input);
    sure::EvalRunOptions eo;  // temperature 0.1, 32 tokens (Appendix D)
    // sure eval's identity (its pairs included), marked as this experiment's.
    eo.tag["reproduce"] = p.info.name;
    eo.origin = origin;
    eo.hooks = opt.hooks;
    const auto evaluated = sure::run_eval(r, st, prompts, pairs, eo);
    const sure::EvalStats& stats = evaluated.stats;
    note_unmeasured(opt, "sure eval", stats.pairs_unmeasured,
                    stats.pairs_measured + stats.pairs_unmeasured, "pairs");
    auto rows = sure::robustness_report(evaluated.outcomes, 0, 1000);
    std::vector<Value> out;
    if (trivial)
      table3_values(rows, out);
    else
      table1_values(rows, out);
    return out;
  };
  return j;
}

}  // namespace ragform::reproduce::detail

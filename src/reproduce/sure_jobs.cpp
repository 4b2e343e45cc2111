// SURE's experiments through its front door (pipelines/sure/sure.h): the rule-based perturbations
// (apply_rule, section 3.3) of each question's passage, evaluate_pairs (3.5, store-backed) and
// robustness_report (Table 1 rows; the category means of Figure 4 / Table 3).
#include <map>

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

std::vector<sure::Pair> make_pairs(const std::vector<eval::QaRecord>& recs) {
  std::vector<sure::Pair> pairs;
  sure::RuleOptions ro;
  for (const auto& r : recs) {
    if (r.ctxs.empty()) continue;
    const auto& c = r.ctxs[0];  // the question's (gold) passage
    for (const auto& k : sure::all_kinds()) {
      if (k.needs != sure::NeedsReader::None) continue;  // style/source/llm-ranked need an LLM
      sure::Pair p;
      p.instance = r.id;
      p.doc = 0;
      p.id = r.id + "#0";
      p.perturbation = k.name;
      p.category = k.category;
      p.question = r.question;
      p.answers = r.answers;
      p.title = c.title;
      p.original = c.text;
      p.embeds_title = k.embeds_title;
      auto pt = sure::apply_rule(k.kind, {c.title, c.text}, ro, p.id);
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
    if (row.scope == "category_pooled" && row.subset != "all" && row.subset != "U-N")
      out.push_back(proportion(category_name(row.key) + " (category)",
                               subset_name(row.subset) + " Org", double(r.org_correct), n, 100));
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
  const bool smoke = opt.scale == Scale::Smoke, trivial = p.info.name == "sig-trivial";
  eval::LoadOptions lo;
  lo.limit = smoke ? 3 : 0;
  const std::string input = p.inputs.at(0);
  auto recs = eval::load_qa_file(input, lo).records;
  auto pairs = make_pairs(recs);
  if (pairs.empty()) throw Error("reproduce", "no perturbation pairs from " + input);
  Job j;
  j.planned = p;
  j.max_tokens = 32;
  j.prompts = recs.size() * 2 + pairs.size();  // closed-book, original, perturbed
  j.note =
      std::string(
          "rule-based perturbations only (logic reverse/random, 4 formats, 4 "
          "metadata); ") +
      (trivial ? "" : "NQ-Open gold passages stand in for SURE_Wiki, so every pair is Golden") +
      (smoke ? "; smoke scale: " + std::to_string(recs.size()) + " questions" : "");
  const auto prompts = sure::load_prompts(opt.sure_prompts_dir);
  j.sample_prompt =
      sure::rag_prompt(prompts, sure::grounding_original(pairs[0]), pairs[0].question, false);
  j.run = [=](reader::Reader& r, store::RunStore& st) {
    sure::EvalOptions eo;  // temperature 0.1, 32 tokens (Appendix D)
    store::RunConfig rc;
    rc.pipeline = "sure eval";
    rc.config = {{"temperature", eo.temperature},
                 {"max_tokens", eo.max_tokens},
                 {"chain_of_note", false},
                 {"prompts",
                  {{"qa_prompt", prompts.identity("qa_prompt")},
                   {"instruction", prompts.identity("qa_instruction")},
                   {"closed_book", prompts.identity("closed_book")}}},
                 {"grading", "substring_match"},
                 {"reproduce", p.info.name}};
    rc.tool_version = opt.tool_version;
    rc.model_path = opt.model_path;
    rc.model_sha256 = opt.model_sha256;
    rc.reader = r.describe();
    rc.chat_mode = r.chat_mode();
    int64_t run = st.begin_run(rc);
    sure::EvalStats stats;
    if (opt.hooks.begin) opt.hooks.begin("sure eval", recs.size() * 2 + pairs.size());
    size_t last = 0;
    auto outcomes =
        sure::evaluate_pairs(r, st, run, prompts, pairs, eo, stats, [&](size_t done, size_t) {
          if (opt.hooks.advance && done > last) opt.hooks.advance(done - last);
          last = done;
        });
    if (opt.hooks.end) opt.hooks.end();
    auto rows = sure::robustness_report(outcomes, 0, 1000);
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

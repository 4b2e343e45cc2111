// SpotlightRAG's experiment through its runners (pipelines/spotlight/run.h: run_eval's span
// scoring, top-K selection and eq. (10) prompt, stored; then run_generate's answer to each stored
// prompt, graded by exact match as the paper's Tables 1-3, EM in %). Without training: the paper's
// "w/o Train" column (frozen retriever); the token vectors are GloVe's (docs/reproduce.md).
#include "base/error.h"
#include "eval/datasets.h"
#include "pipelines/spotlight/spotlight.h"
#include "reproduce/jobs.h"

namespace ragform::reproduce::detail {

Job spotlight_job(const Planned& p, const Options& opt) {
  const std::string input = p.inputs.at(0), vectors = p.inputs.at(1);
  eval::LoadOptions lo;
  lo.limit = sizes_of(opt.scale).spotlight_items;
  auto recs = eval::load_qa_file(input, lo).records;
  if (recs.empty()) throw Error("reproduce", "no questions in " + input);
  Job j;
  j.planned = p;
  j.max_tokens = 16;
  j.prompts = recs.size();
  // The eq. (10) prompt of the first question's first K = 6 sentences (the selection's size).
  std::vector<std::string> lines;
  for (const auto& c : recs[0].ctxs)
    for (const auto& sent : c.sentences)
      if (lines.size() < 6) lines.push_back(spotlight::rel_token(0.5) + " " + sent);
  j.sample_prompt = spotlight::build_prompt(recs[0].question, lines);
  j.note = std::string(
               "HotpotQA distractor dev (multi-hop) stands in for MultiHopQA; GloVe token "
               "vectors instead of the trained ColBERT-style scorer") +
           (opt.scale == Scale::Paper ? std::string()
                                      : std::string("; ") + scale_name(opt.scale) + " scale: " +
                                            std::to_string(recs.size()) + " questions");
  j.run = [=](reader::Reader& r, store::RunStore& st) {
    auto wv = spotlight::WordVectors::load(vectors);
    spotlight::StaticEncoder enc(wv);
    spotlight::RunOptions so;  // K = 6 (section 4.3)
    // k = 5, lambda = 0.5, alpha uniform (the paper's 1/n), 512-token contexts
    so.params = spotlight::paper_score_params();
    so.input_path = input;
    so.vectors_path = vectors;
    so.origin.tool_version = opt.tool_version;
    so.hooks = opt.hooks;
    auto sum = spotlight::run_eval(enc, st, recs, so);
    // The generator's answers to the stored selection prompts, graded by the pipeline's answer
    // step (EM of the first non-empty line; prompt tokens and generation time in each row), as
    // `spotlight eval --generate` grades them.
    spotlight::GenerateOptions go;
    go.spotlight_run = sum.run;
    go.max_tokens = j.max_tokens;
    go.origin = common::origin_of(r, opt.tool_version, opt.model_path, opt.model_sha256);
    go.hooks = opt.hooks;
    const spotlight::GenerateSummary g = spotlight::run_generate(r, st, recs, go);
    return std::vector<Value>{
        proportion("SpotlightRAG", "EM (w/o training)", g.correct, g.graded, 100)};
  };
  return j;
}

}  // namespace ragform::reproduce::detail

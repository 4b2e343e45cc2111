// SpotlightRAG's experiment through its runner (pipelines/spotlight/run.h run_eval: span scoring,
// top-K selection and the eq. (10) prompt, stored), then the generator's answer to each stored
// prompt, graded by exact match as the paper's Tables 1-3 (EM, %). Without training: the paper's
// "w/o Train" column (frozen retriever); the token vectors are GloVe's (docs/reproduce.md).
#include "base/error.h"
#include "eval/datasets.h"
#include "pipelines/spotlight/spotlight.h"
#include "reader/measured.h"
#include "reproduce/jobs.h"
#include "text/metrics.h"

namespace ragform::reproduce::detail {

Job spotlight_job(const Planned& p, const Options& opt) {
  const bool smoke = opt.scale == Scale::Smoke;
  const std::string input = p.inputs.at(0), vectors = p.inputs.at(1);
  eval::LoadOptions lo;
  lo.limit = smoke ? 5 : 0;
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
           (smoke ? "; smoke scale: " + std::to_string(recs.size()) + " questions" : "");
  j.run = [=](reader::Reader& r, store::RunStore& st) {
    auto wv = spotlight::WordVectors::load(vectors);
    spotlight::StaticEncoder enc(wv);
    spotlight::RunOptions so;                     // K = 6 (section 4.3)
    so.params = spotlight::paper_score_params();  // k = 5, lambda = 0.5, IDF, 512-token contexts
    so.input_path = input;
    so.vectors_path = vectors;
    so.tool_version = opt.tool_version;
    auto sum = spotlight::run_eval(st, recs, enc, so);
    // The generator's answers to the stored selection prompts, one row per question, generated
    // and graded by the pipeline's answer step (stop at the first newline, EM of that line), as
    // `spotlight eval --generate` grades them. "grading" names that rule so that rows graded on
    // the whole output (earlier versions) are never resumed into this run.
    const int64_t run = st.begin_run(run_config("spotlight generate",
                                                {{"spotlight_run", sum.run},
                                                 {"max_tokens", j.max_tokens},
                                                 {"grading", "em of the first line"}},
                                                r, opt));
    auto done = st.done_keys(run);
    std::map<std::string, std::vector<std::string>> answers;
    for (const auto& rec : recs) answers[rec.id] = rec.answers;
    std::vector<store::Result> todo;
    for (const auto& row : st.results(sum.run))
      if (row.variant == "spotlight" && !row.prompt.empty() && answers.count(row.instance) &&
          !done.count({row.instance, "spotlight"}))
        todo.push_back(row);
    if (opt.hooks.begin) opt.hooks.begin("spotlight generate", todo.size());
    reader::MeasuredTally tally;
    tally.measured(int64_t(done.size()));
    for (const auto& row : todo) {
      store::Result out;
      out.run = run;
      out.instance = row.instance;
      out.variant = "spotlight";
      out.prompt = row.prompt;
      try {
        const spotlight::GradedAnswer g =
            spotlight::answer_and_grade(r, row.prompt, answers[row.instance], j.max_tokens);
        out.output = g.text;
        out.correct = g.em > 0.5;
        out.scores = {{"em", g.em}};
        tally.measured();
      } catch (const Error& e) {
        out.status = store::Status::unmeasured;
        out.error = e.what();
        tally.failed(e);
      }
      st.put(out);
      if (opt.hooks.advance) opt.hooks.advance(1);
      tally.fail_fast("spotlight generate");
    }
    if (opt.hooks.end) opt.hooks.end();
    tally.check("spotlight generate");
    note_unmeasured(opt, "spotlight generate", tally.unmeasured(),
                    tally.unmeasured() + tally.measured_count(), "questions");
    double k = 0, n = 0;
    for (const auto& row : st.results(run))
      if (row.status == store::Status::ok && row.correct) {
        n += 1;
        k += *row.correct ? 1 : 0;
      }
    return std::vector<Value>{proportion("SpotlightRAG", "EM (w/o training)", k, n, 100)};
  };
  return j;
}

}  // namespace ragform::reproduce::detail

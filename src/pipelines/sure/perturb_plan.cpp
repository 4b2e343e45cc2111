#include "pipelines/sure/perturb_plan.h"

#include <algorithm>

namespace ragform::sure {

Pair pair_of(const std::string& instance, int doc, const std::string& question,
             const std::vector<std::string>& answers, const Document& d, Kind k) {
  Pair p;
  p.instance = instance;
  p.doc = doc;
  p.id = instance + "#" + std::to_string(doc);
  p.perturbation = info(k).name;
  p.category = info(k).category;
  p.question = question;
  p.answers = answers;
  p.title = d.title;
  p.original = d.text;
  p.embeds_title = info(k).embeds_title;
  return p;
}

PerturbPlan plan_pairs(const std::vector<eval::QaRecord>& recs, const std::vector<Kind>& active,
                       int max_docs, const RuleOptions& ro) {
  PerturbPlan pl;
  for (const auto& r : recs) {
    if (r.ctxs.empty()) ++pl.no_ctx;
    size_t nd = r.ctxs.size();
    if (max_docs > 0) nd = std::min(nd, static_cast<size_t>(max_docs));
    for (size_t di = 0; di < nd; ++di) {
      const Document d{r.ctxs[di].title, r.ctxs[di].text};
      for (Kind k : active) {
        Pair p = pair_of(r.id, static_cast<int>(di), r.question, r.answers, d, k);
        if (info(k).needs == NeedsReader::None) {
          Perturbation pt = apply_rule(k, d, ro, p.id);
          p.perturbed = pt.text;
          p.note = pt.note;
        } else if (info(k).needs == NeedsReader::UnderTest) {
          pl.test_reqs.push_back({k, d, r.question});
          pl.test_idx.push_back(pl.pairs.size());
        } else {
          pl.pert_reqs.push_back({k, d, r.question});
          pl.pert_idx.push_back(pl.pairs.size());
        }
        pl.pairs.push_back(std::move(p));
      }
    }
  }
  return pl;
}

void apply_llm(reader::Reader& rd, const PromptSet& prompts, const LlmOptions& opt,
               const std::vector<LlmRequest>& reqs, const std::vector<size_t>& idx,
               std::vector<Pair>& pairs, const std::function<void(size_t)>& progress) {
  const size_t step = std::max<size_t>(1, opt.batch);
  reader::MeasuredTally tally;  // over every chunk: the run's verdict, not a chunk's
  for (size_t b = 0; b < reqs.size(); b += step) {
    const size_t e = std::min(reqs.size(), b + step);
    const std::vector<LlmRequest> chunk(reqs.begin() + static_cast<long>(b),
                                        reqs.begin() + static_cast<long>(e));
    auto res = run_llm_perturbations(rd, prompts, chunk, opt, &tally);
    for (size_t i = b; i < e; ++i) {
      Pair& p = pairs[idx[i]];
      p.perturbed = res[i - b].text;
      p.note = res[i - b].note;
      p.failed = res[i - b].failed;
    }
    if (progress) progress(e);
  }
  tally.check("sure perturb");
}

}  // namespace ragform::sure

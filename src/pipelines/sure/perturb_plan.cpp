#include "pipelines/sure/perturb_plan.h"

#include <algorithm>

#include "base/error.h"

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

ReaderNeeds reader_needs(const std::vector<Kind>& kinds) {
  ReaderNeeds n;
  for (Kind k : kinds) {
    n.under_test |= info(k).needs == NeedsReader::UnderTest;
    n.perturber |= info(k).needs == NeedsReader::Perturber;
  }
  return n;
}

namespace {

reader::Reader* reader_of(Kind k, const PerturbReaders& rd) {
  switch (info(k).needs) {
    case NeedsReader::None:
      return nullptr;
    case NeedsReader::Perturber:
      return rd.perturber ? rd.perturber : rd.under_test;
    case NeedsReader::UnderTest:
      return rd.under_test;
  }
  return nullptr;
}

}  // namespace

std::vector<Kind> runnable_kinds(const std::vector<Kind>& kinds, const PerturbReaders& rd,
                                 std::vector<Kind>* missing) {
  std::vector<Kind> out;
  for (Kind k : kinds) {
    if (info(k).needs == NeedsReader::None || reader_of(k, rd))
      out.push_back(k);
    else if (missing)
      missing->push_back(k);
  }
  return out;
}

KindNeedsReader::KindNeedsReader(Kind k)
    : UsageError("sure perturb",
                 std::string(info(k).name) + (info(k).needs == NeedsReader::UnderTest
                                                  ? " needs the reader under test"
                                                  : " needs a reader (the perturbing reader, or "
                                                    "the reader under test)")),
      kind(k) {}

namespace {
// Whether `name` is one of the comma-separated entries of `list` (not a category it belongs to).
bool named_in(const std::string& list, const std::string& name) {
  for (size_t b = 0; b <= list.size();) {
    const size_t e = std::min(list.find(',', b), list.size());
    if (list.compare(b, e - b, name) == 0) return true;
    b = e + 1;
  }
  return false;
}
}  // namespace

std::vector<Kind> kinds_to_run(const std::string& list, const PerturbReaders& rd,
                               std::vector<Kind>* skipped) {
  std::vector<Kind> missing;
  std::vector<Kind> out = runnable_kinds(select_kinds(list), rd, &missing);
  for (Kind k : missing)
    if (named_in(list, info(k).name)) throw KindNeedsReader(k);
  if (skipped) *skipped = std::move(missing);
  return out;
}

bool any_reader_kind(const std::vector<Kind>& kinds) {
  const ReaderNeeds n = reader_needs(kinds);
  return n.under_test || n.perturber;
}

PerturbResult run_perturb(const std::vector<eval::QaRecord>& records,
                          const std::vector<Kind>& active, const PerturbReaders& rd,
                          const PromptSet& prompts, const PerturbOptions& opt) {
  PerturbPlan pl = plan_pairs(records, active, opt.max_docs, opt.rules);
  LlmOptions lo = opt.llm;
  lo.seed = opt.rules.seed;
  const size_t n_reqs = pl.pert_reqs.size() + pl.test_reqs.size();
  if (n_reqs > 0) {
    const common::Stage stage(opt.hooks, "sure perturb", n_reqs);
    // The perturber's kinds first, then the reader under test's.
    for (const bool perturber : {true, false}) {
      const auto& reqs = perturber ? pl.pert_reqs : pl.test_reqs;
      if (reqs.empty()) continue;
      reader::Reader* r = perturber ? (rd.perturber ? rd.perturber : rd.under_test) : rd.under_test;
      if (!r) throw Error("sure perturb", "a reader-written kind without its reader");
      size_t last = 0;
      apply_llm(*r, prompts, lo, reqs, perturber ? pl.pert_idx : pl.test_idx, pl.pairs,
                [&](size_t done) {
                  stage.add(done - last);
                  last = done;
                });
    }
  }
  PerturbResult out;
  out.no_ctx = pl.no_ctx;
  for (const auto& p : pl.pairs) out.failed += p.failed;
  out.pairs = std::move(pl.pairs);
  return out;
}

}  // namespace ragform::sure

// Every SURE stage driven by the scripted reader (scripted_reader.h) on real NQ passages: perturb
// (15 kinds) -> filter (failed / answers / bidirectional NLI) -> instances + eval (run store,
// resume, unmeasured rows) -> RR/WR/LR, with non-zero counts at each step.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "eval/datasets.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/metrics.h"
#include "pipelines/sure/pairs.h"
#include "pipelines/sure/perturb_llm.h"
#include "pipelines/sure/perturb_rules.h"
#include "pipelines/sure/preserve.h"
#include "pipelines/sure/prompts.h"
#include "pipelines/sure/scripted_reader.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;
using namespace ragform::sure;

TEST(SurePipeline, ScriptedReaderEndToEnd) {
  REQUIRE_SHARED(path, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  eval::LoadOptions lo;
  lo.limit = 40;
  auto recs = eval::load_qa_file(path.string(), lo).records;
  ASSERT_EQ(recs.size(), 40u);
  ragform::sure::testing::ScriptedReader rd;
  for (const auto& r : recs) rd.answers[r.question] = r.answers;
  PromptSet prompts = load_prompts();

  // Golden = the record's own passage; Noise = the next record's passage (every 7th titled with
  // the answer, so templates that embed the title make it gain the answer).
  std::vector<Pair> pairs;
  std::vector<LlmRequest> reqs;
  std::vector<size_t> req_idx;
  RuleOptions ro;
  ro.seed = 3;
  for (size_t i = 0; i < recs.size(); ++i) {
    std::vector<eval::Context> docs = {recs[i].ctxs[0], recs[(i + 1) % recs.size()].ctxs[0]};
    if (i % 7 == 0) docs[1].title = recs[i].answers[0];
    for (size_t di = 0; di < docs.size(); ++di) {
      Document d{docs[di].title, docs[di].text};
      for (const auto& k : all_kinds()) {
        Pair p;
        p.instance = recs[i].id;
        p.doc = static_cast<int>(di);
        p.id = p.instance + "#" + std::to_string(di);
        p.perturbation = k.name;
        p.category = k.category;
        p.question = recs[i].question;
        p.answers = recs[i].answers;
        p.title = d.title;
        p.original = d.text;
        p.embeds_title = k.embeds_title;
        if (k.needs == NeedsReader::None) {
          p.perturbed = apply_rule(k.kind, d, ro, p.id).text;
        } else {
          reqs.push_back({k.kind, d, p.question});
          req_idx.push_back(pairs.size());
        }
        pairs.push_back(p);
      }
    }
  }
  auto res = run_llm_perturbations(rd, prompts, reqs, LlmOptions{});
  size_t rank_fallbacks = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    Pair& p = pairs[req_idx[i]];
    p.perturbed = res[i].text;
    p.note = res[i].note;
    p.failed = res[i].failed;
    if (p.perturbation == "logic/llm-ranked" && !p.note.empty() && p.note != "single sentence")
      ++rank_fallbacks;
  }
  ASSERT_EQ(pairs.size(), 40u * 2 * 15);
  EXPECT_GT(rank_fallbacks, 0u);

  // JSONL round trip of every pair.
  for (const auto& p : pairs) {
    Pair q = pair_from_json(nlohmann::json::parse(pair_to_json(p).dump()), "t");
    EXPECT_EQ(q.perturbed, p.perturbed);
    EXPECT_EQ(q.embeds_title, p.embeds_title);
  }

  FilterCounts fc;
  auto verdicts = filter_pairs(pairs, &rd, prompts, FilterOptions{}, fc);
  std::printf("filter %s\n", fc.to_json().dump().c_str());
  EXPECT_EQ(fc.input, 1200);
  EXPECT_GT(fc.failed_perturbation, 0);
  EXPECT_GT(fc.golden_lost_answer, 0);
  EXPECT_GT(fc.noise_gained_answer, 0);
  EXPECT_GT(fc.nli_forward_not_entailed, 0);
  EXPECT_GT(fc.nli_backward_not_entailed, 0);
  EXPECT_EQ(fc.input, fc.failed_perturbation + fc.golden_lost_answer + fc.noise_gained_answer +
                          fc.nli_forward_not_entailed + fc.nli_backward_not_entailed +
                          fc.nli_unmeasured + fc.kept);
  std::vector<Pair> kept;
  for (size_t i = 0; i < pairs.size(); ++i)
    if (verdicts[i].keep) kept.push_back(pairs[i]);
  ASSERT_GE(kept.size(), 50u);

  // Evaluation with one simulated remote failure, then a resume that fills it in.
  auto dir = ragform::testing::temp_dir("sure_pipeline");
  store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  store::RunConfig rc;
  rc.pipeline = "sure eval";
  rc.reader = rd.describe();
  int64_t run = st.begin_run(rc);
  rd.fail_marker = kept[5].question;
  EvalStats s1;
  auto out1 = evaluate_pairs(rd, st, run, prompts, kept, EvalOptions{}, s1);
  EXPECT_GT(s1.unmeasured, 0);
  EXPECT_GT(s1.pairs_unmeasured, 0);
  EXPECT_EQ(static_cast<int64_t>(out1.size()), s1.pairs_measured);
  EXPECT_GT(st.counts(run).unmeasured, 0);

  rd.fail_marker.clear();
  EvalStats s2;
  int calls_before = rd.calls;
  auto out2 = evaluate_pairs(rd, st, run, prompts, kept, EvalOptions{}, s2);
  EXPECT_EQ(s2.unmeasured, 0);
  EXPECT_GT(s1.deferred, 0);  // perturbed rows of the failed question wait for the resume
  EXPECT_EQ(s2.deferred, 0);
  // Only the unmeasured and deferred rows are computed on resume.
  EXPECT_EQ(s2.generated, s1.unmeasured + s1.deferred);
  EXPECT_EQ(rd.calls - calls_before, s1.unmeasured + s1.deferred);
  EXPECT_EQ(out2.size(), kept.size());

  // Every perturbed row carries its prompt, both outputs and its label.
  size_t labelled = 0;
  st.for_each_result(run, [&](const store::Result& r) {
    if (r.variant == "closed-book" || r.variant == "original") return;
    ASSERT_EQ(r.status, store::Status::ok);
    EXPECT_FALSE(r.prompt.empty());
    ASSERT_TRUE(r.extra.contains("label"));
    ++labelled;
    EXPECT_TRUE(r.extra.contains("original_output"));
    EXPECT_TRUE(r.extra.contains("subset"));
    EXPECT_EQ(r.extra["label"].get<int>(),
              int(r.extra["original_correct"].get<bool>()) - int(*r.correct));
  });
  EXPECT_EQ(labelled, kept.size());

  // Non-zero subsets and changes.
  std::map<std::string, int> subsets;
  int win = 0, lose = 0;
  for (const auto& o : out2) {
    ++subsets[to_string(o.subset)];
    win += o.label() == -1;
    lose += o.label() == 1;
  }
  for (const char* s : {"K-G", "K-N", "U-G", "U-N"}) EXPECT_GT(subsets[s], 0) << s;
  EXPECT_GT(win, 0);
  EXPECT_GT(lose, 0);
  auto report = robustness_report(out2);
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(report[0].scope, "overall");
  EXPECT_EQ(report[0].rates.n, static_cast<int64_t>(out2.size()));
  EXPECT_EQ(report[0].rates.lose, lose);
  EXPECT_EQ(report[0].rates.win, win);
  // outcomes_from_store gives the same outcomes from the rows alone.
  EXPECT_EQ(outcomes_from_store(st, run).size(), out2.size());

  // LLM-as-judge as the alternative Y (its own run): the scripted judge agrees with string
  // containment, so the labels are the same; judge outputs are stored with the rows.
  store::RunConfig rj = rc;
  rj.config["grading"] = "judge";
  int64_t run_j = st.begin_run(rj);
  ASSERT_NE(run_j, run);
  EvalOptions ej;
  ej.judge = &rd;
  EvalStats sj;
  auto outj = evaluate_pairs(rd, st, run_j, prompts, kept, ej, sj);
  ASSERT_EQ(outj.size(), out2.size());
  auto rj_rates = compute_rates(outj), rs_rates = compute_rates(out2);
  EXPECT_EQ(rj_rates.lose, rs_rates.lose);
  EXPECT_EQ(rj_rates.win, rs_rates.win);
  size_t judged = 0;
  st.for_each_result(run_j,
                     [&](const store::Result& r) { judged += r.extra.contains("judge_output"); });
  EXPECT_EQ(judged, st.results(run_j).size());
}

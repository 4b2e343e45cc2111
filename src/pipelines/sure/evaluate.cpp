#include "pipelines/sure/evaluate.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <set>

#include "base/error.h"
#include "base/stable_hash.h"
#include "pipelines/sure/taxonomy.h"
#include "reader/measured.h"
#include "reader/prefill_meter.h"
#include "reader/provenance.h"
#include "reader/scoped_steering.h"
#include "text/metrics.h"

namespace ragform::sure {

std::string rag_prompt(const PromptSet& prompts, const std::string& grounding,
                       const std::string& question, bool chain_of_note) {
  return fill(prompts.get("qa_prompt"),
              {{"instruction", prompts.get(chain_of_note ? "chain_of_note" : "qa_instruction")},
               {"document", grounding},
               {"question", question}});
}

std::string rag_prompt(const PromptSet& prompts, const std::string& grounding,
                       const std::string& question, bool chain_of_note,
                       std::vector<runtime::CharSpan>& document_spans) {
  std::vector<std::pair<size_t, size_t>> at;
  std::string p =
      fill(prompts.get("qa_prompt"),
           {{"instruction", prompts.get(chain_of_note ? "chain_of_note" : "qa_instruction")},
            {"document", grounding},
            {"question", question}},
           "document", at);
  document_spans.clear();
  for (const auto& [b, e] : at)
    if (e > b) document_spans.push_back({b, e});
  return p;
}

reader::SteeringParams gold_emphasis(const std::vector<runtime::CharSpan>& document_spans,
                                     double factor) {
  reader::SteeringParams s;
  if (factor == 1.0 || document_spans.empty()) return s;
  s.rule = runtime::Steering::Rescale;
  s.value = float(factor);
  s.spans = document_spans;
  return s;
}

std::string closed_book_prompt(const PromptSet& prompts, const std::string& question) {
  return fill(prompts.get("closed_book"), {{"question", question}});
}

bool grade(const std::string& response, const std::vector<std::string>& answers,
           bool chain_of_note) {
  std::string r = response;
  if (chain_of_note) {
    size_t at = r.rfind("Answer:");
    if (at != std::string::npos) r = r.substr(at + 7);
  }
  return text::substring_match(r, answers) > 0;
}

bool parse_judge_verdict(const std::string& judge_output) {
  std::string low;
  for (char c : judge_output) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t at = low.rfind("verdict:");
  if (at != std::string::npos) {
    size_t i = at + 8;
    while (i < low.size() && (low[i] == ' ' || low[i] == '*' || low[i] == '"')) ++i;
    if (low.compare(i, 9, "incorrect") == 0) return false;
    if (low.compare(i, 7, "correct") == 0) return true;
  }
  throw Error("sure judge", "no 'Verdict: correct|incorrect' in the judge's answer");
}

std::string judge_prompt(const PromptSet& prompts, const std::string& question,
                         const std::vector<std::string>& answers, const std::string& response) {
  std::string gold;
  for (size_t i = 0; i < answers.size(); ++i) gold += (i ? "; " : "") + answers[i];
  return fill(prompts.get("judge"),
              {{"question", question}, {"answers", gold}, {"response", response}});
}

uint64_t row_seed(uint64_t seed, std::string_view instance, std::string_view variant) {
  // FNV-1a of "instance \0 variant" continued byte by byte (base/stable_hash.h), then SplitMix64.
  uint64_t h = fnv1a64(variant, fnv1a64(std::string_view("\0", 1), fnv1a64(instance)));
  return splitmix64_mix(seed ^ h) >> 33;
}

namespace {

struct Job {
  std::string instance, variant, prompt;
  const std::vector<std::string>* answers = nullptr;
  const std::string* question = nullptr;
  nlohmann::json extra = nlohmann::json::object();
  int max_tokens = 32;
  reader::SteeringParams steer = {};  // off but for EvalOptions::emphasis_gold's rows
};

// A RAG job (original or perturbed row): its prompt, and with emphasis_gold the steering of the
// document's bytes, which the row records as "steer_spans" ("B:E,...", as --steer-spans takes).
Job rag_job(const PromptSet& prompts, const std::string& instance, const std::string& variant,
            const std::string& grounding, const Pair& p, const EvalOptions& opt) {
  std::vector<runtime::CharSpan> doc;
  Job j{instance, variant, rag_prompt(prompts, grounding, p.question, opt.chain_of_note, doc),
        &p.answers, &p.question};
  j.max_tokens = opt.chain_of_note ? opt.con_max_tokens : opt.max_tokens;
  j.steer = gold_emphasis(doc, opt.emphasis_gold);
  if (j.steer.active()) {
    std::string t;
    for (const auto& sp : j.steer.spans)
      t += (t.empty() ? "" : ",") + std::to_string(sp.begin) + ":" + std::to_string(sp.end);
    j.extra["steer_spans"] = t;
  }
  return j;
}

// The end of the batch that starts at b: up to B unsteered jobs, or one steered job alone (the
// reader takes one steering per call, and each prompt's document has its own bytes).
size_t batch_end(const std::vector<Job>& jobs, size_t b, size_t B) {
  if (jobs[b].steer.active()) return b + 1;
  size_t e = b + 1;
  while (e < jobs.size() && e < b + B && !jobs[e].steer.active()) ++e;
  return e;
}

// Runs jobs in batches; rows are written as each batch finishes. Every row counts in `tally`
// (reader/measured.h), and a run that can no longer measure anything stops between batches.
void run_jobs(reader::Reader& reader, store::RunStore& store, int64_t run, std::vector<Job>& jobs,
              const EvalOptions& opt, EvalStats& stats, reader::MeasuredTally& tally,
              const std::function<void(Job&, store::Result&)>& finish, const common::Stage& stage) {
  reader::GenerateParams gp;
  gp.temperature = opt.temperature;
  gp.seed = opt.seed;
  size_t B = std::max<size_t>(1, opt.batch);
  for (size_t b = 0, e = 0; b < jobs.size(); b = e) {
    e = batch_end(jobs, b, B);
    std::vector<std::string> ps;
    gp.seeds.clear();
    for (size_t i = b; i < e; ++i) {
      ps.push_back(jobs[i].prompt);
      gp.seeds.push_back(row_seed(opt.seed, jobs[i].instance, jobs[i].variant));
    }
    gp.max_tokens = jobs[b].max_tokens;
    std::vector<reader::Attempt> gens;
    if (jobs[b].steer.active()) {
      reader::ScopedSteering steered(reader, jobs[b].steer);
      gens = reader::generate_each(reader, ps, gp);
    } else {
      gens = reader::generate_each(reader, ps, gp);
    }
    double batch_ms = 0;
    for (size_t i = b; i < e; ++i) {
      Job& j = jobs[i];
      const reader::Attempt& at = gens[i - b];
      batch_ms = at.batched ? at.ms : batch_ms + at.ms;
      store::Result r;
      r.run = run;
      r.instance = j.instance;
      r.variant = j.variant;
      r.prompt = j.prompt;
      r.extra = j.extra;
      r.timings_ms[at.batched ? "batch_total" : "total"] = at.ms;
      std::string error = at.error;
      int status = at.status;
      if (at.gen) {
        try {
          const reader::Generation& g = *at.gen;
          r.output = g.text;
          r.prompt_tokens = g.prompt_tokens;
          r.extra["finish_reason"] = g.finish_reason;
          finish(j, r);  // grading; a judge's failure also leaves the row unmeasured
        } catch (const Error& ex) {
          error = ex.what();
          status = reader::failure_status(ex);
        }
      }
      if (at.gen && error.empty()) {
        stats.prompt_tokens += r.prompt_tokens.value_or(0);
        ++stats.generated;
        tally.measured();
      } else {
        r.status = store::Status::unmeasured;
        r.error = error.empty() ? "generation failed" : error;
        r.correct.reset();
        r.output.clear();
        ++stats.unmeasured;
        tally.failed(r.error, status);
      }
      store.put(r);
    }
    stats.generate_seconds += batch_ms / 1000.0;
    stage.add(e - b);
    tally.fail_fast("sure eval");
  }
}

// Stage 1 and 2 jobs, one per question (closed-book) and one per document (original), less those
// the store has done.
std::pair<std::vector<Job>, std::vector<Job>> first_stage_jobs(const PromptSet& prompts,
                                                               const std::vector<Pair>& pairs,
                                                               const EvalOptions& opt,
                                                               const std::set<store::Key>& done,
                                                               EvalStats& stats) {
  std::vector<Job> cb, org;
  std::set<std::string> seen_q, seen_doc;
  for (const Pair& p : pairs) {
    if (p.failed) continue;
    if (seen_q.insert(p.instance).second && !(p.known && !opt.redecide_known)) {
      Job j{p.instance, "closed-book", closed_book_prompt(prompts, p.question), &p.answers,
            &p.question};
      j.max_tokens = opt.max_tokens;
      if (done.count({j.instance, j.variant})) {
        ++stats.skipped_done;
      } else {
        cb.push_back(std::move(j));
      }
    }
    if (seen_doc.insert(p.id).second) {
      Job j = rag_job(prompts, p.id, "original", grounding_original(p), p, opt);
      j.extra["golden"] = text::substring_match(p.original, p.answers) > 0;
      if (done.count({j.instance, j.variant})) {
        ++stats.skipped_done;
      } else {
        org.push_back(std::move(j));
      }
    }
  }
  return {std::move(cb), std::move(org)};
}

// Y(.) of a finished job: substring match, or the judge's verdict (Appendix G) with the
// substring match kept beside it.
struct Grader {
  const PromptSet& prompts;
  const EvalOptions& opt;
  void operator()(Job& j, store::Result& r) const {
    bool con = j.variant != "closed-book" && opt.chain_of_note;
    if (opt.judge) {
      reader::GenerateParams jp;
      jp.max_tokens = opt.judge_max_tokens;
      jp.temperature = 0.0;
      std::string out =
          opt.judge->generate(judge_prompt(prompts, *j.question, *j.answers, r.output), jp).text;
      r.extra["judge_output"] = out;
      r.correct = parse_judge_verdict(out);  // throws -> unmeasured row
      r.scores["Y_string"] = grade(r.output, *j.answers, con) ? 1.0 : 0.0;
    } else {
      r.correct = grade(r.output, *j.answers, con);
    }
    r.scores["Y"] = *r.correct ? 1.0 : 0.0;
  }
};

// Stage 3 jobs, one per perturbed document whose closed-book and original rows are measured
// (the others are deferred to a later run); each carries its subset and the original's verdict.
std::vector<Job> perturbed_jobs(const store::RunStore& store, int64_t run, const PromptSet& prompts,
                                const std::vector<Pair>& pairs, const EvalOptions& opt,
                                const std::set<store::Key>& done, EvalStats& stats) {
  // What is measured so far: closed-book and original rows.
  std::map<store::Key, store::Result> rows;
  store.for_each_result(run, [&](const store::Result& r) {
    if (r.status == store::Status::ok) rows[{r.instance, r.variant}] = r;
  });
  std::vector<Job> pert;
  for (const Pair& p : pairs) {
    if (p.failed) continue;
    if (done.count({p.id, p.perturbation})) {
      ++stats.skipped_done;  // a stored row the run reuses, as the first stages count theirs
      continue;
    }
    Job j = rag_job(prompts, p.id, p.perturbation, grounding_perturbed(p), p, opt);
    bool golden = text::substring_match(p.original, p.answers) > 0;
    j.extra["perturbation"] = p.perturbation;
    j.extra["category"] = p.category;
    j.extra["golden"] = golden;
    // Known: sure prepare's verdict when the pair carries it, else this run's closed-book row.
    const bool prepared = p.known && !opt.redecide_known;
    auto cbr = rows.find({p.instance, "closed-book"});
    auto orr = rows.find({p.id, "original"});
    if ((!prepared && cbr == rows.end()) || orr == rows.end()) {
      ++stats.deferred;
      continue;
    }
    const bool known = prepared ? *p.known : *cbr->second.correct;
    j.extra["known"] = known;
    j.extra["known_from"] = prepared ? "prepare" : "closed-book";
    j.extra["subset"] = to_string(make_subset(known, golden));
    j.extra["original_output"] = orr->second.output;
    j.extra["original_correct"] = *orr->second.correct;
    pert.push_back(std::move(j));
  }
  return pert;
}

}  // namespace

namespace {

// emphasis_gold replaces the reader's steering on the rows it steers, so both at once would
// steer only some rows: refused.
void check_emphasis(const reader::Reader& reader, const EvalOptions& opt) {
  if (!(opt.emphasis_gold >= 0) || !std::isfinite(opt.emphasis_gold))
    throw UsageError("sure eval", "the gold emphasis factor must be finite and >= 0");
  if (opt.emphasis_gold != 1.0 && reader.steering.active())
    throw UsageError("sure eval",
                     "the gold emphasis steers the reader itself: turn the reader's steering off");
}

// The three stages in `run`, one progress stage "sure eval" over the rows still to generate.
std::vector<Outcome> evaluate_in_run(reader::Reader& reader, store::RunStore& store, int64_t run,
                                     const PromptSet& prompts, const std::vector<Pair>& pairs,
                                     const EvalOptions& opt, EvalStats& stats,
                                     const common::RunHooks& hooks) {
  check_emphasis(reader, opt);
  check_known_agrees(pairs);
  {
    std::set<std::string> prepared, all;
    for (const Pair& p : pairs) {
      all.insert(p.instance);
      if (p.known) prepared.insert(p.instance);
    }
    if (!prepared.empty())
      hooks.say("sure eval: note: " + std::to_string(prepared.size()) + " of " +
                std::to_string(all.size()) + " questions carry sure prepare's Known/Unknown " +
                (opt.redecide_known ? "verdict, decided again with this run's closed-book answers "
                                      "(--redecide-known)"
                                    : "verdict: kept, no closed-book answer of their own "
                                      "(--redecide-known decides again)"));
  }
  std::set<store::Key> done = store.done_keys(run);
  reader::PrefillMeter meter(reader);
  auto [cb, org] = first_stage_jobs(prompts, pairs, opt, done, stats);
  size_t total = cb.size() + org.size();
  for (const Pair& p : pairs)
    if (!p.failed && !done.count({p.id, p.perturbation})) ++total;
  const Grader grade_job{prompts, opt};
  const common::Stage stage(hooks, "sure eval", total);
  reader::MeasuredTally tally;
  tally.measured(stats.skipped_done);  // rows the run reuses are measured rows of its result
  run_jobs(reader, store, run, cb, opt, stats, tally, grade_job, stage);
  run_jobs(reader, store, run, org, opt, stats, tally, grade_job, stage);
  const int64_t reused_before = stats.skipped_done;
  std::vector<Job> pert = perturbed_jobs(store, run, prompts, pairs, opt, done, stats);
  tally.measured(stats.skipped_done - reused_before);
  run_jobs(
      reader, store, run, pert, opt, stats, tally,
      [&](Job& j, store::Result& r) {
        grade_job(j, r);
        r.extra["label"] = int(j.extra["original_correct"].get<bool>()) - int(*r.correct);
      },
      stage);
  if (auto c = meter.counts())  // this invocation's prefill accounting
    store.set_run_meta(run, "prefill", reader::to_json(*c));
  // Which servers answered (a remote reader): provenance beside the run, not its identity.
  if (auto sv = reader::servers_meta(reader); !sv.is_null()) store.set_run_meta(run, "servers", sv);
  std::set<store::Key> wanted;
  for (const Pair& p : pairs)
    if (!p.failed) wanted.insert({p.id, p.perturbation});
  std::vector<Outcome> out;
  for (auto& o : outcomes_from_store(store, run))
    if (wanted.count({o.pair_id, o.perturbation})) out.push_back(std::move(o));
  int64_t measured = static_cast<int64_t>(out.size());
  stats.pairs_measured = measured;
  int64_t live = 0;
  for (const Pair& p : pairs) live += !p.failed;
  stats.pairs_unmeasured = live - measured;
  // The run's result is its pairs: rows measured without a pair measured give nothing.
  tally.check("sure eval", measured);
  return out;
}

}  // namespace

std::vector<Outcome> evaluate_pairs(reader::Reader& reader, store::RunStore& store, int64_t run,
                                    const PromptSet& prompts, const std::vector<Pair>& pairs,
                                    const EvalOptions& opt, EvalStats& stats,
                                    const std::function<void(size_t, size_t)>& progress) {
  // (rows done, rows total) from the stage's begin and advances.
  common::RunHooks hooks;
  size_t done = 0, total = 0;
  if (progress) {
    hooks.begin = [&](const std::string&, uint64_t n) { total = size_t(n); };
    hooks.advance = [&](uint64_t n) { progress(done += size_t(n), total); };
  }
  return evaluate_in_run(reader, store, run, prompts, pairs, opt, stats, hooks);
}

EvalSummary run_eval(reader::Reader& reader, store::RunStore& store, const PromptSet& prompts,
                     const std::vector<Pair>& pairs, const EvalRunOptions& opt) {
  store::RunConfig rc = eval_run_config(
      opt.eval, prompts, opt.pairs_sha256.empty() ? pairs_sha256(pairs) : opt.pairs_sha256,
      opt.judge_sha256);
  rc.config.update(opt.tag);
  rc.seed = static_cast<int64_t>(opt.eval.seed);
  EvalSummary sum;
  // As every runner: the origin recorded, and a resumed run said on the hooks (evaluate_in_run
  // reads the done keys itself: it also serves runs begun elsewhere).
  sum.run =
      common::begin_or_resume(store, rc, opt.origin, opt.hooks, "sure eval", 0, "answers").run;
  sum.outcomes =
      evaluate_in_run(reader, store, sum.run, prompts, pairs, opt.eval, sum.stats, opt.hooks);
  return sum;
}

std::vector<Outcome> outcomes_from_store(const store::RunStore& store, int64_t run) {
  std::map<store::Key, store::Result> rows;
  std::vector<store::Result> pert;
  store.for_each_result(run, [&](const store::Result& r) {
    if (r.status != store::Status::ok) return;
    if (r.variant == "closed-book" || r.variant == "original") {
      rows[{r.instance, r.variant}] = r;
    } else {
      pert.push_back(r);
    }
  });
  std::vector<Outcome> out;
  for (const auto& r : pert) {
    std::string instance = r.instance.substr(0, r.instance.rfind('#'));
    auto cbr = rows.find({instance, "closed-book"});
    auto orr = rows.find({r.instance, "original"});
    // The verdict the row was labelled with: sure prepare's (no closed-book row) or the run's.
    const bool from_prepare = r.extra.value("known_from", "") == "prepare";
    if ((!from_prepare && (cbr == rows.end() || !cbr->second.correct)) || orr == rows.end() ||
        !r.correct || !orr->second.correct)
      continue;
    const bool known = from_prepare ? r.extra.value("known", false) : *cbr->second.correct;
    auto k = parse_kind(r.variant);
    if (!k) continue;
    Outcome o;
    o.pair_id = r.instance;
    o.perturbation = r.variant;
    o.category = info(*k).category;
    bool golden = r.extra.value("golden", false);
    o.subset = make_subset(known, golden);
    o.y_org = *orr->second.correct;
    o.y_pert = *r.correct;
    out.push_back(o);
  }
  return out;
}

store::RunConfig eval_run_config(const EvalOptions& opt, const PromptSet& prompts,
                                 const std::string& pairs_sha256, const std::string& judge_sha256) {
  store::RunConfig rc;
  rc.pipeline = "sure eval";
  rc.config = {
      {"temperature", opt.temperature},
      {"max_tokens", opt.max_tokens},
      {"chain_of_note", opt.chain_of_note},
      {"prompts",
       {{"qa_prompt", prompts.identity("qa_prompt")},
        {"instruction", prompts.identity(opt.chain_of_note ? "chain_of_note" : "qa_instruction")},
        {"closed_book", prompts.identity("closed_book")}}},
      {"grading", opt.judge ? "judge" : "substring_match"},
      {"pairs_sha256", pairs_sha256}};
  if (opt.judge) {
    rc.config["judge"] = opt.judge->describe();
    if (!judge_sha256.empty()) rc.config["judge_sha256"] = judge_sha256;
    rc.config["prompts"]["judge"] = prompts.identity("judge");
  }
  // Unemphasised runs keep the identity they had before emphasis existed.
  if (opt.emphasis_gold != 1.0) rc.config["emphasis_gold"] = opt.emphasis_gold;
  // Absent by default: a run keeping the pairs' verdicts has the identity it always had.
  if (opt.redecide_known) rc.config["known"] = "closed-book";
  return rc;
}

}  // namespace ragform::sure

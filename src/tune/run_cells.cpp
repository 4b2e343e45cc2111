// `ragform tune`: the rows of a run (Ledger), the reader's calls (Runner) and the scores read back
// from the rows (run_cells.h).
#include "tune/run_cells.h"

#include <algorithm>

#include "base/stable_hash.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/sure/sure.h"
#include "store/sha256.h"

namespace ragform::tune::detail {

std::string records_sha(const std::vector<eval::QaRecord>& recs) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : recs) {
    nlohmann::json c = nlohmann::json::array();
    for (const auto& x : r.ctxs)
      c.push_back({x.title, x.text, x.isgold, x.hasanswer.value_or(false), x.score.value_or(0.0)});
    nlohmann::json kv = nullptr;
    if (r.kv) kv = {r.kv->key, r.kv->value, r.kv->records, r.kv->gold_index};
    a.push_back({r.id, r.question, r.answers, c, kv});
  }
  return store::sha256_hex(store::canonical_json(a));
}

bool shard_keeps(const TuneOptions& o, const std::string& inst, const std::string& prompt) {
  return o.shard_count <= 1 ||
         fnv1a64(inst + "|" + prompt) % uint64_t(o.shard_count) == uint64_t(o.shard_index);
}

template <class Fn>
void Runner::attempt(Ledger& led, const std::string& instance, const std::string& variant,
                     const std::string& prompt, Fn&& measure) {
  try {
    measure();
  } catch (const UsageError&) {
    throw;
  } catch (const NotSupported&) {
    throw;
  } catch (const Error& e) {
    ++new_prompts;
    store::Result row;
    row.instance = instance;
    row.variant = variant;
    row.status = store::Status::unmeasured;
    row.error = e.what();
    row.prompt = prompt;
    led.put(std::move(row));
    failures.push_back(e.what());
  }
}

void Runner::answer(Ledger& led, const eval::QaRecord& rec, const std::string& instance,
                    const Presentation& p, const std::string& variant) {
  Job j{instance, variant, render(rec, p, o.task, o.tmpl).prompt, rec.answers, to_json(p), {}};
  // A prompt already answered for this record (two perturbations that agree, say) is not run
  // again: its row is shared, and the budget is not charged for it.
  if (const store::Result* done = led.find_prompt(instance, j.prompt)) {
    led.put(shared_row(*done, j));
    return;
  }
  for (size_t q = 0; q < queue.size() && !j.same_as; ++q)
    if (queue[q].instance == instance && queue[q].prompt == j.prompt) j.same_as = q;
  queue.push_back(std::move(j));
  if (queue.size() >= kBatch) flush(led);
}

store::Result Runner::shared_row(const store::Result& done, const Job& j) {
  store::Result row = done;
  row.variant = j.variant;
  row.timings_ms.clear();
  row.extra = {{"presentation", j.presentation}, {"shared_with", done.variant}};
  if (done.extra.contains("answer")) row.extra["answer"] = done.extra["answer"];
  return row;
}

void Runner::flush(Ledger& led) {
  if (queue.empty()) return;
  std::vector<std::string> prompts;
  std::vector<size_t> slot(queue.size());  // the job's index in `prompts`
  for (size_t i = 0; i < queue.size(); ++i)
    if (!queue[i].same_as) {
      slot[i] = prompts.size();
      prompts.push_back(queue[i].prompt);
    }
  std::vector<reader::Attempt> generated =
      reader::generate_each(r, prompts, answer_params(o.max_tokens));
  new_prompts += prompts.size();
  std::vector<reader::Attempt> at;
  for (size_t i = 0; i < queue.size(); ++i)
    at.push_back(generated[slot[queue[i].same_as.value_or(i)]]);
  for (size_t i = 0; i < queue.size(); ++i) {
    Job& j = queue[i];
    if (j.same_as && at[i].gen) {
      if (const store::Result* done = led.find(j.instance, queue[*j.same_as].variant)) {
        led.put(shared_row(*done, j));
        continue;
      }
    }
    store::Result row;
    row.instance = j.instance;
    row.variant = j.variant;
    row.prompt = j.prompt;
    if (!at[i].gen) {
      row.status = store::Status::unmeasured;
      row.error = at[i].error;
      failures.push_back(at[i].error);
      led.put(std::move(row));
      continue;
    }
    const reader::Generation& g = *at[i].gen;
    row.prompt_tokens = g.prompt_tokens;
    row.output = g.text;
    row.correct = grade(g.text, j.answers);
    row.scores = {{"substring_match", *row.correct ? 1.0 : 0.0}};
    row.timings_ms = {{"total", at[i].ms}};
    row.extra = {{"presentation", j.presentation}, {"answer", cnorm::first_line(g.text)}};
    led.put(std::move(row));
  }
  queue.clear();
}

void Runner::measure_abs(Ledger& led, const eval::QaRecord& rec, const Presentation& p,
                         const std::string& variant) {
  cnorm::Prompt pr;
  pr.text = render(rec, p, o.task, o.tmpl).prompt;
  pr.ctx_end = pr.text.size();
  double abs = 0;
  bool ok = false;
  attempt(led, rec.id, variant, pr.text, [&] {
    abs = cnorm::prompt_abs(r, pr, cnorm::AbsOptions{});
    ok = true;
  });
  if (!ok) return;
  ++new_prompts;
  store::Result row;
  row.instance = rec.id;
  row.variant = variant;
  row.prompt = pr.text;
  row.prompt_tokens = r.count_tokens(pr.text);
  row.scores = {{"abs", abs}};
  row.extra = {{"presentation", to_json(p)}};
  led.put(std::move(row));
}

// Accuracy of each candidate over the first `items` records, from the ledger.
Score accuracy_of(const Ledger& led, const std::vector<eval::QaRecord>& dev, size_t items,
                  const std::string& label) {
  Score s;
  double tok = 0;
  for (size_t i = 0; i < items; ++i) {
    const store::Result* row = led.find(dev[i].id, acc_variant(label));
    if (!row || !row->correct) continue;
    ++s.n;
    s.correct += *row->correct ? 1 : 0;
    tok += double(row->prompt_tokens.value_or(0));
  }
  s.tokens = s.n ? tok / double(s.n) : 0;
  return s;
}

// The robustness rate of `label` over the pairs of `recs` (the first `items`), the pairs, and
// how many of them shared their perturbed answer with another pair (no prompt of their own).
std::tuple<std::optional<double>, size_t, size_t> robustness_of(
    const Ledger& led, const std::vector<eval::QaRecord>& recs, size_t items,
    const std::string& label, const std::vector<std::vector<std::string>>& kinds_of) {
  std::vector<sure::Outcome> out;
  size_t shared = 0;
  for (size_t i = 0; i < items; ++i)
    for (const std::string& kind : kinds_of[i]) {
      const store::Result* org = led.find(recs[i].id, acc_variant(label));
      const store::Result* pert = led.find(recs[i].id, rob_variant(kind, label));
      if (!org || !pert || !org->correct || !pert->correct) continue;
      sure::Outcome oc;
      oc.pair_id = recs[i].id;
      oc.perturbation = kind;
      oc.y_org = *org->correct;
      oc.y_pert = *pert->correct;
      out.push_back(oc);
      if (pert->extra.contains("shared_with")) ++shared;
    }
  if (out.empty()) return {std::nullopt, 0, 0};
  return {sure::compute_rates(out, 0, 1).rr, out.size(), shared};
}

// The kinds that perturb each record (a degenerate perturbation is no pair).
std::vector<std::vector<std::string>> pair_kinds(const TuneOptions& o,
                                                 const std::vector<eval::QaRecord>& recs,
                                                 size_t items) {
  std::vector<std::vector<std::string>> out(items);
  for (size_t i = 0; i < items; ++i)
    for (const std::string& k : robustness_kinds())
      if (perturbed(recs[i], o.task, k, o.seed)) out[i].push_back(k);
  return out;
}

// Cells of the robustness check for candidates `idx` over the first `items` records.
PhaseState run_robustness(Runner& run, Ledger& led, const std::vector<eval::QaRecord>& recs,
                          size_t items, const std::vector<Presentation>& cands,
                          const std::vector<size_t>& idx,
                          const std::vector<std::vector<std::string>>& kinds_of,
                          const std::string& stage, bool whole) {
  std::vector<std::pair<std::string, std::string>> cells;
  std::vector<std::tuple<size_t, size_t, std::string>> what;
  for (size_t c : idx)
    for (size_t i = 0; i < items; ++i)
      for (const std::string& k : kinds_of[i]) {
        cells.push_back({recs[i].id, rob_variant(k, label(cands[c]))});
        what.emplace_back(c, i, k);
      }
  return run_phase(
      run.o, run, led, stage, cells,
      [&](size_t j) {
        auto [c, i, k] = what[j];
        return render(*perturbed(recs[i], run.o.task, k, run.o.seed), cands[c], run.o.task,
                      run.o.tmpl)
            .prompt;
      },
      [&](size_t j) {
        auto [c, i, k] = what[j];
        run.answer(led, *perturbed(recs[i], run.o.task, k, run.o.seed), recs[i].id, cands[c],
                   cells[j].second);
      },
      whole);
}

}  // namespace ragform::tune::detail

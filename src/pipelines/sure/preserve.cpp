#include "pipelines/sure/preserve.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/options.h"
#include "pipelines/sure/taxonomy.h"
#include "reader/measured.h"
#include "text/metrics.h"

namespace ragform::sure {

const char* to_string(NliLabel l) {
  switch (l) {
    case NliLabel::Entailment:
      return "entailment";
    case NliLabel::Neutral:
      return "neutral";
    case NliLabel::Contradiction:
      return "contradiction";
    case NliLabel::Unparsed:
      return "unparsed";
  }
  return "unparsed";
}

NliLabel parse_nli(const std::string& output) {
  std::string low;
  for (char c : output) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  struct {
    const char* word;
    NliLabel label;
  } labels[] = {{"entail", NliLabel::Entailment},
                {"neutral", NliLabel::Neutral},
                {"contradict", NliLabel::Contradiction}};
  size_t best = std::string::npos;
  NliLabel out = NliLabel::Unparsed;
  for (const auto& l : labels) {
    size_t at = low.find(l.word);
    if (at != std::string::npos && (best == std::string::npos || at < best)) {
      best = at;
      out = l.label;
    }
  }
  // "not entailment" / "does not entail" is not a yes.
  if (out == NliLabel::Entailment && best >= 4 && low.substr(best - 4, 4) == "not ")
    out = NliLabel::Neutral;
  return out;
}

NliScope parse_nli_scope(const std::string& s) {
  if (s == "none") return NliScope::None;
  if (s == "llm") return NliScope::ReaderMade;
  if (s == "all") return NliScope::All;
  throw OptionError("nli", "expected none, llm or all, got '" + excerpt(s) + "'");
}

nlohmann::ordered_json FilterCounts::to_json() const {
  nlohmann::ordered_json j;
  j["input"] = input;
  j["failed_perturbation"] = failed_perturbation;
  j["golden_lost_answer"] = golden_lost_answer;
  j["noise_gained_answer"] = noise_gained_answer;
  j["nli_checked"] = nli_checked;
  j["nli_forward_not_entailed"] = nli_forward_not_entailed;
  j["nli_backward_not_entailed"] = nli_backward_not_entailed;
  j["nli_unmeasured"] = nli_unmeasured;
  j["kept"] = kept;
  return j;
}

FilterVerdict check_answers(const Pair& p) {
  FilterVerdict v;
  if (p.answers.empty()) {
    v.reason = "no gold answers";
    return v;
  }
  bool golden = text::substring_match(p.original, p.answers) > 0;
  bool after = text::substring_match(p.perturbed, p.answers) > 0;
  if (golden && !after) {
    v.reason = "golden lost answer";
  } else if (!golden && after) {
    v.reason = "noise gained answer";
  } else {
    v.keep = true;
  }
  return v;
}

bool nli_covers(const Pair& p, NliScope scope) {
  auto k = parse_kind(p.perturbation);
  const bool reader_made = k && info(*k).needs != NeedsReader::None;
  return scope == NliScope::All || (scope == NliScope::ReaderMade && reader_made);
}

bool needs_nli(const std::vector<Pair>& pairs, NliScope scope) {
  return std::any_of(pairs.begin(), pairs.end(),
                     [&](const Pair& p) { return nli_covers(p, scope); });
}

std::vector<FilterVerdict> filter_pairs(const std::vector<Pair>& pairs, reader::Reader* nli_reader,
                                        const PromptSet& prompts, const FilterOptions& opt,
                                        FilterCounts& counts) {
  std::vector<FilterVerdict> out(pairs.size());
  std::vector<size_t> nli_todo;
  counts.input += static_cast<int64_t>(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Pair& p = pairs[i];
    if (p.failed) {
      out[i].reason = "failed perturbation: " + p.note;
      ++counts.failed_perturbation;
      continue;
    }
    out[i] = check_answers(p);
    if (!out[i].keep) {
      if (out[i].reason == "noise gained answer") {
        ++counts.noise_gained_answer;
      } else {
        ++counts.golden_lost_answer;  // also "no gold answers": nothing to preserve
      }
      continue;
    }
    if (nli_covers(p, opt.nli)) nli_todo.push_back(i);
  }
  if (!nli_todo.empty() && !nli_reader && !opt.judge)
    throw Error("sure filter", "NLI needs a reader (give -m / --nli-model, or --nli none)");
  reader::GenerateParams gp;
  gp.max_tokens = opt.max_tokens;
  gp.temperature = 0.0;
  size_t B = std::max<size_t>(1, opt.batch);
  reader::MeasuredTally tally;  // NLI verdicts, by reader/measured.h's rule
  for (size_t b = 0; b < nli_todo.size(); b += B) {
    size_t e = std::min(nli_todo.size(), b + B);
    // Both directions of every pair in one batch: [fwd_0, bwd_0, fwd_1, bwd_1, ...].
    std::vector<std::string> ps;
    for (size_t t = b; t < e && !opt.judge; ++t) {
      const Pair& p = pairs[nli_todo[t]];
      ps.push_back(
          fill(prompts.get("nli"), {{"premise", p.original}, {"hypothesis", p.perturbed}}));
      ps.push_back(
          fill(prompts.get("nli"), {{"premise", p.perturbed}, {"hypothesis", p.original}}));
    }
    const size_t n_q = 2 * (e - b);
    std::vector<std::string> outs(n_q);
    std::vector<bool> ok(n_q, true);
    std::vector<int> status(n_q, -1);  // a failure's cause (reader/measured.h failure_status)
    if (opt.judge) {  // a cross-encoder: its label word stands in for the reader's answer
      std::vector<std::pair<std::string, std::string>> ph;
      for (size_t t = b; t < e; ++t) {
        const Pair& p = pairs[nli_todo[t]];
        ph.emplace_back(p.original, p.perturbed);
        ph.emplace_back(p.perturbed, p.original);
      }
      try {
        std::vector<NliLabel> labels = opt.judge(ph);
        for (size_t q = 0; q < n_q; ++q) outs[q] = to_string(labels.at(q));
      } catch (const Error& ex) {
        for (size_t q = 0; q < n_q; ++q)
          ok[q] = false, outs[q] = ex.what(), status[q] = reader::failure_status(ex);
      }
    } else {
      const std::vector<reader::Attempt> gens = reader::generate_each(*nli_reader, ps, gp);
      for (size_t q = 0; q < ps.size(); ++q) {
        ok[q] = gens[q].gen.has_value();
        outs[q] = ok[q] ? gens[q].gen->text : gens[q].error;
        status[q] = gens[q].status;
      }
    }
    for (size_t t = b; t < e; ++t) {
      size_t q = 2 * (t - b);
      FilterVerdict& v = out[nli_todo[t]];
      ++counts.nli_checked;
      if (!ok[q] || !ok[q + 1]) {
        const size_t bad = !ok[q] ? q : q + 1;
        v.keep = false;
        v.reason = "nli unmeasured: " + outs[bad];
        ++counts.nli_unmeasured;
        tally.failed(outs[bad], status[bad]);
        continue;
      }
      tally.measured();
      NliLabel fwd = parse_nli(outs[q]), bwd = parse_nli(outs[q + 1]);
      v.nli_forward = to_string(fwd);
      v.nli_backward = to_string(bwd);
      if (fwd != NliLabel::Entailment) {
        v.keep = false;
        v.reason = std::string("nli forward: ") + to_string(fwd);
        ++counts.nli_forward_not_entailed;
      } else if (bwd != NliLabel::Entailment) {
        v.keep = false;
        v.reason = std::string("nli backward: ") + to_string(bwd);
        ++counts.nli_backward_not_entailed;
      }
    }
    tally.fail_fast("sure filter");
  }
  tally.check("sure filter");
  for (const auto& v : out) counts.kept += v.keep;
  return out;
}

}  // namespace ragform::sure

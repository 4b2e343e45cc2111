// `ragform tune`: which candidates the search measures (the context cap, the aliases, the control
// arm). run_cells.h declares them.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>

#include "base/excerpt.h"
#include "tune/run_cells.h"

namespace ragform::tune::detail {

// Where a record came from, for an error: "FILE:LINE" of its split's file, else "record <id>"
// (generated needle records).
std::string record_where(const TuneOptions& o, const eval::QaRecord& rec) {
  const std::less<const eval::QaRecord*> before;
  const bool dev = !o.dev.empty() && !before(&rec, &o.dev.front()) && !before(&o.dev.back(), &rec);
  const std::string& path = dev ? o.dev_path : o.holdout_path;
  if (path.empty() || rec.source_line == 0) return "record " + excerpt(rec.id);
  return path + ":" + std::to_string(rec.source_line);
}

// "512-token context (--ctx)": the cap and where it came from, for a message.
std::string context_words(const TuneOptions& o) {
  return std::to_string(o.ctx) + "-token context" +
         (o.ctx_source.empty() ? std::string() : " (" + o.ctx_source + ")");
}

// Whether the prompt of `rec` under `p` and the answer fit the context. A reader that refuses to
// count a prompt longer than its context (the native reader) says no with ContextOverflow; every
// other failure (a record without documents, a closed port, a 401, a tokenizer error) is that
// failure, named with the record's FILE:LINE, never "exceeds the context".
// `tokens`, when given, receives the prompt's length (0 when the reader refused to count it).
bool fits_context(reader::Reader& r, const TuneOptions& o, const eval::QaRecord& rec,
                  const Presentation& p, size_t* tokens) {
  std::string prompt;
  try {
    prompt = render(rec, p, o.task, o.tmpl).prompt;
  } catch (const Error& e) {
    throw Error(record_where(o, rec), e.what());
  }
  try {
    const size_t n = size_t(r.count_tokens(prompt));
    if (tokens) *tokens = n;
    return n + size_t(o.max_tokens) <= o.ctx;
  } catch (const ContextOverflow&) {
    if (tokens) *tokens = 0;
    return false;
  } catch (const NotSupported&) {
    throw;
  } catch (const FileError&) {
    throw;
  } catch (const Error& e) {
    throw Error(record_where(o, rec), std::string("counting the prompt's tokens: ") + e.what());
  }
}

std::vector<Presentation> fitting_candidates(reader::Reader& r, const TuneOptions& o,
                                             const std::vector<Presentation>& all, TuneSummary& s) {
  if (o.ctx && size_t(o.max_tokens) >= o.ctx)
    throw OptionError("max_tokens", std::to_string(o.max_tokens) +
                                        " answer tokens leave no room for a prompt in the " +
                                        context_words(o) + ": give fewer or a larger --ctx");
  std::vector<Presentation> cands;
  // The shortest prompt that did not fit: which candidate, which record, how many tokens (0: the
  // reader refused to count it); and whether every dropped candidate failed on that one record.
  struct Overflow {
    size_t cand = 0, record = 0, tokens = 0;
  };
  std::optional<Overflow> shortest;
  bool one_record = true;
  for (size_t c = 0; c < all.size(); ++c) {
    bool fits = true;
    size_t i = 0, tokens = 0;
    for (; o.ctx && i < o.dev.size(); ++i)
      if (!(fits = fits_context(r, o, o.dev[i], all[c], &tokens))) break;
    if (fits) {
      cands.push_back(all[c]);
      continue;
    }
    if (shortest && shortest->record != i) one_record = false;
    if (!shortest || (tokens && (!shortest->tokens || tokens < shortest->tokens)))
      shortest = Overflow{c, i, tokens};
  }
  s.dropped_for_context = all.size() - cands.size();
  // "<prompt> tokens + <answer> answer tokens > <ctx>" of the shortest overflow.
  auto tokens_over = [&] {
    return shortest->tokens
               ? std::to_string(shortest->tokens) + " prompt tokens + " +
                     std::to_string(o.max_tokens) + " answer tokens > " + std::to_string(o.ctx)
               : std::string("longer than the reader's own context");
  };
  if (s.dropped_for_context)
    o.hooks.say("tune: note: " + std::to_string(s.dropped_for_context) + " of " +
                std::to_string(all.size()) + " candidates dropped: their prompts exceed the " +
                context_words(o) +
                " with the answer on a dev record (the shortest: " + label(all[shortest->cand]) +
                " on " + record_where(o, o.dev[shortest->record]) + ", " + tokens_over() + ")");
  if (cands.empty()) {
    // One record to blame when every candidate failed on it and, under the shortest, every
    // other dev record fits.
    for (size_t i = 0; one_record && i < o.dev.size(); ++i)
      if (i != shortest->record) one_record = fits_context(r, o, o.dev[i], all[shortest->cand]);
    if (one_record && o.dev.size() > 1)
      throw UsageError("tune", record_where(o, o.dev[shortest->record]) +
                                   " fits under no candidate of the space, every other dev "
                                   "record does (its shortest prompt, under " +
                                   label(all[shortest->cand]) + ": " + tokens_over() +
                                   "): shorten its documents, leave it out, or give a larger "
                                   "--ctx");
    throw UsageError("tune", "no candidate of the space fits the " + context_words(o) +
                                 " on every dev record (the shortest prompt over it: " +
                                 label(all[shortest->cand]) + " on " +
                                 record_where(o, o.dev[shortest->record]) + ", " + tokens_over() +
                                 "); use smaller k values, shorter formats or a larger --ctx");
  }
  return cands;
}

// Splits `cands` into the distinct candidates (kept in order) and the aliases of earlier ones: two
// candidates are aliases when they render the same prompt on every dev record and on each of its
// perturbations (the robustness check's records). The candidates are split record by record into
// groups that rendered alike so far, and a candidate alone in its group is not rendered again:
// most are apart after a record or two, so this costs about one rendering per candidate instead
// of one per candidate and record (issue 40: on a large dev split the whole product, outside
// --budget, took longer than the search).
std::vector<Presentation> without_aliases(const TuneOptions& o,
                                          const std::vector<Presentation>& cands,
                                          std::vector<std::pair<Presentation, size_t>>& aliases) {
  std::vector<std::vector<size_t>> open(1);  // groups of candidates alike so far, in order
  for (size_t c = 0; c < cands.size(); ++c) open[0].push_back(c);
  if (cands.size() < 2) open.clear();
  auto split_on = [&](const eval::QaRecord& rec) {
    std::vector<std::vector<size_t>> next;
    for (const std::vector<size_t>& group : open) {
      std::map<std::string, std::vector<size_t>> by_prompt;
      for (size_t c : group) by_prompt[render(rec, cands[c], o.task, o.tmpl).prompt].push_back(c);
      for (auto& [prompt, members] : by_prompt)
        if (members.size() > 1) next.push_back(std::move(members));
    }
    open = std::move(next);
  };
  for (size_t i = 0; i < o.dev.size() && !open.empty(); ++i) {
    split_on(o.dev[i]);
    for (const std::string& k : robustness_kinds()) {
      if (open.empty()) break;
      if (auto pert = perturbed(o.dev[i], o.task, k, o.seed)) split_on(*pert);
    }
  }
  // Every group left is one candidate (its first, the earliest) and its aliases.
  std::vector<size_t> alias_of(cands.size(), SIZE_MAX);
  for (const std::vector<size_t>& group : open)
    for (size_t j = 1; j < group.size(); ++j) alias_of[group[j]] = group[0];
  std::vector<Presentation> distinct;
  std::vector<size_t> at(cands.size(), 0);  // a distinct candidate's index in `distinct`
  for (size_t c = 0; c < cands.size(); ++c) {
    if (alias_of[c] == SIZE_MAX) {
      at[c] = distinct.size();
      distinct.push_back(cands[c]);
    } else {
      aliases.emplace_back(cands[c], at[alias_of[c]]);
    }
  }
  return distinct;
}

// The original presentation, the control arm and the side the winner is compared with: the
// records as given (no delimiter, plain, retrieved order, no selection) with every document, or
// else the largest k of the space whose prompts fit the context on every dev record; none when
// no k fits.
std::optional<Presentation> original_arm(reader::Reader& r, const TuneOptions& o) {
  std::vector<size_t> ks = {0};
  std::vector<size_t> given = o.space.ks;
  std::sort(given.rbegin(), given.rend());
  for (size_t k : given)
    if (k) ks.push_back(k);
  Presentation p = original_presentation();
  p.format_seed = o.space.format_seed;
  for (size_t k : ks) {
    p.k = k;
    bool fits = true;
    for (size_t i = 0; i < o.dev.size() && fits && o.ctx; ++i)
      fits = fits_context(r, o, o.dev[i], p);
    if (fits) return p;
  }
  return std::nullopt;
}

}  // namespace ragform::tune::detail

#include "pipelines/cnorm/longbench.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "pipelines/cnorm/format.h"
#include "reader/measured.h"

namespace ragform::cnorm {

std::vector<McItem> build_mc_items(const std::vector<eval::QaRecord>& records) {
  std::vector<McItem> out;
  for (const auto& r : records) {
    if (!r.choice)
      throw Error("cnorm", "record " + r.id + " (line " + std::to_string(r.source_line) +
                               ") is not a multiple-choice (LongBench-v2) record");
    if (r.ctxs.empty()) throw Error("cnorm", "record " + r.id + " has no context");
    McItem it;
    it.id = r.id;
    it.question = r.question;
    it.choices = r.choice->choices;
    it.answer = r.choice->answer;
    it.difficulty = r.choice->difficulty;
    it.length = r.choice->length;
    it.context = r.ctxs[0].text;
    out.push_back(std::move(it));
  }
  return out;
}

Item mc_to_item(const McItem& item) {
  Item it;
  it.id = item.id;
  it.question = item.question;
  it.answers = {std::string(1, item.answer)};
  it.gold = {"", item.context};
  it.choices.assign(item.choices.begin(), item.choices.end());
  return it;
}

std::string longbench_prompt(const McItem& item, const Format& f) {
  Item it = mc_to_item(item);
  return render(Task::Longbench, longbench_template(), it, {it.gold}, f).text;
}

namespace {

std::string lower(const std::string& s) {
  std::string o = s;
  for (char& c : o) c = char(std::tolower(static_cast<unsigned char>(c)));
  return o;
}

bool is_choice(char c) { return c >= 'A' && c <= 'D'; }

}  // namespace

Extract parse_extract(std::string_view name) {
  if (name == "lenient") return Extract::Lenient;
  if (name == "strict") return Extract::Strict;
  throw UsageError("--extract", "expected strict or lenient, got '" + std::string(name) + "'");
}

const char* extract_name(Extract e) { return e == Extract::Strict ? "strict" : "lenient"; }

namespace {

// LongBench-v2's pred.py extract_answer: response.replace('*', ''), then
// re.search(r'The correct answer is \(([A-D])\)'), else re.search(r'The correct answer is
// ([A-D])'): each pattern over the whole text, the first before the second, case-sensitive.
std::optional<char> extract_strict(const std::string& output) {
  std::string text;
  for (char c : output)
    if (c != '*') text += c;
  const std::string key = "The correct answer is ";
  for (bool parenthesised : {true, false})
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
      const size_t i = at + key.size();
      if (parenthesised) {
        if (i + 2 < text.size() && text[i] == '(' && is_choice(text[i + 1]) && text[i + 2] == ')')
          return text[i + 1];
      } else if (i < text.size() && is_choice(text[i])) {
        return text[i];
      }
    }
  return std::nullopt;
}

}  // namespace

std::optional<char> extract_choice(const std::string& output, Extract mode) {
  if (mode == Extract::Strict) return extract_strict(output);
  const std::string lo = lower(output);
  const std::string key = "the correct answer is";
  // Rules 1 and 2, at every occurrence of the phrase.
  for (size_t at = lo.find(key); at != std::string::npos; at = lo.find(key, at + 1)) {
    size_t i = at + key.size();
    while (i < output.size() && output[i] == ' ') ++i;
    if (i + 2 < output.size() && output[i] == '(' &&
        is_choice(char(std::toupper(static_cast<unsigned char>(output[i + 1])))) &&
        output[i + 2] == ')')
      return char(std::toupper(static_cast<unsigned char>(output[i + 1])));
    if (i < output.size() && is_choice(output[i]) &&
        (i + 1 == output.size() || output[i + 1] == ')' || output[i + 1] == '.' ||
         output[i + 1] == ':' || std::isspace(static_cast<unsigned char>(output[i + 1]))))
      return output[i];
  }
  // Rule 3: the first "(X)".
  for (size_t i = 0; i + 2 < output.size(); ++i)
    if (output[i] == '(' && is_choice(output[i + 1]) && output[i + 2] == ')') return output[i + 1];
  // Rule 4: a leading letter.
  size_t b = 0;
  while (b < output.size() && std::isspace(static_cast<unsigned char>(output[b]))) ++b;
  if (b < output.size() && is_choice(output[b]) &&
      (b + 1 == output.size() || output[b + 1] == ')' || output[b + 1] == '.' ||
       output[b + 1] == ':' || std::isspace(static_cast<unsigned char>(output[b + 1]))))
    return output[b];
  return std::nullopt;
}

Overflow parse_overflow(std::string_view name) {
  if (name == "truncate-middle") return Overflow::TruncateMiddle;
  if (name == "drop") return Overflow::Drop;
  throw UsageError("--overflow",
                   "expected truncate-middle or drop, got '" + std::string(name) + "'");
}

const char* overflow_name(Overflow o) {
  return o == Overflow::TruncateMiddle ? "truncate-middle" : "drop";
}

namespace {

bool continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
// The nearest UTF-8 character boundary at or before (after) byte i.
size_t char_floor(std::string_view s, size_t i) {
  while (i > 0 && i < s.size() && continuation_byte(s[i])) --i;
  return std::min(i, s.size());
}
size_t char_ceil(std::string_view s, size_t i) {
  while (i < s.size() && continuation_byte(s[i])) ++i;
  return std::min(i, s.size());
}

// The largest m in [0, size] with fits(m), for a fits that holds at 0 and stops holding once it
// stops (token counts of growing pieces grow). Probes grow from `first` by doubling, so a cut near
// the start of a long text never counts the whole text.
size_t largest_fitting(size_t size, size_t first, const std::function<bool(size_t)>& fits) {
  size_t lo = 0, hi = size + 1;  // fits(lo); hi: the first known not to fit (size + 1: none)
  for (size_t probe = std::min(size, std::max<size_t>(first, 1));;
       probe = std::min(size, probe * 2)) {
    if (!fits(probe)) {
      hi = probe;
      break;
    }
    lo = probe;
    if (probe == size) return size;
  }
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

std::string cut_middle(const std::string& text, size_t head, size_t tail,
                       const std::function<size_t(std::string_view)>& tokens) {
  const std::string_view s(text);
  // A first probe of 4 bytes per token: most tokens are shorter, so the probe usually overshoots
  // by a little and the search stays within twice the kept text.
  const size_t head_end =
      head == 0 ? 0 : char_floor(s, largest_fitting(s.size(), 4 * head, [&](size_t m) {
                                   return tokens(s.substr(0, char_floor(s, m))) <= head;
                                 }));
  size_t tail_len = tail == 0 ? 0 : largest_fitting(s.size(), 4 * tail, [&](size_t m) {
    return tokens(s.substr(char_ceil(s, s.size() - m))) <= tail;
  });
  size_t tail_begin = char_ceil(s, s.size() - tail_len);
  tail_begin = std::max(tail_begin, head_end);  // never twice the same text
  return text.substr(0, head_end) + text.substr(tail_begin);
}

namespace {

// Token counts for fitting one LongBench prompt. A reader may refuse to count a prompt longer
// than its context (NativeReader does): such a count is nullopt, unless the server failed
// (reader::is_outage), which is no length and propagates.
class PromptCounter {
 public:
  PromptCounter(reader::Reader& r, size_t budget)
      : r_(r), piece_bytes_(std::max<size_t>(budget, 64)) {
    empty_ = whole("").value_or(0);
  }

  std::optional<size_t> whole(const std::string& text) {
    try {
      int n = r_.count_tokens(text);
      return n < 0 ? std::nullopt : std::optional<size_t>(size_t(n));
    } catch (const NotSupported&) {
      throw;
    } catch (const Error& e) {
      if (reader::is_outage(e)) throw;
      return std::nullopt;
    }
  }
  size_t empty() const { return empty_; }

  // The tokens of `text` inside a prompt (without the empty prompt's BOS or chat template). A
  // text longer than the budget is counted in pieces split at whitespace, and a piece the reader
  // refuses (over its context) in two halves; each split can miscount by a token or so (a piece's
  // first word is tokenized as a word start).
  size_t piece_tokens(std::string_view text) {
    size_t total = 0;
    while (!text.empty()) {
      size_t n = text.size() <= piece_bytes_ ? text.size() : split_at(text, piece_bytes_);
      total += counted(text.substr(0, n));
      text.remove_prefix(n);
    }
    return total;
  }

 private:
  size_t counted(std::string_view piece) {
    if (auto c = whole(std::string(piece))) return *c > empty_ ? *c - empty_ : 0;
    size_t h = piece.size() < 2 ? 0 : split_at(piece, piece.size() / 2);
    if (h == 0 || h >= piece.size())
      throw Error("cnorm", "the reader does not count a piece of a LongBench context");
    return counted(piece.substr(0, h)) + counted(piece.substr(h));
  }

  // Where to end a first piece of at most `limit` bytes (0 < limit < text.size()): at the last
  // whitespace of its second half (the next piece starts with it), else a character boundary.
  static size_t split_at(std::string_view text, size_t limit) {
    for (size_t i = limit; i > limit / 2; --i)
      if (std::isspace(static_cast<unsigned char>(text[i]))) return i;
    size_t b = char_floor(text, limit);
    return b == 0 ? char_ceil(text, 1) : b;
  }

  reader::Reader& r_;
  size_t piece_bytes_;
  size_t empty_ = 0;
};

// The tokens of a prompt as written: counted whole when the reader does, else its parts.
size_t full_tokens(PromptCounter& c, const Prompt& p) {
  if (auto n = c.whole(p.text)) return *n;
  return c.empty() + c.piece_tokens(std::string_view(p.text).substr(0, p.ctx_begin)) +
         c.piece_tokens(std::string_view(p.text).substr(p.ctx_begin, p.ctx_end - p.ctx_begin)) +
         c.piece_tokens(std::string_view(p.text).substr(p.ctx_end));
}

// What the context may keep: A tokens in all, H of them from its start (longbench.h). nullopt
// when not one context token fits beside the instruction, question and choices.
struct CutPlan {
  size_t head = 0, tail = 0;
};
std::optional<CutPlan> plan_cut(PromptCounter& c, const Prompt& empty_ctx, size_t budget) {
  const std::string& t = empty_ctx.text;
  std::optional<size_t> before = c.whole(t.substr(0, empty_ctx.ctx_begin));
  std::optional<size_t> after = c.whole(t.substr(empty_ctx.ctx_end));
  if (!before || !after) return std::nullopt;
  const size_t e = c.empty();
  const size_t P = *before > e ? *before - e : 0, S = *after > e ? *after - e : 0;
  if (e + P + S >= budget) return std::nullopt;
  const size_t A = budget - e - P - S;
  // LongBench keeps the prompt's first budget / 2 tokens: of them e + P are not the context's.
  const size_t half = budget / 2;
  CutPlan plan;
  plan.head = std::min(A, half > e + P ? half - e - P : 0);
  plan.tail = A - plan.head;
  return plan;
}

}  // namespace

std::optional<FittedPrompt> fit_longbench_prompt(reader::Reader& r, const Item& item,
                                                 const Format& f, size_t budget, Overflow o) {
  PromptCounter c(r, budget);
  const std::string context = format_text(Task::Longbench, item.gold.text, f);
  const Prompt full = render_longbench_context(item, context);
  const std::optional<size_t> n = c.whole(full.text);
  if (n && *n <= budget) return FittedPrompt{full, *n, 0};
  if (o == Overflow::Drop) return std::nullopt;
  std::optional<CutPlan> plan = plan_cut(c, render_longbench_context(item, ""), budget);
  if (!plan) return std::nullopt;
  const size_t before = n ? *n : full_tokens(c, full);
  auto tokens = [&c](std::string_view s) { return c.piece_tokens(s); };
  // The pieces are counted apart from their neighbours: the assembled prompt may come out a few
  // tokens over, and then the cut grows by the excess until it fits.
  for (;;) {
    Prompt p = render_longbench_context(item, cut_middle(context, plan->head, plan->tail, tokens));
    const std::optional<size_t> m = c.whole(p.text);
    if (m && *m <= budget) return FittedPrompt{p, *m, before > *m ? before - *m : 0};
    if (plan->head + plan->tail == 0) return std::nullopt;
    size_t over = m ? *m - budget : 1;
    size_t from_head = std::min(plan->head, (over + 1) / 2);
    plan->head -= from_head;
    plan->tail -= std::min(plan->tail, std::max<size_t>(over - from_head, 1));
  }
}

bool longbench_fits_cut(reader::Reader& r, const Item& item, size_t budget) {
  PromptCounter c(r, budget);
  return plan_cut(c, render_longbench_context(item, ""), budget).has_value();
}

void TruncationStats::add(const std::string& id, size_t removed) {
  if (removed == 0) return;
  ++prompts;
  questions.insert(id);
  total += removed;
  max = std::max(max, removed);
}

nlohmann::json TruncationStats::to_json() const {
  return {{"questions", questions.size()},
          {"prompts", prompts},
          {"tokens_removed", {{"total", total}, {"mean", mean()}, {"max", max}}}};
}

std::string TruncationStats::note(const std::string& what, size_t ctx) const {
  if (!prompts) return "";
  char mean_s[32];
  std::snprintf(mean_s, sizeof mean_s, "%.1f", mean());
  return what + ": " + std::to_string(prompts) + " prompts of " + std::to_string(questions.size()) +
         " questions cut in the middle of their context to fit --ctx " + std::to_string(ctx) +
         " tokens (tokens removed: mean " + mean_s + ", max " + std::to_string(max) + ")";
}

McFit fit_mc_items(reader::Reader& r, const std::vector<McItem>& items,
                   const std::vector<Format>& formats, size_t budget, Overflow overflow) {
  McFit out;
  out.tokens.assign(formats.size(), 0.0);
  PromptCounter c(r, budget);
  for (const auto& it : items) {
    const Item item = mc_to_item(it);
    bool fits = overflow == Overflow::Drop ||
                plan_cut(c, render_longbench_context(item, ""), budget).has_value();
    std::vector<double> t;
    for (size_t f = 0; fits && f < formats.size(); ++f) {
      const Prompt p =
          render_longbench_context(item, format_text(Task::Longbench, item.gold.text, formats[f]));
      std::optional<size_t> n = c.whole(p.text);
      if (overflow == Overflow::Drop) {
        fits = n && *n <= budget;
        if (fits) t.push_back(double(*n));
      } else {
        t.push_back(double(n ? *n : full_tokens(c, p)));
      }
    }
    if (!fits) {
      ++out.left_out;
      continue;
    }
    for (size_t f = 0; f < t.size(); ++f) out.tokens[f] += t[f];
    out.items.push_back(it);
  }
  return out;
}

void run_mc(reader::Reader& r, const std::vector<McItem>& items,
            const std::vector<Variant>& variants, const reader::GenerateParams& gen, size_t budget,
            Overflow overflow, Extract extract,
            const std::function<bool(const std::string&, const std::string&)>& skip,
            const std::function<void(const McAnswer&, const McItem&)>& on_answer) {
  for (const auto& it : items) {
    std::vector<McAnswer> pending;
    std::vector<std::string> prompts;
    const Item item = mc_to_item(it);
    for (size_t v = 0; v < variants.size(); ++v) {
      if (skip && skip(it.id, variants[v].name)) continue;
      std::optional<FittedPrompt> fp =
          fit_longbench_prompt(r, item, variants[v].format, budget, overflow);
      if (!fp)
        throw Error("cnorm eval", "question " + it.id + ": the " + variants[v].name +
                                      " prompt does not fit " + std::to_string(budget) + " tokens");
      McAnswer a;
      a.variant = v;
      a.prompt = fp->prompt.text;
      a.tokens_removed = fp->tokens_removed;
      prompts.push_back(a.prompt);
      pending.push_back(std::move(a));
    }
    if (pending.empty()) continue;
    auto t0 = std::chrono::steady_clock::now();
    auto gens = r.generate_batch(prompts, gen);
    if (gens.size() != pending.size())
      throw Error("cnorm eval", "reader returned " + std::to_string(gens.size()) +
                                    " generations for " + std::to_string(pending.size()) +
                                    " prompts");
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
        double(pending.size());
    for (size_t j = 0; j < pending.size(); ++j) {
      McAnswer& a = pending[j];
      a.output = gens[j].text;
      a.prompt_tokens = gens[j].prompt_tokens;
      a.extracted = extract_choice(a.output, extract);
      a.correct = a.extracted && *a.extracted == it.answer;
      a.ms = ms;
      on_answer(a, it);
    }
  }
}

std::vector<McSummary> summarize_mc(const std::vector<McGraded>& rows,
                                    const std::vector<std::string>& variants) {
  std::vector<McSummary> out;
  for (const auto& v : variants) {
    McSummary s;
    s.variant = v;
    size_t correct = 0;
    std::map<std::string, size_t> cd, cl;
    for (const auto& r : rows) {
      if (r.variant != v) continue;
      ++s.n;
      correct += r.correct;
      ++s.by_difficulty[r.difficulty].second;
      ++s.by_length[r.length].second;
      cd[r.difficulty] += r.correct;
      cl[r.length] += r.correct;
    }
    if (s.n) s.accuracy = double(correct) / double(s.n);
    for (auto& [k, a] : s.by_difficulty) a.first = double(cd[k]) / double(a.second);
    for (auto& [k, a] : s.by_length) a.first = double(cl[k]) / double(a.second);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ragform::cnorm

#include "pipelines/cnorm/longbench.h"

#include <cctype>
#include <chrono>

#include "base/error.h"
#include "pipelines/cnorm/format.h"

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

std::optional<char> extract_choice(const std::string& output) {
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

McFit fit_mc_items(reader::Reader& r, const std::vector<McItem>& items,
                   const std::vector<Format>& formats, size_t budget) {
  McFit out;
  out.tokens.assign(formats.size(), 0.0);
  for (const auto& it : items) {
    std::vector<double> t;
    for (const auto& f : formats) {
      int n = -1;
      try {
        n = r.count_tokens(longbench_prompt(it, f));
      } catch (const Error&) {
        n = -1;
      }
      if (n < 0 || size_t(n) > budget) break;
      t.push_back(double(n));
    }
    if (t.size() < formats.size()) {
      ++out.left_out;
      continue;
    }
    for (size_t f = 0; f < t.size(); ++f) out.tokens[f] += t[f];
    out.items.push_back(it);
  }
  return out;
}

void run_mc(reader::Reader& r, const std::vector<McItem>& items,
            const std::vector<Variant>& variants, const reader::GenerateParams& gen,
            const std::function<bool(const std::string&, const std::string&)>& skip,
            const std::function<void(const McAnswer&, const McItem&)>& on_answer) {
  for (const auto& it : items) {
    std::vector<McAnswer> pending;
    std::vector<std::string> prompts;
    for (size_t v = 0; v < variants.size(); ++v) {
      if (skip && skip(it.id, variants[v].name)) continue;
      McAnswer a;
      a.variant = v;
      a.prompt = longbench_prompt(it, variants[v].format);
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
      a.extracted = extract_choice(a.output);
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

#include "pipelines/cnorm/tasks.h"

#include <random>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/options.h"
#include "pipelines/cnorm/lazy_permutation.h"
#include "text/doc_formats.h"
#include "text/metrics.h"
#include "text/normalize.h"

namespace ragform::cnorm {
namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to,
                 size_t* first_at = nullptr) {
  size_t pos = 0;
  bool first = true;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    if (first && first_at) *first_at = pos;
    first = false;
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

const char* docs_placeholder(Task t) {
  return t == Task::Kv ? "{formatted_kv_records}" : "{search_results}";
}
const char* question_placeholder(Task t) { return t == Task::Kv ? "{key}" : "{question}"; }

}  // namespace

Task parse_task(std::string_view name, const std::string& key) {
  if (name == "qa") return Task::Qa;
  if (name == "kv") return Task::Kv;
  if (name == "needle") return Task::Needle;
  if (name == "longbench") return Task::Longbench;
  throw OptionError(key, "expected qa, kv, needle or longbench, got '" + std::string(name) + "'");
}

const char* task_name(Task t) {
  switch (t) {
    case Task::Qa:
      return "qa";
    case Task::Kv:
      return "kv";
    case Task::Needle:
      return "needle";
    case Task::Longbench:
      return "longbench";
  }
  return "?";
}

const std::string& needle_template() {
  static const std::string t = "{search_results} {question}";
  return t;
}

const std::string& appendix_d_qa_template() {
  static const std::string t =
      "Write a high-quality answer for the given question using only the provided search results "
      "(some of which might be irrelevant). The search results are ordered randomly.\n\n"
      "Search Results: {search_results}\n\nQuestion: {question}\nAnswer:";
  return t;
}

const std::string& appendix_b_kv_template() {
  static const std::string t =
      "Extract the value corresponding to the specified key in the JSON object below.\n\n"
      "{formatted_kv_records}\n\nKey: \"{key}\"\nCorresponding value:";
  return t;
}

const std::string& longbench_template() {
  static const std::string t =
      "Please read the following text and answer the question below.\n\n<text>\n"
      "{search_results}\n</text>\n\nQuestion: {question}\n\nChoices:\n(A) {choice_a}\n"
      "(B) {choice_b}\n(C) {choice_c}\n(D) {choice_d}\n\nFormat your response as follows: "
      "\"The correct answer is (insert answer here)\".";
  return t;
}

std::string load_template(Task t, const std::string& explicit_path, const std::string& shared_dir) {
  std::string text;
  std::string path = explicit_path;
  if (t == Task::Longbench) {
    if (!path.empty())
      throw OptionError("template",
                        "longbench uses Appendix D's prompt; a template does not apply");
    return longbench_template();
  }
  if (path.empty()) {
    text = t == Task::Needle ? needle_template()
           : t == Task::Qa   ? appendix_d_qa_template()
                             : appendix_b_kv_template();
  } else {
    text = read_file_bytes(path, kMaxTextFileBytes, "prompt template");
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  }
  for (const char* ph : {docs_placeholder(t), question_placeholder(t)})
    if (text.find(ph) == std::string::npos)
      throw Error("cnorm", "prompt template " + (path.empty() ? std::string("(built-in)") : path) +
                               " has no " + ph + " placeholder");
  return text;
}

std::vector<Document> arrange(const Item& item, size_t k, size_t gold_pos) {
  if (k == 0) throw Error("cnorm", "k must be at least 1");
  if (gold_pos >= k)
    throw Error("cnorm",
                "gold position " + std::to_string(gold_pos) + " outside k = " + std::to_string(k));
  if (item.distractors.size() < k - 1)
    throw Error("cnorm", "item " + item.id + " has " + std::to_string(item.distractors.size()) +
                             " distractors, k = " + std::to_string(k) + " needs " +
                             std::to_string(k - 1));
  std::vector<Document> docs(item.distractors.begin(),
                             item.distractors.begin() + std::ptrdiff_t(k - 1));
  docs.insert(docs.begin() + std::ptrdiff_t(gold_pos), item.gold);
  return docs;
}

std::string format_text(Task t, const std::string& text, const Format& f) {
  if (f.delim.original) return text;  // the unformatted candidate, whatever p says
  if (t == Task::Kv) return f.p > 0 ? format_uuid(text, f.delim.text) : text;
  return format_document(text, f.delim.text, f.p, f.seed);
}

const std::vector<std::string>& wrapper_names() {
  static const std::vector<std::string> w = {"json", "markdown", "yaml"};
  return w;
}

std::string parse_wrapper(std::string_view name) {
  for (const auto& w : wrapper_names())
    if (name == w) return w;
  throw OptionError("formats",
                    "unknown document format '" + std::string(name) + "' (json, markdown, yaml)");
}

std::string wrap_document(const std::string& wrapper, const std::string& title,
                          const std::string& text) {
  if (wrapper.empty()) return text;
  if (wrapper == "json") return text::to_json_doc(title, text);
  if (wrapper == "markdown") return text::to_markdown_doc(title, text);
  if (wrapper == "yaml") return text::to_yaml_doc(title, text);
  if (wrapper == "html") return text::to_html_doc(title, text);
  throw Error("cnorm", "unknown document format '" + wrapper + "'");
}

namespace {

// Appendix D's LongBench-v2 prompt (longbench_template()) of one formatted context.
Prompt render_longbench(const Item& item, const std::vector<Document>& docs, const Format& f) {
  if (docs.size() != 1)
    throw Error("cnorm", "longbench item " + item.id + ": one context and four choices expected");
  return render_longbench_context(item, format_text(Task::Longbench, docs[0].text, f));
}

}  // namespace

Prompt render_longbench_context(const Item& item, const std::string& context) {
  if (item.choices.size() != 4)
    throw Error("cnorm", "longbench item " + item.id + ": one context and four choices expected");
  // Filled field by field, so text inside a field is never taken for a placeholder.
  Prompt p;
  p.text = "Please read the following text and answer the question below.\n\n<text>\n";
  p.ctx_begin = p.text.size();
  p.text += context;
  p.ctx_end = p.text.size();
  p.text += "\n</text>\n\nQuestion: " + item.question + "\n\nChoices:\n(A) " + item.choices[0] +
            "\n(B) " + item.choices[1] + "\n(C) " + item.choices[2] + "\n(D) " + item.choices[3] +
            "\n\nFormat your response as follows: \"The correct answer is (insert answer here)\".";
  return p;
}

Prompt render(Task t, const std::string& tmpl, const Item& item, const std::vector<Document>& docs,
              const Format& f) {
  if (!f.wrapper.empty() && (t == Task::Kv || t == Task::Longbench))
    throw OptionError(
        "formats", std::string("document formats do not apply to the ") + task_name(t) + " task");
  if (t == Task::Longbench) return render_longbench(item, docs, f);
  std::string body;
  for (size_t i = 0; i < docs.size(); ++i) {
    const Document& d = docs[i];
    switch (t) {
      case Task::Qa:
        if (i) body += "\n";
        if (f.wrapper.empty())
          body += "Document [" + std::to_string(i + 1) + "](Title: " + d.title + ") " +
                  format_text(t, d.text, f);
        else
          body += "Document [" + std::to_string(i + 1) + "] " +
                  wrap_document(f.wrapper, d.title, format_text(t, d.text, f));
        break;
      case Task::Kv:
        body += i == 0 ? "{" : " ";
        body += "\"" + format_text(t, d.title, f) + "\": \"" + format_text(t, d.text, f) + "\"";
        body += i + 1 == docs.size() ? "}" : ",\n";
        break;
      case Task::Longbench:  // rendered above
        break;
      case Task::Needle:
        if (i) body += f.wrapper.empty() ? " " : "\n";
        body += wrap_document(f.wrapper,
                              d.title.empty() ? "Document " + std::to_string(i + 1) : d.title,
                              format_text(t, d.text, f));
        break;
    }
  }
  std::string question = t == Task::Kv ? format_text(t, item.question, f) : item.question;
  // Fill the question first, so a question containing "{search_results}" cannot move the span.
  Prompt p;
  p.text = tmpl;
  replace_all(p.text, question_placeholder(t), question);
  size_t at = std::string::npos;
  replace_all(p.text, docs_placeholder(t), body, &at);
  p.ctx_begin = at;
  p.ctx_end = at + body.size();
  return p;
}

std::vector<Item> build_qa_items(const std::vector<eval::QaRecord>& records, size_t k,
                                 uint64_t seed, std::vector<std::string>* skipped) {
  if (k == 0) throw UsageError("cnorm", "k must be at least 1");
  std::vector<int> gold_of(records.size(), -1);
  for (size_t r = 0; r < records.size(); ++r) {
    const auto& rec = records[r];
    if (rec.ctxs.empty())
      throw Error("cnorm", "record " + rec.id + " (line " + std::to_string(rec.source_line) +
                               ") has no passages");
    int g = -1;
    for (size_t i = 0; i < rec.ctxs.size() && g < 0; ++i)
      if (rec.ctxs[i].isgold) g = int(i);
    for (size_t i = 0; i < rec.ctxs.size() && g < 0; ++i)
      if (rec.ctxs[i].hasanswer.value_or(false)) g = int(i);
    gold_of[r] = g < 0 ? 0 : g;
  }
  std::vector<Item> items;
  items.reserve(records.size());
  for (size_t r = 0; r < records.size(); ++r) {
    const auto& rec = records[r];
    Item it;
    it.id = rec.id;
    it.question = rec.question;
    it.answers = rec.answers;
    const auto& g = rec.ctxs[size_t(gold_of[r])];
    it.gold = {g.title, g.text};
    it.natural_position = size_t(gold_of[r]);
    // Answers that normalise to "" (e.g. "*") would match every passage: they are not checked.
    std::vector<std::string> checkable;
    for (const auto& a : rec.answers)
      if (!text::normalize_answer(a).empty()) checkable.push_back(a);
    if (rec.ctxs.size() >= k) {
      for (size_t i = 0; i < rec.ctxs.size() && it.distractors.size() < k - 1; ++i)
        if (int(i) != gold_of[r]) it.distractors.push_back({rec.ctxs[i].title, rec.ctxs[i].text});
    } else {
      it.natural_position = 0;
      auto consider = [&](size_t j) {
        if (j == r) return;
        const auto& d = records[j].ctxs[size_t(gold_of[j])];
        if (d.text == g.text) return;
        if (!checkable.empty() && text::substring_match(d.text, checkable) > 0) return;
        it.distractors.push_back({d.title, d.text});
      };
      const uint64_t order_seed = splitmix64_mix(seed ^ fnv1a64(rec.id));
      if (records.size() <= kExactDrawRecords) {
        for (size_t j : seeded_permutation(records.size(), order_seed)) {
          if (it.distractors.size() >= k - 1) break;
          consider(j);
        }
      } else {
        LazyPermutation order(records.size(), order_seed);
        while (it.distractors.size() < k - 1 && !order.done() && order.drawn() < kMaxDrawnPassages)
          consider(order.next());
      }
    }
    if (it.distractors.size() < k - 1) {
      if (skipped) {
        skipped->push_back(rec.id);
        continue;
      }
      throw Error("cnorm", "record " + rec.id + ": only " + std::to_string(it.distractors.size()) +
                               " distractors without its answers, k = " + std::to_string(k) +
                               " needs " + std::to_string(k - 1));
    }
    items.push_back(std::move(it));
  }
  return items;
}

std::vector<Item> build_kv_items(const std::vector<eval::QaRecord>& records) {
  std::vector<Item> items;
  for (const auto& rec : records) {
    if (!rec.kv)
      throw Error("cnorm", "record " + rec.id + " (line " + std::to_string(rec.source_line) +
                               ") is not a key-value retrieval record");
    const auto& kv = *rec.kv;
    if (kv.gold_index >= kv.records.size())
      throw Error("cnorm", "record " + rec.id + ": gold index outside its records");
    Item it;
    it.id = rec.id;
    it.question = kv.key;
    it.answers = {kv.value};
    it.gold = {kv.records[kv.gold_index].first, kv.records[kv.gold_index].second};
    for (size_t i = 0; i < kv.records.size(); ++i)
      if (i != kv.gold_index) it.distractors.push_back({kv.records[i].first, kv.records[i].second});
    it.natural_position = kv.gold_index;
    items.push_back(std::move(it));
  }
  return items;
}

std::vector<Item> make_needle_items(size_t n, size_t k, uint64_t seed) {
  static const std::vector<std::string> animals = {"dog",  "cat",  "bird",  "fish",  "frog",
                                                   "duck", "bear", "bunny", "horse", "cow"};
  static const std::vector<std::string> names = {"Max", "Lily", "Tom",  "Sue", "Ben",
                                                 "Mia", "Sam",  "Lucy", "Tim", "Anna",
                                                 "Bob", "Zoe",  "Jack", "Amy"};
  static const std::vector<std::string> acts = {"play in the park", "eat cake",  "run fast",
                                                "sing songs",       "jump high", "read books"};
  if (k == 0 || k > 12)
    throw UsageError("cnorm",
                     "the story needle supports 1 to 12 slots, got k = " + std::to_string(k));
  if (n > kMaxNeedleItems)
    throw UsageError("cnorm", "the story needle makes at most " + std::to_string(kMaxNeedleItems) +
                                  " items, asked for " + std::to_string(n) +
                                  " (-S, --limit or --count)");
  auto slot = [](const std::string& animal, const std::string& name, const std::string& act) {
    return Document{
        "", "There was a " + animal + " named " + name + ". " + name + " liked to " + act + "."};
  };
  std::vector<Item> items;
  for (size_t i = 0; i < n; ++i) {
    std::mt19937_64 rng(splitmix64_mix(seed ^ (0x6e6565646c65ULL + i)));
    auto pick = [&rng](size_t m) { return size_t(rng() % uint64_t(m)); };
    size_t a = pick(animals.size()), nm = pick(names.size());
    Item it;
    it.id = "needle-" + std::to_string(i);
    it.question = "The " + animals[a] + "'s name was";
    it.answers = {names[nm]};
    it.gold = slot(animals[a], names[nm], acts[pick(acts.size())]);
    std::vector<size_t> others;
    for (size_t j : seeded_permutation(names.size(), rng()))
      if (j != nm) others.push_back(j);
    for (size_t d = 0; d + 1 < k; ++d) {
      size_t da = pick(animals.size() - 1);
      if (da >= a) ++da;  // any animal but the gold's
      it.distractors.push_back(slot(animals[da], names[others[d]], acts[pick(acts.size())]));
    }
    it.natural_position = pick(k);
    items.push_back(std::move(it));
  }
  return items;
}

}  // namespace ragform::cnorm

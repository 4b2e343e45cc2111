#include "tune/presentation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "base/json_keys.h"
#include "base/json_number.h"
#include "pipelines/cnorm/cnorm.h"
#include "pipelines/spotlight/spotlight.h"

namespace ragform::tune {

namespace {

cnorm::Task cnorm_task(Task t) {
  switch (t) {
    case Task::Qa:
      return cnorm::Task::Qa;
    case Task::Kv:
      return cnorm::Task::Kv;
    case Task::Needle:
      return cnorm::Task::Needle;
  }
  return cnorm::Task::Qa;
}

// A shown document and where it came from, so the gold can be followed through k and order.
struct Doc {
  cnorm::Document doc;
  const eval::Context* ctx = nullptr;  // qa/needle: the record's context
  size_t source = 0;                   // index in the record's own order
};

// The record as C-NORM's item (question, answers) and its documents in the record's order.
std::pair<cnorm::Item, std::vector<Doc>> documents(const eval::QaRecord& r, Task t) {
  std::vector<Doc> docs;
  if (t == Task::Kv) {
    cnorm::Item item = cnorm::build_kv_items({r}).at(0);
    const size_t n = item.distractors.size() + 1;
    std::vector<cnorm::Document> arranged = cnorm::arrange(item, n, item.natural_position);
    for (size_t i = 0; i < arranged.size(); ++i) docs.push_back({arranged[i], nullptr, i});
    return {std::move(item), std::move(docs)};
  }
  cnorm::Item item;
  item.id = r.id;
  item.question = r.question;
  item.answers = r.answers;
  for (size_t i = 0; i < r.ctxs.size(); ++i)
    docs.push_back({{r.ctxs[i].title, r.ctxs[i].text}, &r.ctxs[i], i});
  return {std::move(item), std::move(docs)};
}

// Lost-in-the-middle's alternation: ranks 0, 2, 4, ... from the front, 1, 3, 5, ... from the back.
std::vector<Doc> edges(std::vector<Doc> docs) {
  std::vector<Doc> front, back;
  for (size_t i = 0; i < docs.size(); ++i) (i % 2 == 0 ? front : back).push_back(docs[i]);
  front.insert(front.end(), back.rbegin(), back.rend());
  return front;
}

std::vector<Doc> ordered(std::vector<Doc> docs, Order o) {
  switch (o) {
    case Order::Retrieved:
      return docs;
    case Order::Reversed:
      std::reverse(docs.begin(), docs.end());
      return docs;
    case Order::Edges:
      return edges(std::move(docs));
    case Order::Score: {
      bool scored = !docs.empty() && std::all_of(docs.begin(), docs.end(), [](const Doc& d) {
        return d.ctx && d.ctx->score;
      });
      if (scored)
        std::stable_sort(docs.begin(), docs.end(),
                         [](const Doc& a, const Doc& b) { return *a.ctx->score > *b.ctx->score; });
      return docs;
    }
  }
  return docs;
}

// Step 4b: SpotlightRAG's selection over the shown documents, in their shown order.
std::string spotlight_prompt(const eval::QaRecord& r, const std::vector<Doc>& docs,
                             const Presentation& p) {
  eval::QaRecord shown = r;
  shown.ctxs.clear();
  for (const Doc& d : docs) shown.ctxs.push_back(*d.ctx);
  std::vector<spotlight::Document> sdocs = spotlight::documents_of(shown);
  // No word vectors: every word is an identity token, so scores are exact word overlap, the
  // same on every machine and for every model.
  static const spotlight::WordVectors none{};
  spotlight::StaticEncoder enc(none);
  spotlight::ScoredQuestion scored =
      spotlight::score_question(enc, r.question, sdocs, spotlight::default_score_params());
  spotlight::SelectParams sp;
  sp.top_K = p.spotlight;
  sp.order = spotlight::Order::Document;
  sp.special_tokens = p.spotlight_tokens;
  return spotlight::select_and_annotate(r.question, sdocs, scored, sp).prompt;
}

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

Task parse_task(std::string_view name) {
  if (name == "qa") return Task::Qa;
  if (name == "kv") return Task::Kv;
  if (name == "needle") return Task::Needle;
  throw UsageError("--task", "unknown task '" + std::string(name) + "' (qa, kv, needle)");
}

const char* task_name(Task t) { return cnorm::task_name(cnorm_task(t)); }

Order parse_order(std::string_view name) {
  if (name == "retrieved") return Order::Retrieved;
  if (name == "reversed") return Order::Reversed;
  if (name == "edges") return Order::Edges;
  if (name == "score") return Order::Score;
  throw UsageError("order",
                   "unknown order '" + std::string(name) + "' (retrieved, reversed, edges, score)");
}

const char* order_name(Order o) {
  switch (o) {
    case Order::Retrieved:
      return "retrieved";
    case Order::Reversed:
      return "reversed";
    case Order::Edges:
      return "edges";
    case Order::Score:
      return "score";
  }
  return "retrieved";
}

const std::vector<std::string>& format_names() {
  // cnorm::wrap_document renders each of these but "plain" (the template's own layout).
  static const std::vector<std::string> names = {"plain", "json", "markdown", "yaml", "html"};
  return names;
}

Presentation original_presentation() { return {}; }

std::string label(const Presentation& p) {
  std::string s = "delim=" + p.delimiter;
  if (p.delimiter != "original") s += ",p=" + number(p.p);
  s += ",format=" + p.format + ",order=" + order_name(p.order);
  s += ",k=" + (p.k ? std::to_string(p.k) : std::string("all"));
  s += ",spotlight=";
  s += p.spotlight ? std::to_string(p.spotlight) + (p.spotlight_tokens ? "+tokens" : "") : "off";
  return s;
}

nlohmann::ordered_json to_json(const Presentation& p) {
  return {{"delimiter", p.delimiter},     {"p", p.p},
          {"format_seed", p.format_seed}, {"format", p.format},
          {"order", order_name(p.order)}, {"k", p.k},
          {"spotlight", p.spotlight},     {"spotlight_tokens", p.spotlight_tokens}};
}

Presentation presentation_from_json(const nlohmann::json& j_in, const std::string& where) {
  if (!j_in.is_object()) throw UsageError(where, "presentation: not a JSON object");
  // A null key is a key not given (base/json_keys.h; pass 19: {"k": null} was "must be a
  // non-negative integer"); every fault is a UsageError, as an unknown key is.
  const nlohmann::json j = without_nulls(j_in);
  Presentation p;
  auto bad = [&](const char* field, const std::string& why) {
    return UsageError(where, std::string(field) + ": " + why);
  };
  // A key that is missing takes the original presentation's value (delimiter original, p 0,
  // format plain, order retrieved, k all, no spotlight); a misspelt key would silently do the same,
  // so every key must be one of to_json's.
  only_json_keys(
      j, {"delimiter", "p", "format_seed", "format", "order", "k", "spotlight", "spotlight_tokens"},
      where, "a presentation");
  auto str = [&](const char* f, std::string& out) {
    if (!j.contains(f)) return;
    if (!j[f].is_string()) throw bad(f, "must be a string");
    out = j[f].get<std::string>();
  };
  auto count = [&](const char* f, auto& out) {
    using T = std::remove_reference_t<decltype(out)>;
    if (!j.contains(f)) return;
    long long x = 0;  // 2.0 as 2, as every JSON integer (base/json_number.h; pass 13)
    if (!json_whole_number(j[f], x) || x < 0) throw bad(f, "must be a non-negative integer");
    // 10^12 would wrap to a negative int (then "must be at least 0"): say what is accepted.
    if (uint64_t(x) > uint64_t(std::numeric_limits<T>::max()))
      throw bad(f, "must be at most " + std::to_string(std::numeric_limits<T>::max()));
    out = static_cast<T>(x);
  };
  str("delimiter", p.delimiter);
  if (j.contains("p")) {
    if (!j["p"].is_number()) throw bad("p", "must be a number");
    p.p = j["p"].get<double>();
    if (!(p.p >= 0 && p.p <= 1)) throw bad("p", "must be in [0, 1]");
  }
  count("format_seed", p.format_seed);
  str("format", p.format);
  if (std::find(format_names().begin(), format_names().end(), p.format) == format_names().end())
    throw bad("format", "unknown format '" + p.format + "'");
  if (j.contains("order")) {
    if (!j["order"].is_string()) throw bad("order", "must be a string");
    try {
      p.order = parse_order(j["order"].get<std::string>());
    } catch (const UsageError&) {
      throw bad("order", "unknown order '" + j["order"].get<std::string>() + "'");
    }
  }
  count("k", p.k);
  count("spotlight", p.spotlight);
  if (j.contains("spotlight_tokens")) {
    if (!j["spotlight_tokens"].is_boolean()) throw bad("spotlight_tokens", "must be true or false");
    p.spotlight_tokens = j["spotlight_tokens"].get<bool>();
  }
  try {
    cnorm::parse_delimiter(p.delimiter);
  } catch (const UsageError& e) {
    throw bad("delimiter", e.what());
  }
  // A delimiter without its ratio would be applied at p = 0: the documents unchanged.
  if (p.delimiter != "original" && !j.contains("p"))
    throw bad("p", "missing: delimiter '" + p.delimiter +
                       "' needs the share of whitespace it replaces, in (0, 1]");
  if (p.spotlight_tokens && p.spotlight == 0)
    throw bad("spotlight_tokens",
              "true needs spotlight K >= 1 (there are no selected spans to "
              "mark)");
  return p;
}

void validate(const Presentation& p, Task t, const std::string& where) {
  cnorm::parse_delimiter(p.delimiter);
  cnorm::validate_p(p.p, where + ": p");
  if (std::find(format_names().begin(), format_names().end(), p.format) == format_names().end())
    throw UsageError(where, "unknown format '" + p.format + "'");
  if (t == Task::Kv && p.format != "plain")
    throw UsageError(where, "document formats do not apply to the kv task");
  if (p.spotlight < 0) throw UsageError(where, "spotlight K must be at least 0");
  if (p.spotlight && t == Task::Kv)
    throw UsageError(where, "spotlight selection does not apply to the kv task");
  if (p.spotlight && (p.delimiter != "original" || p.format != "plain"))
    throw UsageError(where,
                     "spotlight selection keeps the sentences as written (delimiter "
                     "original, format plain)");
}

Rendered render(const eval::QaRecord& record, const Presentation& p, Task t,
                const std::string& tmpl) {
  auto [item, docs] = documents(record, t);
  if (docs.empty()) throw Error("record " + record.id, "no documents to present");
  const int gold = gold_index(record, t);
  if (p.k && p.k < docs.size()) docs.resize(p.k);
  docs = ordered(std::move(docs), p.order);
  Rendered out;
  out.documents = docs.size();
  for (size_t i = 0; i < docs.size(); ++i)
    if (int(docs[i].source) == gold) out.gold_position = int(i);
  if (p.spotlight) {
    validate(p, t, "record " + record.id);
    out.prompt = spotlight_prompt(record, docs, p);
    return out;
  }
  cnorm::Format f;
  f.delim = cnorm::parse_delimiter(p.delimiter);
  f.p = p.p;
  f.seed = p.format_seed;
  f.wrapper = p.format == "plain" ? "" : p.format;
  std::vector<cnorm::Document> shown;
  for (const Doc& d : docs) shown.push_back(d.doc);
  out.prompt = cnorm::render(cnorm_task(t), tmpl, item, shown, f).text;
  return out;
}

std::string template_for(Task t, const std::string& path) {
  return cnorm::load_template(cnorm_task(t), path);
}

int gold_index(const eval::QaRecord& record, Task t) {
  if (t == Task::Kv) return record.kv ? int(record.kv->gold_index) : -1;
  if (record.ctxs.empty()) return -1;
  for (size_t i = 0; i < record.ctxs.size(); ++i)
    if (record.ctxs[i].isgold) return int(i);
  for (size_t i = 0; i < record.ctxs.size(); ++i)
    if (record.ctxs[i].hasanswer.value_or(false)) return int(i);
  return 0;
}

}  // namespace ragform::tune

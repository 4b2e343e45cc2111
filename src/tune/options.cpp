// From the front ends' arguments to a search: TuneArgs -> TuneOptions (the dev and held-out
// splits read or generated, the context cap and its source), shared by `ragform tune` and Python.
#include "tune/run.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/file_identity.h"
#include "base/shard.h"
#include "base/stable_hash.h"
#include "engine/model/model_card.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/cnorm.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "text/normalize.h"
#include "text/unicode.h"
#include "text/unicode_db.h"
#include "text/utf8.h"

namespace ragform::tune {

namespace {

std::vector<eval::QaRecord> split(Task task, const std::string& path, size_t n, size_t slots,
                                  uint64_t seed, const char* key) {
  if (task == Task::Needle) {
    if (!path.empty()) return eval::load_qa_file(path).records;
    return needle_records(n, slots, seed);
  }
  if (path.empty())
    throw OptionError(key, std::string("required for the ") + task_name(task) + " task");
  return eval::load_qa_file(path).records;
}

// Text as overlap compares it: invalid UTF-8 repaired, lowercased (text/unicode.h's table),
// default-ignorable code points dropped (soft hyphen, zero-width characters, direction marks,
// variation selectors, tags, BOM: text::is_default_ignorable; U+200E alone let a copy of the dev
// split pass as held out), whitespace runs collapsed to one space and trimmed. The project has
// no NFC or NFKC tables, so text in another normalisation form is not matched (a held-out record
// written NFD, or with full-width digits, is kept). With `no_punctuation`, punctuation (\p{P})
// is dropped too: for a question, where "...physics", "...physics?" and "...physics ?" ask the
// same thing (pass 11 kept such copies as held out; answers are compared without punctuation too).
std::string overlap_text(std::string_view s, bool no_punctuation = false) {
  std::string out;
  bool space = false;
  for (uint32_t cp : text::decode_utf8(text::repair_utf8(s))) {
    if (text::is_default_ignorable(cp)) continue;
    if (no_punctuation && (text::cp_flags(cp) & text::kPunctuation)) continue;
    if (text::is_space(cp)) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    text::append_utf8(out, text::to_lower(cp));
  }
  return out;
}

// What makes a record the same question put the same way, so that `ragform present` renders the
// same prompts for it: its question, its documents as a multiset of (title, text), its answers as
// a set under the metrics' normalisation (text/normalize.h) and its key-value payload. Left out:
// ids and scores of documents, and their hasanswer/isgold flags (they only mark which document
// is gold; the prompt shows the same texts), and documents past the first `compared` (0 = all):
// the candidates of that k do not show them (presentation.cpp keeps the first k, then orders
// them), so a record with more documents behind the same first ones is the same prompts under
// those candidates. The needle task's questions repeat by design, so the question alone does not
// identify a record.
std::string content_key(const eval::QaRecord& r, size_t compared) {
  std::vector<nlohmann::json> docs;
  const size_t n = compared ? std::min(compared, r.ctxs.size()) : r.ctxs.size();
  for (size_t i = 0; i < n; ++i)
    docs.push_back(
        nlohmann::json::array({overlap_text(r.ctxs[i].title), overlap_text(r.ctxs[i].text)}));
  std::sort(docs.begin(), docs.end());
  std::set<std::string> answers;
  for (const auto& a : r.answers) answers.insert(text::normalize_answer(a));
  // Key-value pairs folded as the rest (seventh pass, F9: a copy with a zero-width space in one
  // key, or a space around a value, was kept as held out), in their order (the prompt's).
  nlohmann::json kv = nullptr;
  if (r.kv) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& [k, v] : r.kv->records) pairs.push_back({overlap_text(k), overlap_text(v)});
    kv = {overlap_text(r.kv->key), overlap_text(r.kv->value), pairs, r.kv->gold_index};
  }
  return store::sha256_hex(
      store::canonical_json({overlap_text(r.question, true), answers, docs, kv}));
}

// The documents compared: the space's smallest k (all, 0, only when every k is "all"). A
// held-out record equal to a dev record in its first k documents renders the same prompts under
// every candidate of that k, so if one of them wins, its held-out answers would be answers
// searched on; a record that differs only past them counts as overlap (dropping it only shrinks
// the held-out split).
size_t compared_documents(const Space& s) {
  size_t fewest = 0;
  for (size_t k : s.ks)
    if (k != 0 && (fewest == 0 || k < fewest)) fewest = k;
  return fewest;
}

// An id the file gave, not the "<format>:<line>" default that two files share by position.
bool explicit_id(const eval::QaRecord& r) {
  return r.id != r.source_format + ":" + std::to_string(r.source_line);
}

// Records tune cannot grade or store, refused before the first prompt with FILE:LINE: one without
// a gold answer, and an id given twice in a split (its rows would collide in the store).
void check_split(const std::vector<eval::QaRecord>& recs, const std::string& path,
                 const char* flag) {
  std::map<std::string, size_t> seen;
  for (const eval::QaRecord& r : recs) {
    const std::string where = path.empty() ? std::string(flag) + ": record " + excerpt(r.id)
                                           : path + ":" + std::to_string(r.source_line);
    if (r.answers.empty())
      throw UsageError(where, "no gold answers: tune grades every answer against them");
    const auto [it, fresh] = seen.emplace(r.id, r.source_line);
    if (!fresh)
      throw UsageError(where, "id '" + excerpt(r.id) + "' is also the id of line " +
                                  std::to_string(it->second) + ": ids in a split must differ");
  }
}

}  // namespace

size_t drop_holdout_repeats(std::vector<eval::QaRecord>& holdout, size_t compared) {
  std::set<std::string> seen;
  const size_t before = holdout.size();
  std::erase_if(holdout, [&](const eval::QaRecord& r) {
    return !seen.insert(content_key(r, compared)).second;
  });
  return before - holdout.size();
}

size_t drop_dev_overlap(const std::vector<eval::QaRecord>& dev,
                        std::vector<eval::QaRecord>& holdout, size_t compared) {
  std::set<std::string> ids, contents;
  for (const auto& r : dev) {
    if (explicit_id(r)) ids.insert(r.id);
    contents.insert(content_key(r, compared));
  }
  const size_t before = holdout.size();
  std::erase_if(holdout, [&](const eval::QaRecord& r) {
    return (explicit_id(r) && ids.count(r.id)) || contents.count(content_key(r, compared));
  });
  return before - holdout.size();
}

std::vector<std::string> dimension_values_of_flag(const std::string& key, const std::string& text) {
  static const std::map<std::string, std::string> dimension = {
      {"delims", "delimiter"}, {"p", "p"}, {"formats", "format"},
      {"orders", "order"},     {"k", "k"}, {"spotlight", "spotlight"}};
  auto it = dimension.find(key);
  return dimension_values(it == dimension.end() ? key : it->second, text);
}

void check_output_is_not_the_model(const std::string& output, const std::string& model) {
  if (!output.empty() && !model.empty() && same_file(output, model))
    throw OptionError("output", "'" + excerpt(output) +
                                    "' is the model file itself: write the profile elsewhere");
}

TuneOptions tune_options(const TuneArgs& given) {
  TuneArgs a = given;
  check_options(a);  // every declared range (args.h), named by key
  TuneOptions o;
  if (a.task != "qa" && a.task != "kv" && a.task != "needle")
    throw OptionError("task", "unknown task '" + excerpt(a.task) + "' (qa, kv, needle)");
  o.task = parse_task(a.task);
  o.objective = parse_objective(a.objective);
  o.robust_floor = a.robust_floor;
  o.deploy = parse_deploy_rule(a.deploy);
  o.budget = a.budget;
  // A key-value answer is a UUID, 34 of Gemma 3's tokens: at 12 every kv answer was cut and
  // graded wrong, whatever the presentation. kv generates what C-NORM's kv sweep does; qa and
  // needle answers are short, and 12 keeps a search's rungs cheaper than a sweep's 16.
  o.max_tokens = a.max_tokens         ? *a.max_tokens
                 : o.task == Task::Kv ? cnorm::answer_tokens(cnorm::Task::Kv)
                                      : 12;
  o.seed = a.seed;
  o.tmpl = template_for(o.task, a.template_file);
  o.space = default_space(o.task);
  if (!a.space_file.empty()) o.space = load_space_file(a.space_file, o.space);
  const std::pair<const std::optional<std::vector<std::string>>*, const char*> dims[] = {
      {&a.delims, "delimiter"}, {&a.p, "p"}, {&a.formats, "format"},
      {&a.orders, "order"},     {&a.k, "k"}, {&a.spotlight, "spotlight"}};
  for (const auto& [list, dim] : dims)
    if (*list) set_dimension(o.space, dim, **list);
  candidates(o.space, o.task);  // a space that does not apply to the task fails before loading
  o.search.abs_filter = a.abs_filter;
  // ABS as the objective is C-NORM's calibration: the same number of prompts by default.
  o.search.abs_prompts = a.abs_prompts.value_or(o.objective == Objective::Abs ? 6 : 2);
  o.search.abs_keep = a.abs_keep.value_or(0.5);
  o.search.narrow_abs_keep = !a.abs_keep;
  o.search.narrow_finalists = !a.finalists;
  o.search.eta = a.eta;
  o.search.finalists = a.finalists.value_or(3);
  o.search.robust_items = a.robust_items;
  o.search.robust_kinds = robustness_kinds().size();
  if (!a.shard.empty()) {
    Shard sh;
    try {
      sh = parse_shard(a.shard);
    } catch (const UsageError&) {
      throw OptionError("shard",
                        "'" + excerpt(a.shard) + "' is not i/n with 0 <= i < n (e.g. 0/4)");
    }
    o.shard_index = sh.index;
    o.shard_count = sh.count;
  }
  // Refused before the search, not when the profile is written after it (base/file_identity.h):
  // the store, and every file the search reads (pass 13: -o naming the --space file replaced it).
  if (!a.output.empty()) {
    if (same_file(a.output, a.store_path) || same_file(a.output, a.store_path + "-wal") ||
        same_file(a.output, a.store_path + "-shm") ||
        same_file(a.output, a.store_path + "-journal"))
      throw OptionError("output", "'" + excerpt(a.output) +
                                      "' is the run store itself: write the profile elsewhere "
                                      "(replacing the store would lose its measurements)");
    for (const auto& [key, path] : {std::pair<const char*, const std::string&>{"input", a.input},
                                    {"holdout", a.holdout},
                                    {"space", a.space_file},
                                    {"template", a.template_file}})
      if (!path.empty() && same_file(a.output, path))
        throw OptionError("output", "'" + excerpt(a.output) + "' is the " + key +
                                        " file itself: write the profile elsewhere");
  }
  // Dev and held-out needle records come from independent seeds. make_needle_items seeds item i
  // with seed ^ (C + i), so two nearby seeds (2s+1 and 2s+2, as this was) give the same items
  // shifted by a few places: 23 of 32 held-out records were dev records. derive_seed's outputs
  // share no such structure.
  o.dev =
      split(o.task, a.input, a.dev_items, a.needle_slots, derive_seed(o.seed, "tune dev"), "input");
  o.holdout = split(o.task, a.holdout, a.holdout_items, a.needle_slots,
                    derive_seed(o.seed, "tune holdout"), "holdout");
  o.dev_path = a.input;
  o.holdout_path = a.holdout;
  check_split(o.dev, a.input, "--input");
  check_split(o.holdout, a.holdout, "--holdout");
  // A held-out record that is also a dev record was searched on: its answers would make the
  // held-out interval and McNemar p those of the search. It is dropped (run_tune says how many).
  const size_t held = o.holdout.size();
  const size_t compared = compared_documents(o.space);
  o.holdout_overlap = drop_dev_overlap(o.dev, o.holdout, compared);
  o.holdout_repeats = drop_holdout_repeats(o.holdout, compared);
  if (held > 0 && o.holdout.empty())
    throw OptionError("holdout", "all " + std::to_string(held) +
                                     " held-out records are also in the dev split (by id or by "
                                     "question, answers and documents, compared as "
                                     "docs/tune.md describes): a held-out split must be "
                                     "disjoint from --input");
  o.store_path = a.store_path;
  return o;
}

// A GGUF's context_length is what the file states, not always what the model was trained on (a
// llama2.c export states 2048 whatever its max_seq_len was): the output names the cap's source.
std::pair<size_t, std::string> context_cap(std::optional<size_t> given, bool native,
                                           const std::string& model_path, size_t ctx) {
  if (given) return {*given, "--ctx"};
  if (!native) return {0, "the server's context is not known here: give --ctx to cap prompts"};
  const int train = model::training_context(model_path);
  if (train <= 0) return {ctx, "the reader's default: the model file states no context length"};
  std::string src = "the model file's context_length " + std::to_string(train);
  if (ctx < size_t(train)) src += ", capped to the reader's default";
  return {ctx, src + "; --ctx overrides it"};
}

std::vector<eval::QaRecord> needle_records(size_t n, size_t k, uint64_t seed) {
  std::vector<eval::QaRecord> out;
  for (const cnorm::Item& it : cnorm::make_needle_items(n, k, seed)) {
    eval::QaRecord r;
    r.id = "needle-" + std::to_string(seed) + "-" + it.id.substr(it.id.rfind('-') + 1);
    r.question = it.question;
    r.answers = it.answers;
    r.source_format = "needle";
    const std::vector<cnorm::Document> docs = cnorm::arrange(it, k, it.natural_position);
    for (size_t i = 0; i < docs.size(); ++i) {
      eval::Context c;
      c.id = r.id + "/" + std::to_string(i);
      c.title = docs[i].title;
      c.text = docs[i].text;
      c.isgold = i == it.natural_position;
      c.hasanswer = c.isgold;
      r.ctxs.push_back(std::move(c));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ragform::tune

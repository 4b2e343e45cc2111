#include "pipelines/sure/prepare.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "base/error.h"
#include "base/stable_hash.h"
#include "eval/jsonl.h"
#include "pipelines/sure/evaluate.h"
#include "reader/measured.h"
#include "store/sha256.h"
#include "text/metrics.h"

namespace ragform::sure {

namespace {

std::string key2(std::string_view a, std::string_view b) {
  std::string k(a);
  k += '\0';
  k += b;
  return k;
}

}  // namespace

store::RunConfig prepare_run_config(const PrepareOptions& opt, const PromptSet& prompts,
                                    const std::vector<eval::QaRecord>& records) {
  nlohmann::json questions = nlohmann::json::array();
  for (const auto& r : records) questions.push_back({r.id, r.question, r.answers});
  store::RunConfig rc;
  rc.pipeline = "sure prepare";
  rc.config = {{"temperature", opt.temperature},
               {"max_tokens", opt.max_tokens},
               {"closed_book", opt.known ? "file" : prompts.identity("closed_book")},
               {"grading", "substring_match"},
               {"questions_sha256", store::sha256_hex(questions.dump())}};
  // Absent at 1: the key of every run written before the option existed stays the same.
  if (opt.per_question != 1) rc.config["per_question"] = opt.per_question;
  return rc;
}

std::map<std::string, bool> read_known_file(const std::string& path) {
  std::map<std::string, bool> out;
  eval::for_each_json_record(path, {}, [&](const eval::JsonRow& row) {
    auto id = row.value.find("id");
    auto kn = row.value.find("known");
    if (id == row.value.end()) throw eval::RowError("missing field 'id'");
    if (kn == row.value.end()) throw eval::RowError("missing field 'known'");
    if (!kn->is_boolean())
      throw eval::RowError(std::string("field 'known': expected boolean, got ") + kn->type_name());
    std::string s = id->is_string() ? id->get<std::string>() : id->dump();
    if (!out.emplace(s, kn->get<bool>()).second) throw eval::RowError("duplicate id '" + s + "'");
  });
  return out;
}

std::map<std::string, bool> prepared_known(const std::string& path) {
  std::map<std::string, bool> out;
  eval::for_each_json_record(path, {}, [&](const eval::JsonRow& row) {
    auto id = row.value.find("id");
    if (id == row.value.end()) return;
    if (const std::optional<bool> k = prepared_known_of(row.value))
      out[id->is_string() ? id->get<std::string>() : id->dump()] = *k;
  });
  return out;
}

std::optional<bool> prepared_known_of(const nlohmann::json& row) {
  auto kn = row.find("known");
  if (kn == row.end()) return std::nullopt;
  if (!kn->is_boolean())
    throw eval::RowError(std::string("field 'known': expected boolean, got ") + kn->type_name());
  return kn->get<bool>();
}

void carry_known(std::vector<Pair>& pairs, const std::map<std::string, bool>& known) {
  for (Pair& p : pairs)
    if (auto it = known.find(p.instance); it != known.end()) p.known = it->second;
}

namespace {

// --known: every question's verdict from the file.
std::map<std::string, bool> known_from_file(const std::vector<eval::QaRecord>& records,
                                            const std::map<std::string, bool>& verdicts) {
  std::map<std::string, bool> known;
  for (const auto& r : records) {
    auto it = verdicts.find(r.id);
    if (it == verdicts.end())
      throw Error("sure prepare", "no closed-book verdict for question '" + r.id + "' in --known");
    known[r.id] = it->second;
  }
  return known;
}

// The closed-book answers stored in `run` (a killed run's rows are read back, not regenerated),
// the missing ones generated in batches and stored; returns every measured row by question.
std::map<std::string, store::Result> closed_book_stage(
    reader::Reader& reader, store::RunStore& store, int64_t run, const PromptSet& prompts,
    const std::vector<eval::QaRecord>& records, const PrepareOptions& opt, PrepareSummary& sum) {
  std::map<std::string, store::Result> done;
  store.for_each_result(run, [&](const store::Result& r) {
    if (r.variant == "closed-book" && r.status == store::Status::ok) done[r.instance] = r;
  });
  std::vector<const eval::QaRecord*> todo;
  std::set<std::string> ids;
  for (const auto& r : records) {
    if (!ids.insert(r.id).second)
      throw Error("sure prepare", "duplicate question id '" + r.id + "'");
    if (done.count(r.id))
      ++sum.skipped_done;
    else
      todo.push_back(&r);
  }
  const common::Stage stage(opt.hooks, "sure prepare", todo.size());
  reader::MeasuredTally tally;
  tally.measured(int64_t(sum.skipped_done));
  reader::GenerateParams gp;
  gp.temperature = opt.temperature;
  gp.seed = opt.seed;
  gp.max_tokens = opt.max_tokens;
  const size_t B = std::max<size_t>(1, opt.batch);
  for (size_t b = 0; b < todo.size(); b += B) {
    const size_t e = std::min(todo.size(), b + B);
    std::vector<std::string> ps;
    gp.seeds.clear();
    for (size_t i = b; i < e; ++i) {
      ps.push_back(closed_book_prompt(prompts, todo[i]->question));
      gp.seeds.push_back(row_seed(opt.seed, todo[i]->id, "closed-book"));
    }
    auto gens = reader::generate_each(reader, ps, gp);
    for (size_t i = b; i < e; ++i) {
      const auto& at = gens[i - b];
      store::Result r;
      r.run = run;
      r.instance = todo[i]->id;
      r.variant = "closed-book";
      r.prompt = ps[i - b];
      r.timings_ms[at.batched ? "batch_total" : "total"] = at.ms;
      if (at.gen) {
        r.output = at.gen->text;
        r.prompt_tokens = at.gen->prompt_tokens;
        r.correct = grade(r.output, todo[i]->answers, false);
        r.scores["Y"] = *r.correct ? 1.0 : 0.0;
        r.extra["finish_reason"] = at.gen->finish_reason;
        ++sum.generated;
        tally.measured();
        done[r.instance] = r;
      } else {
        r.status = store::Status::unmeasured;
        r.error = at.error.empty() ? "generation failed" : at.error;
        ++sum.unmeasured;
        tally.failed(r.error, at.status);
      }
      store.put(r);
    }
    stage.add(e - b);
    tally.fail_fast("sure prepare");
  }
  tally.check("sure prepare");
  return done;
}

// A question's passages that may stand for it in a cell (retrieval order), and the seeded order
// the cell draws questions by.
struct Candidate {
  const eval::QaRecord* rec;
  std::vector<size_t> ctxs;
  uint64_t order;
};

// A passage's identity for "distinct": its id, or its text when it has none.
const std::string& passage_key(const eval::Context& c) { return c.id.empty() ? c.text : c.id; }

// The first `n` of one question's passages of one cell in the seeded order (smallest hash first,
// the earlier passage on a tie; a repeated passage counts once), returned in retrieval order.
std::vector<size_t> seeded_passages(const eval::QaRecord& r, const std::vector<size_t>& idx,
                                    const char* cell, uint64_t seed, size_t n) {
  std::vector<std::pair<uint64_t, size_t>> order;
  std::set<std::string_view> seen;
  for (size_t i : idx) {
    if (!seen.insert(passage_key(r.ctxs[i])).second) continue;
    order.emplace_back(derive_seed(seed, key2(key2(cell, r.id), r.ctxs[i].id)), i);
  }
  std::sort(order.begin(), order.end());
  if (order.size() > n) order.resize(n);
  std::vector<size_t> out;
  for (const auto& o : order) out.push_back(o.second);
  std::sort(out.begin(), out.end());
  return out;
}

// Per question with a verdict: its seeded choice among its Golden passages and among its Noise
// passages, each a candidate of the cell K-G/K-N (known) or U-G/U-N (unknown).
std::array<std::vector<Candidate>, 4> cell_candidates(const std::vector<eval::QaRecord>& records,
                                                      const std::map<std::string, bool>& known,
                                                      const PrepareOptions& opt,
                                                      PrepareSummary& sum) {
  std::array<std::vector<Candidate>, 4> cells;
  for (const auto& r : records) {
    auto k = known.find(r.id);
    if (k == known.end()) continue;  // unmeasured closed-book row
    ++(k->second ? sum.known : sum.unknown);
    std::array<std::vector<size_t>, 2> split;  // [golden, noise]
    for (size_t i = 0; i < r.ctxs.size(); ++i)
      split[text::substring_match(r.ctxs[i].text, r.answers) > 0 ? 0 : 1].push_back(i);
    for (size_t g = 0; g < 2; ++g) {
      if (split[g].empty()) continue;
      const size_t cell = (k->second ? 0 : 2) + g;
      cells[cell].push_back({&r,
                             seeded_passages(r, split[g], kCells[cell], opt.seed, opt.per_question),
                             derive_seed(opt.seed, key2(kCells[cell], r.id))});
    }
  }
  return cells;
}

// One instance row: the question with its chosen passages, as `sure perturb` reads it.
nlohmann::ordered_json instance_row(const Candidate& cand, size_t c,
                                    const std::map<std::string, std::string>& closed_book) {
  const auto& r = *cand.rec;
  nlohmann::ordered_json j;
  j["id"] = r.id + "|" + kCells[c];
  j["question"] = r.question;
  j["answers"] = r.answers;
  j["ctxs"] = nlohmann::ordered_json::array();
  for (size_t i : cand.ctxs) {
    const auto& ctx = r.ctxs[i];
    nlohmann::ordered_json cj;
    cj["id"] = ctx.id;
    cj["title"] = ctx.title;
    cj["text"] = ctx.text;
    cj["hasanswer"] = c == 0 || c == 2;
    cj["rank"] = i + 1;
    j["ctxs"].push_back(std::move(cj));
  }
  j["sure_cell"] = kCells[c];
  j["known"] = c < 2;
  j["golden"] = c == 0 || c == 2;
  j["question_id"] = r.id;
  if (auto it = closed_book.find(r.id); it != closed_book.end()) j["closed_book"] = it->second;
  return j;
}

}  // namespace

PrepareSummary run_prepare(reader::Reader* reader, store::RunStore& store, const PromptSet& prompts,
                           const std::vector<eval::QaRecord>& records, const PrepareOptions& opt) {
  {
    PrepareOptions checked = opt;
    check_options(checked);  // OptionError naming the key: the CLI says its flag
  }
  store::RunConfig rc = prepare_run_config(opt, prompts, records);
  rc.seed = static_cast<int64_t>(opt.seed);
  PrepareSummary sum;
  const int64_t run = sum.run = common::begin_or_resume(store, rc, opt.origin, opt.hooks,
                                                        "sure prepare", 0, "closed-book answers")
                                    .run;
  sum.questions = records.size();
  std::map<std::string, std::string> closed_book;  // id -> response (generated rows)
  std::map<std::string, bool> known;
  if (opt.known) {
    known = known_from_file(records, *opt.known);
  } else {
    if (!reader)
      throw UsageError("sure prepare", "needs a reader or closed-book verdicts (--known)");
    for (const auto& [id, r] : closed_book_stage(*reader, store, run, prompts, records, opt, sum)) {
      known[id] = r.correct.value_or(false);
      closed_book[id] = r.output;
    }
  }

  // Each cell keeps its first per_cell candidates in the seeded order, written by question id.
  if (opt.per_question < 1) throw UsageError("--per-question", "must be >= 1");
  std::array<std::vector<Candidate>, 4> cells = cell_candidates(records, known, opt, sum);
  for (size_t c = 0; c < 4; ++c) {
    auto& v = cells[c];
    sum.cells[c].candidates = v.size();
    std::sort(v.begin(), v.end(), [](const Candidate& a, const Candidate& b) {
      return a.order != b.order ? a.order < b.order : a.rec->id < b.rec->id;
    });
    if (v.size() > opt.per_cell) v.resize(opt.per_cell);
    sum.cells[c].chosen = v.size();
    for (const auto& cand : v) sum.cells[c].passages += cand.ctxs.size();
    std::sort(v.begin(), v.end(),
              [](const Candidate& a, const Candidate& b) { return a.rec->id < b.rec->id; });
    for (const auto& cand : v) sum.rows.push_back(instance_row(cand, c, closed_book));
  }
  return sum;
}

}  // namespace ragform::sure

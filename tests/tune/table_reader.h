// The reader double of `ragform tune`'s search tests (tune_search_test.cpp,
// tune_candidates_test.cpp): QA records, a small space, and a FakeReader whose accuracy and
// robustness depend on the presentation by a table.
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "support/fake_reader.h"
#include "tune/run.h"
#include "tune/tune.h"

namespace ragform::tune::search_testing {

inline std::vector<eval::QaRecord> qa_records(size_t n, const std::string& tag) {
  std::vector<eval::QaRecord> out;
  for (size_t i = 0; i < n; ++i) {
    eval::QaRecord r;
    r.id = tag + std::to_string(i);
    r.question = "who is person " + std::to_string(i) + "?";
    r.answers = {"Ann" + std::to_string(i)};
    for (size_t d = 0; d < 3; ++d) {
      eval::Context c;
      c.title = "T" + std::to_string(d);
      c.text = d == 1 ? "Ann" + std::to_string(i) + " is the person. She lives in a house."
                      : "Filler " + std::to_string(d) + " text. More filler words here.";
      c.isgold = d == 1;
      r.ctxs.push_back(c);
    }
    out.push_back(r);
  }
  return out;
}

inline Space small_space() {
  Space s = default_space(Task::Qa);
  set_dimension(s, "delimiter", "original,-");
  set_dimension(s, "p", "1");
  set_dimension(s, "format", "plain,json,yaml");
  set_dimension(s, "order", "retrieved,reversed");
  set_dimension(s, "k", "all");
  set_dimension(s, "spotlight", "off");
  return s;
}

// What the double knows of a candidate: accuracy a (record i is answered right when the
// low-discrepancy point frac((i + 1) * 0.618) < a) and which (record, kind) pairs flip.
struct Planted {
  double acc = 0;
  int flip_mod = 0;  // pair (i, kind) flips when (i + kind) % flip_mod == 0; 0 = never
};

// A FakeReader answering by the table: every prompt the search can render is rendered up front.
struct TableReader {
  ragform::testing::FakeReader r;
  std::map<std::string, std::tuple<size_t, size_t, int>> prompts;  // -> (candidate, record, kind)
  std::vector<Planted> table;
  std::vector<eval::QaRecord> recs;

  TableReader(const std::vector<Presentation>& cands, const std::vector<eval::QaRecord>& records,
              std::vector<Planted> t)
      : table(std::move(t)), recs(records) {
    const std::string tmpl = template_for(Task::Qa);
    for (size_t c = 0; c < cands.size(); ++c)
      for (size_t i = 0; i < recs.size(); ++i) {
        prompts[render(recs[i], cands[c], Task::Qa, tmpl).prompt] = {c, i, -1};
        for (size_t k = 0; k < robustness_kinds().size(); ++k) {
          auto pr = perturbed(recs[i], Task::Qa, robustness_kinds()[k], 0);
          if (pr) prompts[render(*pr, cands[c], Task::Qa, tmpl).prompt] = {c, i, int(k)};
        }
      }
    r.answer = [this](const std::string& prompt) { return answer(prompt); };
  }
  std::string answer(const std::string& prompt) {
    auto it = prompts.find(prompt);
    if (it == prompts.end()) throw Error("table reader", "unknown prompt");
    auto [c, i, kind] = it->second;
    const Planted& p = table[c];
    double x = std::fmod(double(i % 20 + 1) * 0.6180339887, 1.0);
    bool ok = x < p.acc;
    if (kind >= 0 && p.flip_mod && (i + size_t(kind)) % size_t(p.flip_mod) == 0) ok = !ok;
    return ok ? " " + recs[i].answers[0] + "\n" : " nobody\n";
  }
};

struct Fixture {
  std::vector<eval::QaRecord> dev = qa_records(16, "d");
  Space space = small_space();
  std::vector<Presentation> cands = candidates(space, Task::Qa);
  size_t idx(const std::string& delim, const std::string& format, Order o) const {
    for (size_t i = 0; i < cands.size(); ++i)
      if (cands[i].delimiter == delim && cands[i].format == format && cands[i].order == o) return i;
    return size_t(-1);
  }
  // Accuracy winner (-, json, retrieved), robustness winner (original, yaml, reversed), and a
  // balanced one (-, plain, reversed): accurate and robust enough for a 0.75 floor.
  size_t w_acc = idx("-", "json", Order::Retrieved);
  size_t w_rob = idx("original", "yaml", Order::Reversed);
  size_t w_bal = idx("-", "plain", Order::Reversed);
  std::vector<Planted> table() const {
    std::vector<Planted> t(cands.size(), Planted{0.1, 0});
    t[w_acc] = {0.95, 2};  // flips half the pairs: robustness 0.5
    t[w_bal] = {0.88, 5};  // flips about a fifth: robustness about 0.8
    t[w_rob] = {0.8, 0};   // never flips: robustness 1
    return t;
  }
  TuneOptions options(Objective obj, size_t budget) const {
    TuneOptions o;
    o.task = Task::Qa;
    o.tmpl = template_for(Task::Qa);
    o.dev = dev;
    o.space = space;
    o.objective = obj;
    o.robust_floor = 0.75;
    o.budget = budget;
    o.max_tokens = 8;
    return o;
  }
};

}  // namespace ragform::tune::search_testing

// SURE's instance preparation (pipelines/sure/prepare.h) with a scripted reader: Known/Unknown
// from closed-book answers, Golden/Noise from answer strings, N per cell by the seeded rule, the
// closed-book rows in the run store (a second run generates nothing), --known verdicts.
#include <algorithm>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "base/stable_hash.h"
#include "pipelines/sure/prepare.h"
#include "store/sha256.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

// Question i has answer "answer<i>"; passages g<i>a, g<i>b contain it, n<i>a, n<i>b do not.
std::vector<eval::QaRecord> records(int n) {
  std::vector<eval::QaRecord> out;
  for (int i = 0; i < n; ++i) {
    eval::QaRecord r;
    r.id = "q" + std::to_string(i);
    r.question = "what is thing " + std::to_string(i) + "?";
    r.answers = {"answer" + std::to_string(i)};
    for (const char* d : {"g", "n"})
      for (const char* v : {"a", "b"}) {
        eval::Context c;
        c.id = std::string(d) + std::to_string(i) + v;
        c.title = "T";
        c.text = std::string(d) == "g" ? "it is Answer" + std::to_string(i) + "." : "nothing here";
        r.ctxs.push_back(c);
      }
    out.push_back(r);
  }
  return out;
}

// Questions 0..3 are answered right closed-book, the others wrongly.
FakeReader scripted() {
  FakeReader f;
  f.answer = [](const std::string& prompt) -> std::string {
    for (int i = 0; i < 4; ++i)
      if (prompt.find("thing " + std::to_string(i) + "?") != std::string::npos)
        return " answer" + std::to_string(i);
    return " no idea";
  };
  return f;
}

// The documented choice, recomputed: per question the passage with the smallest
// derive_seed(seed, cell\0question\0passage), per cell the questions with the smallest
// derive_seed(seed, cell\0question).
std::set<std::string> expected_cell(const std::vector<eval::QaRecord>& recs,
                                    const std::string& cell, bool known_group, size_t n,
                                    uint64_t seed) {
  const std::string nul(1, '\0');
  std::vector<std::pair<uint64_t, std::string>> qs;
  for (const auto& r : recs) {
    const int i = std::stoi(r.id.substr(1));
    if ((i < 4) != known_group) continue;
    qs.push_back({derive_seed(seed, cell + nul + r.id), r.id});
  }
  std::sort(qs.begin(), qs.end());
  std::set<std::string> out;
  for (size_t j = 0; j < std::min(n, qs.size()); ++j) {
    const auto& id = qs[j].second;
    const char g = cell[2] == 'G' ? 'g' : 'n';
    std::string a = std::string(1, g) + id.substr(1) + "a",
                b = std::string(1, g) + id.substr(1) + "b";
    const bool a_first =
        derive_seed(seed, cell + nul + id + nul + a) < derive_seed(seed, cell + nul + id + nul + b);
    out.insert(id + "|" + cell + ":" + (a_first ? a : b));
  }
  return out;
}

TEST(SurePrepare, FillsTheFourCellsByTheSeededRuleAndResumes) {
  auto dir = temp_dir("prepare");
  store::RunStore st(dir / "run.sqlite");
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  auto recs = records(9);
  FakeReader reader = scripted();
  sure::PrepareOptions o;
  o.per_cell = 3;
  o.seed = 42;
  o.batch = 4;
  auto s = sure::run_prepare(&reader, st, prompts, recs, o);
  EXPECT_EQ(s.questions, 9u);
  EXPECT_EQ(s.known, 4u);
  EXPECT_EQ(s.unknown, 5u);
  EXPECT_EQ(s.generated, 9u);
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(s.cells[c].candidates, c < 2 ? 4u : 5u) << sure::kCells[c];
    EXPECT_EQ(s.cells[c].chosen, 3u) << sure::kCells[c];
  }
  ASSERT_EQ(s.rows.size(), 12u);
  std::map<std::string, std::set<std::string>> got;
  for (const auto& row : s.rows) {
    const std::string cell = row["sure_cell"];
    got[cell].insert(row["id"].get<std::string>() + ":" + row["ctxs"][0]["id"].get<std::string>());
    EXPECT_EQ(row["known"].get<bool>(), cell[0] == 'K');
    EXPECT_EQ(row["golden"].get<bool>(), cell[2] == 'G');
    EXPECT_EQ(row["ctxs"].size(), 1u);
    EXPECT_TRUE(row.contains("closed_book"));
  }
  for (size_t c = 0; c < 4; ++c) {
    const std::string cell = sure::kCells[c];
    EXPECT_EQ(got[cell], expected_cell(recs, cell, c < 2, 3, 42)) << cell;
  }
  // The closed-book rows are stored; a second run generates nothing and gives the same rows.
  EXPECT_EQ(st.counts(s.run).ok, 9);
  EXPECT_EQ(st.counts(s.run).correct, 4);
  reader.generate_calls = 0;
  auto s2 = sure::run_prepare(&reader, st, prompts, recs, o);
  EXPECT_EQ(reader.generate_calls, 0);
  EXPECT_EQ(s2.skipped_done, 9u);
  EXPECT_EQ(s2.rows, s.rows);
}

TEST(SurePrepare, UnmeasuredQuestionsAreInNoCellAndKnownFileReplacesTheReader) {
  auto dir = temp_dir("prepare");
  store::RunStore st(dir / "run.sqlite");
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  auto recs = records(6);
  FakeReader reader = scripted();
  reader.fail_marker = "thing 5?";
  sure::PrepareOptions o;
  o.per_cell = 10;
  auto s = sure::run_prepare(&reader, st, prompts, recs, o);
  EXPECT_EQ(s.unmeasured, 1u);
  EXPECT_EQ(s.known + s.unknown, 5u);
  EXPECT_EQ(s.cells[2].chosen, 1u);  // only q4 is Unknown and measured
  EXPECT_EQ(s.cells[0].chosen, 4u);

  write_file(dir / "known.jsonl",
             "{\"id\": \"q0\", \"known\": true}\n{\"id\": \"q1\", \"known\": false}\n");
  o.known = sure::read_known_file((dir / "known.jsonl").string());
  auto two = records(2);
  auto k = sure::run_prepare(nullptr, st, prompts, two, o);
  EXPECT_EQ(k.known, 1u);
  EXPECT_EQ(k.unknown, 1u);
  EXPECT_EQ(k.cells[0].chosen + k.cells[1].chosen + k.cells[2].chosen + k.cells[3].chosen, 4u);
  EXPECT_FALSE(k.rows[0].contains("closed_book"));
  auto three = records(3);
  EXPECT_THROW(sure::run_prepare(nullptr, st, prompts, three, o), Error);  // no verdict for q2
  write_file(dir / "bad.jsonl", "{\"id\": \"q0\", \"known\": 1}\n");
  try {
    sure::read_known_file((dir / "bad.jsonl").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "bad.jsonl").string() + ":1: field 'known': expected boolean, got number");
  }
}

// One passage per question per cell is the default, and its output is byte for byte what
// prepare wrote before --per-question existed: the SHA-256 of every row's compact JSON (one per
// line, in output order) of a run over records with duplicated and varied passages, taken from
// the code before the option was added.
TEST(SurePrepare, OnePassagePerQuestionIsTheOutputOfBefore) {
  auto dir = temp_dir("prepare");
  store::RunStore st(dir / "run.sqlite");
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  auto recs = records(9);
  recs[2].ctxs.push_back(recs[2].ctxs[0]);  // a duplicated passage
  recs[5].ctxs.resize(1);                   // golden only
  FakeReader reader = scripted();
  sure::PrepareOptions o;
  o.per_cell = 4;
  o.seed = 7;
  std::string lines;
  for (const auto& row : sure::run_prepare(&reader, st, prompts, recs, o).rows)
    lines += row.dump() + "\n";
  EXPECT_EQ(store::sha256_hex(lines),
            "ffa32b9cf5c6cc4ded8d3b6f925e74f2264405e121960689e1c6874bb4f2725b")
      << lines;
}

// Question i (of n) has `golden` passages g<i>_<j> holding its answer and `noise` passages
// n<i>_<j> without it, interleaved in retrieval order (g, n, g, n, ...).
std::vector<eval::QaRecord> wide_records(int n, int golden, int noise) {
  std::vector<eval::QaRecord> out = records(n);
  for (auto& r : out) {
    const std::string i = r.id.substr(1);
    r.ctxs.clear();
    for (int j = 0; j < std::max(golden, noise); ++j) {
      for (int g = 0; g < 2; ++g) {
        if (j >= (g == 0 ? golden : noise)) continue;
        eval::Context c;
        c.id = std::string(g == 0 ? "g" : "n") + i + "_" + std::to_string(j);
        c.title = "T";
        c.text = g == 0 ? "it is Answer" + i + ", passage " + std::to_string(j) + "."
                        : "nothing here, passage " + std::to_string(j);
        r.ctxs.push_back(c);
      }
    }
  }
  return out;
}

// The documented choice of up to n passages of question `r` for `cell`: the n distinct passages
// with the smallest derive_seed(seed, cell\0question\0passage), in retrieval order (rank).
std::vector<std::string> expected_passages(const eval::QaRecord& r, const std::string& cell,
                                           size_t n, uint64_t seed) {
  const std::string nul(1, '\0');
  std::vector<std::tuple<uint64_t, size_t, std::string>> h;
  std::set<std::string> seen;
  for (size_t i = 0; i < r.ctxs.size(); ++i) {
    const bool golden = r.ctxs[i].id[0] == 'g';
    if (golden != (cell[2] == 'G') || !seen.insert(r.ctxs[i].id).second) continue;
    h.emplace_back(derive_seed(seed, cell + nul + r.id + nul + r.ctxs[i].id), i, r.ctxs[i].id);
  }
  std::sort(h.begin(), h.end());
  if (h.size() > n) h.resize(n);
  std::sort(h.begin(), h.end(),
            [](const auto& a, const auto& b) { return std::get<1>(a) < std::get<1>(b); });
  std::vector<std::string> out;
  for (const auto& x : h) out.push_back(std::get<2>(x));
  return out;
}

// --per-question 3: every chosen (question, cell) row holds up to 3 distinct passages of that
// cell — the seeded smallest hashes, in retrieval order with their ranks — and the cells still
// choose their questions as with one passage (the same question ids).
TEST(SurePrepare, PerQuestionKeepsUpToNDistinctPassagesPerCellInRankOrder) {
  auto dir = temp_dir("prepare");
  store::RunStore st(dir / "run.sqlite");
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  auto recs = wide_records(9, 5, 4);
  recs[0].ctxs.resize(3);                   // q0: 2 golden, 1 noise (fewer than 3)
  recs[1].ctxs.push_back(recs[1].ctxs[0]);  // q1: a golden passage retrieved twice
  recs[1].ctxs.push_back(recs[1].ctxs[2]);
  FakeReader reader = scripted();
  sure::PrepareOptions o;
  o.per_cell = 3;
  o.seed = 11;
  o.per_question = 3;
  auto s = sure::run_prepare(&reader, st, prompts, recs, o);
  ASSERT_EQ(s.rows.size(), 12u);
  std::map<std::string, const eval::QaRecord*> by_id;
  for (const auto& r : recs) by_id[r.id] = &r;
  size_t passages = 0;
  std::map<std::string, std::set<std::string>> questions;
  for (const auto& row : s.rows) {
    const std::string cell = row["sure_cell"], qid = row["question_id"];
    const auto& rec = *by_id.at(qid);
    questions[cell].insert(qid);
    std::vector<std::string> got;
    int last_rank = 0;
    for (const auto& c : row["ctxs"]) {
      got.push_back(c["id"]);
      EXPECT_EQ(c["hasanswer"].get<bool>(), cell[2] == 'G');
      const int rank = c["rank"];
      EXPECT_GT(rank, last_rank) << row.dump();  // retrieval order, each passage once
      last_rank = rank;
      EXPECT_EQ(rec.ctxs[size_t(rank - 1)].id, c["id"]);
    }
    EXPECT_EQ(got, expected_passages(rec, cell, 3, 11)) << row.dump();
    EXPECT_EQ(got.size(), qid == "q0" ? (cell[2] == 'G' ? 2u : 1u) : 3u) << row.dump();
    EXPECT_EQ(std::set<std::string>(got.begin(), got.end()).size(), got.size());
    passages += got.size();
  }
  size_t counted = 0;
  for (const auto& c : s.cells) counted += c.passages;
  EXPECT_EQ(counted, passages);
  // The questions of each cell are those one passage per question would choose.
  o.per_question = 1;
  store::RunStore st1(dir / "one.sqlite");
  auto one = sure::run_prepare(&reader, st1, prompts, recs, o);
  std::map<std::string, std::set<std::string>> one_questions;
  for (const auto& row : one.rows) {
    one_questions[row["sure_cell"]].insert(row["question_id"]);
    ASSERT_EQ(row["ctxs"].size(), 1u);
  }
  EXPECT_EQ(questions, one_questions);
  // More passages than a question has: all of its passages of the cell, each once.
  o.per_question = 100;
  store::RunStore st2(dir / "all.sqlite");
  auto all = sure::run_prepare(&reader, st2, prompts, recs, o);
  for (const auto& row : all.rows) {
    const std::string qid = row["question_id"], cell = row["sure_cell"];
    const size_t want = qid == "q0" ? (cell[2] == 'G' ? 2u : 1u) : (cell[2] == 'G' ? 5u : 4u);
    EXPECT_EQ(row["ctxs"].size(), want) << row.dump();
  }
}

// --per-question joins prepare's run identity only when it is not 1, so a store written before
// the option existed resumes its runs with the default.
TEST(SurePrepare, PerQuestionIsInTheRunIdentityOnlyWhenNotOne) {
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  const auto recs = records(3);
  sure::PrepareOptions o;
  const auto rc1 = sure::prepare_run_config(o, prompts, recs);
  EXPECT_FALSE(rc1.config.contains("per_question")) << rc1.config.dump();
  o.per_question = 3;
  const auto rc3 = sure::prepare_run_config(o, prompts, recs);
  EXPECT_EQ(rc3.config.at("per_question"), 3);
  EXPECT_NE(store::run_key(rc1), store::run_key(rc3));
  o.per_question = 4;
  EXPECT_NE(store::run_key(sure::prepare_run_config(o, prompts, recs)), store::run_key(rc3));
}

// The questions are part of the run's identity: a second question set with the same ids (q0, q1,
// ...) never resumes into the first one's closed-book rows. The passages are not (they do not
// change a closed-book row).
TEST(SurePrepare, TheQuestionsArePartOfTheRunIdentity) {
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  sure::PrepareOptions o;
  const auto a = records(3);
  auto b = a;
  b[1].question = "what is another thing?";
  auto c = a;
  c[2].answers = {"something else"};
  auto d = a;
  d[0].ctxs.pop_back();
  const auto key = [&](const std::vector<eval::QaRecord>& r) {
    return store::run_key(sure::prepare_run_config(o, prompts, r));
  };
  EXPECT_NE(key(a), key(b));
  EXPECT_NE(key(a), key(c));
  EXPECT_EQ(key(a), key(d));
  EXPECT_EQ(sure::prepare_run_config(o, prompts, a)
                .config.at("questions_sha256")
                .get<std::string>()
                .size(),
            64u);
  o.known = std::map<std::string, bool>{{"q0", true}};
  EXPECT_EQ(sure::prepare_run_config(o, prompts, a).config.at("closed_book"), "file");
}

}  // namespace
}  // namespace ragform::testing

// SURE's instance preparation (pipelines/sure/prepare.h) with a scripted reader: Known/Unknown
// from closed-book answers, Golden/Noise from answer strings, N per cell by the seeded rule, the
// closed-book rows in the run store (a second run generates nothing), --known verdicts.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "base/stable_hash.h"
#include "pipelines/sure/prepare.h"
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

store::RunConfig config() {
  store::RunConfig rc;
  rc.pipeline = "sure prepare";
  rc.reader = "fake";
  return rc;
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
  const int64_t run = st.begin_run(config());
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  auto recs = records(9);
  FakeReader reader = scripted();
  sure::PrepareOptions o;
  o.per_cell = 3;
  o.seed = 42;
  o.batch = 4;
  auto s = sure::run_prepare(&reader, st, run, prompts, recs, o);
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
  EXPECT_EQ(st.counts(run).ok, 9);
  EXPECT_EQ(st.counts(run).correct, 4);
  reader.generate_calls = 0;
  auto s2 = sure::run_prepare(&reader, st, run, prompts, recs, o);
  EXPECT_EQ(reader.generate_calls, 0);
  EXPECT_EQ(s2.skipped_done, 9u);
  EXPECT_EQ(s2.rows, s.rows);
}

TEST(SurePrepare, UnmeasuredQuestionsAreInNoCellAndKnownFileReplacesTheReader) {
  auto dir = temp_dir("prepare");
  store::RunStore st(dir / "run.sqlite");
  const int64_t run = st.begin_run(config());
  auto prompts = sure::load_prompts(RAGFORM_SOURCE_DIR "/prompts/sure");
  auto recs = records(6);
  FakeReader reader = scripted();
  reader.fail_marker = "thing 5?";
  sure::PrepareOptions o;
  o.per_cell = 10;
  auto s = sure::run_prepare(&reader, st, run, prompts, recs, o);
  EXPECT_EQ(s.unmeasured, 1u);
  EXPECT_EQ(s.known + s.unknown, 5u);
  EXPECT_EQ(s.cells[2].chosen, 1u);  // only q4 is Unknown and measured
  EXPECT_EQ(s.cells[0].chosen, 4u);

  write_file(dir / "known.jsonl",
             "{\"id\": \"q0\", \"known\": true}\n{\"id\": \"q1\", \"known\": false}\n");
  o.known = sure::read_known_file((dir / "known.jsonl").string());
  auto two = records(2);
  auto k = sure::run_prepare(nullptr, st, run, prompts, two, o);
  EXPECT_EQ(k.known, 1u);
  EXPECT_EQ(k.unknown, 1u);
  EXPECT_EQ(k.cells[0].chosen + k.cells[1].chosen + k.cells[2].chosen + k.cells[3].chosen, 4u);
  EXPECT_FALSE(k.rows[0].contains("closed_book"));
  auto three = records(3);
  EXPECT_THROW(sure::run_prepare(nullptr, st, run, prompts, three, o), Error);  // no verdict for q2
  write_file(dir / "bad.jsonl", "{\"id\": \"q0\", \"known\": 1}\n");
  try {
    sure::read_known_file((dir / "bad.jsonl").string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "bad.jsonl").string() + ":1: field 'known': expected boolean, got number");
  }
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

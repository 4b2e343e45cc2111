// `ragform sure prepare --per-question N` end to end on a small hand-written corpus (BM25 index,
// closed-book verdicts from --known, so no model): the default writes one passage per question
// and cell, N = 3 up to three distinct passages of the cell in retrieval order (one pair each in
// `sure perturb`), and N joins the run identity only when it is not 1 (a store's default run
// resumes as before).
#include <set>

#include <gtest/gtest.h>

#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

// Questions q0..q3 about the zorbs alpha, bravo, charlie and delta; each zorb has 4 passages
// holding its question's answer (a colour word of its own), 3 about it without the answer, and the
// corpus has unrelated filler passages. A question's own 7 passages are its BM25 top 7 (its zorb's
// name is rarer than "zorb" and "colour"), so -k 7 retrieves exactly them.
struct Inputs {
  fs::path index, questions, known;
};

Inputs make_inputs(const fs::path& dir) {
  const char* names[] = {"alpha", "bravo", "charlie", "delta"};
  const char* colours[] = {"ochre", "teal", "mauve", "umber"};
  const char* nth[] = {"first", "second", "third", "fourth"};
  std::string corpus, questions, known;
  for (int i = 0; i < 4; ++i) {
    const std::string s = std::to_string(i), name = names[i];
    for (int j = 0; j < 4; ++j)
      corpus += "{\"id\": \"g" + s + "_" + std::to_string(j) + "\", \"title\": \"Zorb\", " +
                "\"text\": \"The " + name + " zorb is painted " + colours[i] + ", " + nth[j] +
                " version.\"}\n";
    for (int j = 0; j < 3; ++j)
      corpus += "{\"id\": \"n" + s + "_" + std::to_string(j) + "\", \"title\": \"Zorb\", " +
                "\"text\": \"The " + name + " zorb has a colour nobody wrote down, " + nth[j] +
                " note.\"}\n";
    questions += "{\"id\": \"q" + s + "\", \"question\": \"what colour is the " + name +
                 " zorb?\", \"answers\": [\"" + colours[i] + "\"]}\n";
    known += "{\"id\": \"q" + s + "\", \"known\": " + (i < 2 ? "true" : "false") + "}\n";
  }
  for (int j = 0; j < 20; ++j)
    corpus += "{\"id\": \"f" + std::to_string(j) +
              "\", \"title\": \"Filler\", \"text\": \"A river runs past hill " + std::to_string(j) +
              ".\"}\n";
  write_file(dir / "corpus.jsonl", corpus);
  write_file(dir / "q.jsonl", questions);
  write_file(dir / "known.jsonl", known);
  auto r = run_ragform("index build --corpus " + quoted(dir / "corpus.jsonl") + " -o " +
                       quoted(dir / "ix"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return {dir / "ix", dir / "q.jsonl", dir / "known.jsonl"};
}

std::string prepare_args(const Inputs& in, const fs::path& db, const std::string& extra) {
  return "sure prepare --index " + quoted(in.index) + " --input " + quoted(in.questions) +
         " --known " + quoted(in.known) + " -k 7 --per-cell 4 --seed 5 --store " + quoted(db) +
         extra;
}

TEST(SurePrepareCli, PerQuestionWritesUpToNDistinctPassagesAndSplitsTheRunOnlyWhenNotOne) {
  auto dir = temp_dir("prepare-per-question");
  const Inputs in = make_inputs(dir);
  const fs::path db = dir / "prepare.sqlite";

  auto one = run_ragform(prepare_args(in, db, ""));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto rows1 = json_lines(one.out);
  ASSERT_EQ(rows1.size(), 8u) << one.out;  // 2 known + 2 unknown questions, each Golden + Noise
  for (const auto& row : rows1) EXPECT_EQ(row["ctxs"].size(), 1u) << row.dump();
  EXPECT_EQ(one.err.find("passages)"), std::string::npos) << one.err;

  auto three = run_ragform(prepare_args(in, db, " --per-question 3"));
  ASSERT_EQ(three.exit_code, 0) << three.err;
  auto rows3 = json_lines(three.out);
  ASSERT_EQ(rows3.size(), 8u);
  for (size_t i = 0; i < rows3.size(); ++i) {
    const auto& row = rows3[i];
    EXPECT_EQ(row["id"], rows1[i]["id"]);  // the same (question, cell) rows
    const bool golden = row["golden"];
    ASSERT_EQ(row["ctxs"].size(), 3u) << row.dump();
    std::set<std::string> ids;
    int last_rank = 0;
    for (const auto& c : row["ctxs"]) {
      const std::string id = c["id"];
      EXPECT_EQ(id[0], golden ? 'g' : 'n') << row.dump();
      EXPECT_EQ(id.substr(1, 1), row["question_id"].get<std::string>().substr(1)) << row.dump();
      EXPECT_TRUE(ids.insert(id).second) << row.dump();
      EXPECT_GT(c["rank"].get<int>(), last_rank) << row.dump();
      last_rank = c["rank"];
    }
    // The one passage of the default is one of the three: the first of the same seeded order.
    EXPECT_TRUE(ids.count(rows1[i]["ctxs"][0]["id"])) << row.dump();
  }
  EXPECT_NE(three.err.find("K-G 2/4 (6 passages)"), std::string::npos) << three.err;
  // sure perturb makes one pair per passage of a row.
  write_file(dir / "three.jsonl", three.out);
  auto p =
      run_ragform("sure perturb --input " + quoted(dir / "three.jsonl") + " --kinds format/json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  auto pairs = json_lines(p.out);
  ASSERT_EQ(pairs.size(), 24u);
  EXPECT_EQ(pairs[2]["id"], rows3[0]["id"].get<std::string>() + "#2");
  EXPECT_EQ(pairs[2]["original"], rows3[0]["ctxs"][2]["text"]);
  // ... and keeps prepare's Known/Unknown verdict, which `sure eval` then uses (pairs.h).
  for (size_t i = 0; i < pairs.size(); ++i)
    EXPECT_EQ(pairs[i]["known"], rows3[i / 3]["known"]) << pairs[i].dump();

  // Two runs in the store; the default resumes its own (no third run), with the same output.
  auto again = run_ragform(prepare_args(in, db, ""));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, one.out);
  store::RunStore st(db, store::RunStore::Mode::read_only);
  const auto runs = st.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].config.contains("per_question")) << runs[0].config.dump();
  EXPECT_EQ(runs[1].config.at("per_question"), 3) << runs[1].config.dump();

  auto bad = run_ragform(prepare_args(in, db, " --per-question 0"));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
}  // namespace ragform::testing

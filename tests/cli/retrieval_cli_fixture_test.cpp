// `ragform index build`, `retrieve` and `sure prepare` end to end on the shared data: the output
// shape, that spotlight and sure read retrieve's / prepare's output directly, and that
// `sure prepare` with stories260K (which never answers NQ closed-book) runs, resumes after
// SIGKILL and reports the empty cells.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "retrieval/make_corpus.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

// The first n NQ questions (id, question, answers, plus a field to copy through).
fs::path nq_questions(const fs::path& dir, size_t n) {
  const auto src = shared_path("data/nq-open/NQ-open.dev.jsonl");
  EXPECT_TRUE(fs::exists(src)) << src;
  std::ifstream in(src);
  std::ofstream out(dir / "q.jsonl");
  std::string line;
  for (size_t i = 0; i < n && std::getline(in, line); ++i) {
    auto j = nlohmann::json::parse(line);
    nlohmann::json o = {{"id", "nq" + std::to_string(i)},
                        {"question", j["question"]},
                        {"answers", j["answer"]},
                        {"split", "dev"}};
    out << o.dump() << "\n";
  }
  return dir / "q.jsonl";
}

struct Index {
  fs::path dir, corpus;
};

Index build_index(const fs::path& dir) {
  Index ix{dir / "ix", make_corpus(dir, "")};
  auto r = run_ragform("index build --corpus " + quoted(ix.corpus) + " -o " + quoted(ix.dir) +
                       " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passages"], 8512);
  return ix;
}

TEST(RetrieveCli, DprShapeThatSpotlightAndSureRead) {
  auto dir = temp_dir("retrieve-cli");
  auto ix = build_index(dir);
  auto q = nq_questions(dir, 5);
  auto r = run_ragform("retrieve --index " + quoted(ix.dir) + " --input " + quoted(q) +
                       " -k 7 --json -t 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 5u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["id"], "nq" + std::to_string(i));
    EXPECT_EQ(rows[i]["split"], "dev");  // copied through
    EXPECT_TRUE(rows[i]["answers"].is_array());
    ASSERT_EQ(rows[i]["ctxs"].size(), 7u);
    for (size_t c = 0; c < 7; ++c) {
      const auto& x = rows[i]["ctxs"][c];
      EXPECT_EQ(x["rank"], int(c) + 1);
      EXPECT_TRUE(x["id"].is_string() && x["title"].is_string() && x["text"].is_string());
      if (c) {
        EXPECT_LE(x["score"].get<double>(), rows[i]["ctxs"][c - 1]["score"].get<double>());
      }
    }
  }
  write_file(dir / "retrieved.jsonl", r.out);

  // HotpotQA's own file is an accepted question file too (its contexts are not copied).
  auto h = run_ragform("retrieve --index " + quoted(ix.dir) + " --input " +
                       quoted(shared_path("data/hotpotqa-distractor/dev.jsonl")) + " -k 3 --json");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  auto hrows = json_lines(h.out);
  ASSERT_EQ(hrows.size(), 300u);
  EXPECT_FALSE(hrows[0].contains("context"));
  EXPECT_EQ(hrows[0]["answers"].size(), 1u);

  // spotlight select reads the retrieved rows as its input.
  auto s =
      run_ragform("spotlight select --input " + quoted(dir / "retrieved.jsonl") + " --vectors " +
                  quoted(shared_path("data/embeddings/glove-50d-5k.json")) + " -K 3 --json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto sel = json_lines(s.out);
  ASSERT_EQ(sel.size(), 5u);
  std::set<std::string> ctx_ids;
  for (const auto& c : rows[0]["ctxs"]) ctx_ids.insert(c["id"]);
  ASSERT_FALSE(sel[0]["selected"].empty());
  for (const auto& x : sel[0]["selected"]) EXPECT_TRUE(ctx_ids.count(x["doc_id"])) << x;

  // sure perturb reads them too (rule-based kinds need no reader).
  auto p = run_ragform("sure perturb --input " + quoted(dir / "retrieved.jsonl") +
                       " --kinds format --docs 2");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_FALSE(json_lines(p.out).empty());
}

TEST(RetrieveCli, UsageAndIndexErrors) {
  auto dir = temp_dir("retrieve-cli");
  write_file(dir / "q.jsonl", "{\"id\": \"a\", \"question\": \"x\"}\n");
  auto r = run_ragform("retrieve --index " + quoted(dir / "none") + " --input " +
                       quoted(dir / "q.jsonl"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no index here"), std::string::npos) << r.err;
  r = run_ragform("retrieve --index " + quoted(dir) + " --input " + quoted(dir / "q.jsonl") +
                  " --mode dense");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs the index's encoder model"), std::string::npos) << r.err;
  r = run_ragform("retrieve --index " + quoted(dir) + " --input " + quoted(dir / "q.jsonl") +
                  " -k 0");
  EXPECT_EQ(r.exit_code, 2);
  write_file(dir / "c.jsonl", "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\"}\n");
  r = run_ragform("index build --corpus " + quoted(dir / "c.jsonl") + " -o " + quoted(dir / "ix"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find((dir / "c.jsonl").string() + ":2: missing field 'text'"), std::string::npos)
      << r.err;
}

std::int64_t closed_book_rows(const fs::path& db) {
  if (!fs::exists(db)) return 0;
  try {
    store::RunStore st(db, store::RunStore::Mode::read_only);
    std::int64_t n = 0;
    for (const auto& run : st.runs()) n += st.counts(run.id).ok;
    return n;
  } catch (const std::exception&) {
    return 0;  // the writer is creating the schema
  }
}

TEST(SurePrepareCli, Stories260kRunsResumesAfterSigkillAndReportsEmptyCells) {
  const auto model = shared_path("fixtures/models/stories260K.gguf");
  ASSERT_TRUE(fs::exists(model)) << model;
  auto dir = temp_dir("prepare-cli");
  auto ix = build_index(dir);
  auto q = nq_questions(dir, 120);
  const auto db = dir / "run.sqlite";
  const std::string args = "sure prepare --index " + quoted(ix.dir) + " --input " + quoted(q) +
                           " -m " + quoted(model) +
                           " -k 20 --per-cell 5 --seed 3 --batch 4 --store " + quoted(db);
  // First run: killed once some closed-book rows are stored.
  pid_t pid = fork();
  if (pid == 0) {
    std::string cmd = "exec '" + ragform_bin().string() + "' " + args + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::int64_t before_kill = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    before_kill = closed_book_rows(db);
    if (before_kill >= 8) break;
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pid = 0;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  before_kill = closed_book_rows(db);
  ASSERT_GE(before_kill, 8);
  ASSERT_LT(before_kill, 120) << "the run finished before it could be killed";

  auto r = run_ragform(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(closed_book_rows(db), 120);
  // "... (G generated, D already done, 0 unmeasured)": the killed run's rows are not redone.
  EXPECT_NE(r.err.find(std::to_string(120 - before_kill) + " generated, " +
                       std::to_string(before_kill) + " already done"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("0 known, 120 unknown"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("empty: K-G, K-N"), std::string::npos) << r.err;
  auto rows = json_lines(r.out);
  EXPECT_EQ(rows.size(), 10u);  // U-G 5 + U-N 5
  for (const auto& row : rows) EXPECT_EQ(row["sure_cell"].get<std::string>()[0], 'U');

  // --known fills the K cells from a file of verdicts; the output feeds sure perturb.
  std::string known;
  for (int i = 0; i < 120; ++i)
    known += "{\"id\": \"nq" + std::to_string(i) + "\", \"known\": " + (i % 2 ? "true" : "false") +
             "}\n";
  write_file(dir / "known.jsonl", known);
  auto k = run_ragform("sure prepare --index " + quoted(ix.dir) + " --input " + quoted(q) +
                       " --known " + quoted(dir / "known.jsonl") + " -k 20 --per-cell 4 --seed 3");
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_NE(k.err.find("cells K-G 4/4, K-N 4/4, U-G 4/4, U-N 4/4"), std::string::npos) << k.err;
  write_file(dir / "prepared.jsonl", k.out);
  auto p =
      run_ragform("sure perturb --input " + quoted(dir / "prepared.jsonl") + " --kinds format");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_GE(json_lines(p.out).size(), 16u);
}

}  // namespace
}  // namespace ragform::testing

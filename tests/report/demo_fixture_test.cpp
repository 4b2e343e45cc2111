// `ragform demo` end to end on the real stories260K model and the shared data, kept small
// (2 story-needle items, 3 documents, 2 NQ questions, 10 HotpotQA questions): it writes one run
// store and one report with all three sections, a rerun reuses every row, each step writes the
// bytes its printed command writes when run by hand, and missing inputs give a message naming
// what to provide.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ragform::testing::run_ragform;

namespace {
const char* kSmall = " --needle 2 -k 3 --nq 2 --hotpot 10";

// The words of a printed command line, with the shell's single quotes undone.
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> words;
  std::string w;
  bool in_word = false, quoted = false;
  for (char c : line) {
    if (quoted) {
      if (c == '\'')
        quoted = false;
      else
        w += c;
    } else if (c == '\'') {
      quoted = in_word = true;
    } else if (c == ' ') {
      if (in_word) words.push_back(w);
      w.clear();
      in_word = false;
    } else {
      w += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(w);
  return words;
}

// Every file a printed step reads exists, or an earlier printed step writes it: the steps run
// by hand, in order, as printed. Returns the problems, one per line.
std::string unrunnable_steps(const std::string& err) {
  static const std::set<std::string> reads = {"--input", "--profile", "-m", "--vectors"};
  static const std::set<std::string> writes = {"-o", "--store", "--cache-dir", ">"};
  std::set<std::string> written;
  std::string problems;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("$ ", 0) != 0) continue;
    auto w = shell_words(line.substr(2));
    std::vector<std::string> inputs;
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      if (reads.count(w[i])) inputs.push_back(w[i + 1]);
      if (w[0] == "cat" && i > 0 && w[i] != ">" && w[i - 1] != ">") inputs.push_back(w[i]);
    }
    if (w.size() > 2 && w[0] == "ragform" && w[1] == "report") inputs.push_back(w[2]);
    for (const auto& f : inputs)
      if (!written.count(f) && !fs::exists(f)) problems += line + "\n  reads " + f + "\n";
    if (w.size() == 3 && w[0] == "mkdir" && w[1] == "-p") written.insert(w[2]);
    // A file is written into a folder that exists or that an earlier step made.
    for (size_t i = 0; i + 1 < w.size(); ++i) {
      if (!writes.count(w[i])) continue;
      const std::string parent = fs::path(w[i + 1]).parent_path().string();
      if (!parent.empty() && !written.count(parent) && !fs::is_directory(parent))
        problems += line + "\n  writes into " + parent + "\n";
      written.insert(w[i + 1]);
    }
  }
  return problems;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// "" when a == b, else the first line where they differ (both, cut to 300 bytes): a whole
// pairs file in a failure message would hide where it differs.
std::string first_difference(const std::string& a, const std::string& b) {
  if (a == b) return "";
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (size_t line = 1;; ++line) {
    const bool more_a = bool(std::getline(ia, la)), more_b = bool(std::getline(ib, lb));
    if (!more_a && !more_b) return "the files differ in their last newline";
    if (la != lb || more_a != more_b)
      return "line " + std::to_string(line) + ":\n  demo:    " + la.substr(0, 300) +
             "\n  by hand: " + lb.substr(0, 300);
  }
}

// Runs the printed steps of a demo by hand (`$ mkdir`, `$ cat`, `$ ragform ... > FILE`), each
// path of the demo's work folder and output folder moved to others. Returns the failures.
std::string run_printed_steps(const std::string& err, const std::vector<std::string>& from,
                              const std::vector<std::string>& to) {
  std::string failures;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("$ ", 0) != 0) continue;
    std::string cmd = line.substr(2);
    for (size_t i = 0; i < from.size(); ++i) cmd = replaced(cmd, from[i], to[i]);
    const auto w = shell_words(cmd);
    if (w.size() == 3 && w[0] == "mkdir") {
      fs::create_directories(w[2]);
      continue;
    }
    const size_t gt = cmd.rfind(" > ");
    if (gt == std::string::npos) {
      failures += cmd + "\n  has no '> FILE'\n";
      continue;
    }
    const std::string out = shell_words(cmd.substr(gt + 3)).at(0);
    if (w[0] == "cat") {
      std::string all;
      for (size_t i = 1; i < w.size() && w[i] != ">"; ++i) all += ragform::testing::read_file(w[i]);
      ragform::testing::write_file(out, all);
    } else if (w[0] == "ragform") {
      auto r = run_ragform(cmd.substr(std::string("ragform ").size(), gt - 8));
      if (r.exit_code != 0) failures += cmd + "\n  " + r.err + "\n";
      ragform::testing::write_file(out, r.out);
    } else {
      failures += cmd + "\n  is not a step this test runs\n";
    }
  }
  return failures;
}
}  // namespace

TEST(Demo, WritesOneStoreAndOneReportAndResumes) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  fs::path dir = ragform::testing::temp_dir("demo");
  std::string shared = ragform::testing::shared_dir().string();
  auto r = run_ragform("demo --shared '" + shared + "' --out-dir '" + dir.string() + "'" + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path db = dir / "ragform-demo.sqlite", html = dir / "ragform-demo.html";
  ASSERT_TRUE(fs::exists(db));
  ASSERT_TRUE(fs::exists(html));
  EXPECT_NE(r.out.find("report " + html.string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("C-NORM    calibrated delimiter f* = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spotlight 10 HotpotQA questions, recall@6:"), std::string::npos) << r.out;
  // The paper's category robustness (mean of per-perturbation RR on Golden pairs).
  EXPECT_NE(r.out.find("category RR (mean of its perturbations' RR, Golden pairs): logic "),
            std::string::npos)
      << r.out;
  // One finding about the reader with its interval: a category named only when its CI of the
  // share of pairs that change grade excludes 0, and every category listed with its CI.
  EXPECT_NE(r.out.find("by category (all pairs, 95% CI): logic "), std::string::npos) << r.out;
  const size_t f = r.out.find("finding: ");
  ASSERT_NE(f, std::string::npos) << r.out;
  if (r.out.compare(f, 23, "finding: no category ch") != 0) {
    const size_t ci = r.out.find("(95% CI [", f);
    ASSERT_NE(ci, std::string::npos) << r.out;
    EXPECT_GT(std::stod(r.out.substr(ci + 9)), 0.0) << r.out;
  }
  // Each step is shown as the command it runs.
  for (const char* step :
       {"$ ragform cnorm calibrate", "$ ragform cnorm eval", "$ ragform sure perturb",
        "$ ragform sure filter", "$ ragform sure eval", "$ ragform report"})
    EXPECT_NE(r.err.find(step), std::string::npos) << step;
  // ... and each can be rerun by hand in the printed order.
  EXPECT_NE(r.err.find("$ ragform data needle -n 2 -k 2 --seed 0 > "), std::string::npos) << r.err;
  EXPECT_EQ(unrunnable_steps(r.err), "") << r.err;

  ragform::store::RunStore st(db, ragform::store::RunStore::Mode::read_only);
  std::map<std::string, int64_t> rows;
  for (const auto& run : st.runs()) rows[run.pipeline] += st.counts(run.id).rows;
  // S = 6 prompts x 11 default candidates (original and the paper's F with both readings of
  // \cdot).
  EXPECT_EQ(rows["cnorm calibrate"], 6 * 11);
  EXPECT_EQ(rows["cnorm eval"], 2 * 3 * 3);  // items x positions x variants
  EXPECT_GT(rows["sure eval"], 0);
  EXPECT_EQ(rows["spotlight eval"], 10 * 5);  // questions x methods
  std::string page = ragform::testing::read_file(html);
  for (const char* id : {"id=\"cnorm\"", "id=\"sure\"", "id=\"spotlight\"", "id=\"runs\""})
    EXPECT_NE(page.find(id), std::string::npos) << id;
  EXPECT_EQ(page.find("<script"), std::string::npos);

  // Rerun: everything is reused, nothing recomputed.
  auto again =
      run_ragform("demo --shared '" + shared + "' --out-dir '" + dir.string() + "'" + kSmall);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("0 rows written, 50 reused"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("18 of 18 answers already stored"), std::string::npos) << again.err;
  ragform::store::RunStore st2(db, ragform::store::RunStore::Mode::read_only);
  EXPECT_EQ(st2.runs().size(), st.runs().size());
}

// The demo runs its steps in-process through the library calls the printed commands make; each
// step's file (its command's stdout after '>', the profile, the profile cache) has the bytes the
// command writes when the printed lines are run by hand.
TEST(Demo, StepsWriteWhatTheirPrintedCommandsWrite) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  const fs::path dir = ragform::testing::temp_dir("demo-steps");
  const fs::path w1 = dir / "work-demo", o1 = dir / "out-demo";
  const fs::path w2 = dir / "work-by-hand", o2 = dir / "out-by-hand";
  const std::string shared = ragform::testing::shared_dir().string();
  auto r = run_ragform("demo --shared '" + shared + "' --out-dir '" + o1.string() +
                       "' --work-dir '" + w1.string() + "'" + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("(profile, pairs, command outputs) in " + w1.string() + ", kept"),
            std::string::npos)
      << r.err;
  fs::create_directories(o2);
  ASSERT_EQ(run_printed_steps(r.err, {w1.string(), o1.string()}, {w2.string(), o2.string()}), "");
  size_t compared = 0;
  for (const auto& e : fs::recursive_directory_iterator(w1)) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = fs::relative(e.path(), w1);
    // The report counts the demo's Spotlight run too, which no printed command writes.
    if (rel == "report.json") continue;
    std::string demo = ragform::testing::read_file(e.path());
    demo = replaced(replaced(demo, w1.string(), w2.string()), o1.string(), o2.string());
    ASSERT_TRUE(fs::exists(w2 / rel)) << rel;
    EXPECT_EQ(first_difference(demo, ragform::testing::read_file(w2 / rel)), "") << rel;
    ++compared;
  }
  // calibrate.json, profile.json, the cached profile, cnorm-eval.json, needle.jsonl, the three
  // pairs files, kept.jsonl and sure-eval.json.
  EXPECT_EQ(compared, 10u);
}

TEST(Demo, SaysWhatToProvide) {
  auto r = run_ragform("demo -m /nonexistent/model.gguf --out-dir /nonexistent/out");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing input files (give -m MODEL.gguf for the model, --shared DIR"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos);
  auto u = run_ragform("demo --shared /nonexistent/shared");
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_NE(u.err.find("--shared: /nonexistent/shared is not a directory"), std::string::npos)
      << u.err;
}

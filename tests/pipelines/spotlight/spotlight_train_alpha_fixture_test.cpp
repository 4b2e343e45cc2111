// `ragform spotlight train-alpha` on HotpotQA train and `--alpha learned:FILE`: the same data and
// seed write the same bytes, the fit is at least IDF on its training questions, bad records and
// bad alpha files are one-line errors naming the file and line, and eval reads the file.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "pipelines/spotlight/alpha.h"
#include "support/test_support.h"

namespace {

using namespace ragform::testing;

struct Shared {
  std::string train, dev, glove;
};

Shared shared_files() {
  return {shared_path("data/hotpotqa-distractor/train.jsonl").string(),
          shared_path("data/hotpotqa-distractor/dev.jsonl").string(),
          shared_path("data/embeddings/glove-50d-5k.json").string()};
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(SpotlightTrainAlpha, SameSeedSameBytesAndAtLeastIdf) {
  REQUIRE_SHARED(train, "data/hotpotqa-distractor/train.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  const auto dir = temp_dir("spotlight-train-alpha");
  auto train_to = [&](const std::string& out, int seed) {
    return run_ragform("spotlight train-alpha --input " + ragform::testing::quoted(train) +
                       " --vectors " + ragform::testing::quoted(glove) + " --limit 40 --seed " +
                       std::to_string(seed) + " -o " + ragform::testing::quoted(dir / out));
  };
  const RunResult a = train_to("a.json", 1), b = train_to("b.json", 1);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(a.err.find("recall@6 on them: uniform "), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("pass 1, step 1"), std::string::npos) << a.err;  // progress per pass
  const std::string bytes = read_file(dir / "a.json");
  EXPECT_EQ(bytes, read_file(dir / "b.json"));
  const auto alpha = ragform::spotlight::load_alpha_file((dir / "a.json").string());
  EXPECT_EQ(alpha.training["questions"], 40);
  EXPECT_GE(alpha.training["recall"].get<double>(), alpha.training["idf_recall"].get<double>());
  // Issue 40, third pass: eval leaves out the questions the alpha was fitted to, with a note (it
  // reported the training recall as the evaluation, silently): all 40 -> a usage error; the
  // first 50 of train -> the 10 others are measured.
  ASSERT_EQ(alpha.training["question_keys"].size(), 40u);
  const std::string eval = "spotlight eval --input " + ragform::testing::quoted(train) +
                           " --vectors " + ragform::testing::quoted(glove) +
                           " --alpha learned:" + ragform::testing::quoted(dir / "a.json");
  RunResult e = run_ragform(eval + " --limit 40");
  EXPECT_EQ(e.exit_code, 2) << e.err;
  EXPECT_NE(e.err.find("every one of the 40 questions is in the training set of "),
            std::string::npos)
      << e.err;
  e = run_ragform(eval + " --limit 50");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.err.find("spotlight eval: note: 40 of 50 questions are in the training set of "),
            std::string::npos)
      << e.err;
  EXPECT_NE(e.err.find("recall@6 = "), std::string::npos) << e.err;
  EXPECT_NE(e.err.find("n=10"), std::string::npos) << e.err;
  // Another seed visits the features in another order; its file is as valid.
  const RunResult c = train_to("c.json", 7);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NO_THROW(ragform::spotlight::load_alpha_file((dir / "c.json").string()));
}

TEST(SpotlightTrainAlpha, BadRecordNamesItsLine) {
  REQUIRE_SHARED(train, "data/hotpotqa-distractor/train.jsonl");
  const Shared f = shared_files();
  const auto dir = temp_dir("spotlight-train-alpha-bad");
  // Line 2: a HotpotQA record whose supporting_facts are empty.
  std::string rec = first_line(f.train);
  const size_t at = rec.find("\"supporting_facts\"");
  ASSERT_NE(at, std::string::npos);
  const size_t end = rec.find('}', at);
  rec = rec.substr(0, at) + R"("supporting_facts": {"title": [], "sent_id": []})" +
        rec.substr(end + 1);
  write_file(dir / "in.jsonl", first_line(f.train) + "\n" + rec + "\n");
  const RunResult r =
      run_ragform("spotlight train-alpha --input " + ragform::testing::quoted(dir / "in.jsonl") +
                  " --vectors " + ragform::testing::quoted(f.glove) + " -o " +
                  ragform::testing::quoted(dir / "a.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find("ragform: " + (dir / "in.jsonl").string() + ":2: record '"), 0u) << r.err;
  EXPECT_NE(r.err.find("has no supporting_facts"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "a.json"));
}

TEST(SpotlightTrainAlpha, EvalReadsTheFileAndRejectsABadOne) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  const Shared f = shared_files();
  const auto dir = temp_dir("spotlight-eval-alpha");
  write_file(dir / "a.json", ragform::spotlight::alpha_file_text({1, 0, -1, -1, 0, 1, 0, 1}, {}));
  std::string bad = ragform::spotlight::alpha_file_text({}, {});
  bad.replace(bad.find("\"version\": 1"), 12, "\"version\": 2");
  write_file(dir / "bad.json", bad);
  auto eval_with = [&](const std::string& alpha) {
    return run_ragform("spotlight eval --input " + ragform::testing::quoted(f.dev) + " --vectors " +
                       ragform::testing::quoted(f.glove) + " --limit 5 --alpha " + alpha);
  };
  const RunResult ok = eval_with("learned:" + ragform::testing::quoted(dir / "a.json"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("main          spotlight"), std::string::npos) << ok.err;
  const RunResult r = eval_with("learned:" + ragform::testing::quoted(dir / "bad.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ragform: " + (dir / "bad.json").string() +
                       ":3: 'version' is 2, this ragform reads version 1\n");
  const RunResult u = eval_with("bm25");
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_EQ(u.err, "ragform: --alpha: must be idf, uniform or learned:FILE, got 'bm25'\n");
}

}  // namespace

// run_generate (spotlight/run.h) with without_tokens, as `spotlight eval --generate --store` runs
// it: one row per question and variant ("spotlight" with the <Rel> and category tokens,
// "spotlight-no-tokens" without), the second prompt being exactly select_and_annotate's with
// special tokens off; every row keeps its prompt tokens, generation time, EM/F1/substring and
// finish reason; a second call resumes and generates nothing; the summary holds each variant's
// per-question scores.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eval/datasets.h"
#include "pipelines/spotlight/spotlight.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::spotlight {
namespace {

// The first `limit` HotpotQA dev questions, selected with GloVe into a fresh store (the selection
// run the answer variants are built from).
struct Selected {
  std::vector<eval::QaRecord> recs;
  std::unique_ptr<WordVectors> wv;
  std::unique_ptr<StaticEncoder> enc;  // reads *wv
  std::unique_ptr<store::RunStore> st;
  RunSummary sel;
};
Selected select_first(size_t limit, const std::string& tag) {
  Selected s;
  const std::filesystem::path hotpot =
      ragform::testing::shared_path("data/hotpotqa-distractor/dev.jsonl");
  const std::filesystem::path glove =
      ragform::testing::shared_path("data/embeddings/glove-50d-5k.json");
  if (!std::filesystem::exists(hotpot) || !std::filesystem::exists(glove)) return s;
  eval::LoadOptions lo;
  lo.limit = limit;
  s.recs = eval::load_qa_file(hotpot.string(), lo).records;
  s.wv = std::make_unique<WordVectors>(WordVectors::load(glove.string()));
  s.enc = std::make_unique<StaticEncoder>(*s.wv);
  s.st = std::make_unique<store::RunStore>(ragform::testing::temp_dir(tag) / "runs.sqlite",
                                           store::RunStore::Mode::create,
                                           store::RunStore::Durability::normal);
  s.sel = run_eval(*s.enc, *s.st, s.recs, RunOptions{});
  return s;
}

TEST(SpotlightGenerateVariants, RowsPerQuestionAndVariantWithTokensAndTimes) {
  Selected s = select_first(4, "spotlight-generate-variants");
  ASSERT_TRUE(s.st) << "missing shared files: data/hotpotqa-distractor, data/embeddings";
  const auto& recs = s.recs;
  StaticEncoder& enc = *s.enc;
  store::RunStore& st = *s.st;
  RunOptions o;
  const RunSummary& sel = s.sel;
  ASSERT_GT(sel.questions, 0u);

  // A base model's habit: a newline first, then the answer line, then more evidence. The gold
  // answer for prompts with the special tokens, a wrong one without.
  std::map<std::string, std::string> gold;
  for (const auto& r : recs) gold[r.question] = r.answers.at(0);
  ragform::testing::FakeReader rd;
  rd.answer = [&](const std::string& prompt) {
    const size_t b = prompt.find("Question: ") + 10, e = prompt.find("\nEvidence:");
    const bool tokens = prompt.find("<Rel") != std::string::npos;
    return "\n" + (tokens ? gold.at(prompt.substr(b, e - b)) : std::string("nobody")) +
           "\n<Rel0.50> more";
  };
  GenerateOptions g;
  g.spotlight_run = sel.run;
  g.without_tokens = true;
  const GenerateSummary sum = run_generate(rd, st, recs, g);
  EXPECT_EQ(rd.generate_calls, int(2 * sel.questions));
  EXPECT_EQ(sum.graded, double(sel.questions));
  EXPECT_EQ(sum.correct, double(sel.questions));
  ASSERT_EQ(sum.variants.size(), 2u);
  const VariantAnswers& with = sum.variants.at(kWithTokens);
  const VariantAnswers& without = sum.variants.at(kWithoutTokens);
  ASSERT_EQ(with.em.size(), sel.questions);
  ASSERT_EQ(without.em.size(), sel.questions);
  for (size_t i = 0; i < sel.questions; ++i) {
    EXPECT_EQ(with.em[i], 1.0);
    EXPECT_EQ(with.f1[i], 1.0);
    EXPECT_EQ(without.em[i], 0.0);
  }
  EXPECT_GT(with.prompt_tokens, without.prompt_tokens);  // the tokens cost prompt tokens
  EXPECT_GE(with.generate_ms, 0.0);

  // The no-tokens prompt is select_and_annotate's without special tokens, in the same order.
  std::map<std::string, const eval::QaRecord*> by_id;
  for (const auto& r : recs) by_id[r.id] = &r;
  size_t rows = 0;
  for (const store::Result& row : st.results(sum.run)) {
    ++rows;
    ASSERT_EQ(row.status, store::Status::ok) << row.error;
    ASSERT_TRUE(row.prompt_tokens);
    EXPECT_EQ(*row.prompt_tokens, int64_t(row.prompt.size()) + 1);
    EXPECT_TRUE(row.timings_ms.count("total"));
    EXPECT_TRUE(row.scores.count("em") && row.scores.count("f1") && row.scores.count("substring"));
    EXPECT_EQ(row.extra.value("finish_reason", ""), "stop");
    const eval::QaRecord& r = *by_id.at(row.instance);
    const std::vector<Document> docs = documents_of(r);
    const ScoredQuestion sq = score_question(enc, r.question, docs, o.params);
    const bool tokens = row.variant == kWithTokens;
    ASSERT_TRUE(tokens || row.variant == kWithoutTokens) << row.variant;
    EXPECT_EQ(row.prompt,
              select_and_annotate(r.question, docs, sq, {o.K, Order::Document, tokens}).prompt);
    EXPECT_EQ(row.output, tokens ? r.answers.at(0) : "nobody");
  }
  EXPECT_EQ(rows, 2 * sel.questions);

  // Resumed: nothing generated again, the same summary.
  const GenerateSummary again = run_generate(rd, st, recs, g);
  EXPECT_EQ(again.run, sum.run);
  EXPECT_EQ(rd.generate_calls, int(2 * sel.questions));
  EXPECT_EQ(again.variants.at(kWithoutTokens).em, without.em);

  // A run without the second variant is the same run (rows are keyed by variant): it resumes too.
  g.without_tokens = false;
  const GenerateSummary one = run_generate(rd, st, recs, g);
  EXPECT_EQ(one.run, sum.run);
  EXPECT_EQ(rd.generate_calls, int(2 * sel.questions));
}

// With emphasis, the no-tokens prompt's steered spans are its sentences' bytes.
TEST(SpotlightGenerateVariants, EmphasisSpansOfThePlainPrompt) {
  Selected s = select_first(2, "spotlight-generate-emphasis");
  ASSERT_TRUE(s.st) << "missing shared files: data/hotpotqa-distractor, data/embeddings";
  const auto& recs = s.recs;
  store::RunStore& st = *s.st;
  const RunSummary& sel = s.sel;
  std::map<std::string, reader::SteeringParams> seen;
  struct Steered : ragform::testing::FakeReader {
    std::map<std::string, reader::SteeringParams>* seen = nullptr;
    reader::Generation generate(const std::string& p, const reader::GenerateParams& gp) override {
      (*seen)[p] = steering;
      return FakeReader::generate(p, gp);
    }
  } rd;
  rd.seen = &seen;
  rd.answer = [](const std::string&) { return std::string("x"); };
  GenerateOptions g;
  g.spotlight_run = sel.run;
  g.without_tokens = true;
  g.emphasis_factor = 4.0;
  run_generate(rd, st, recs, g);
  ASSERT_EQ(seen.size(), 2 * sel.questions);
  size_t plain = 0;
  for (const auto& [prompt, steer] : seen) {
    ASSERT_TRUE(steer.active());
    EXPECT_EQ(steer.rule, runtime::Steering::Rescale);
    EXPECT_EQ(steer.value, 4.0f);
    if (prompt.find("<Rel") != std::string::npos) continue;
    ++plain;
    // Each span is one whole line of the evidence.
    for (const auto& sp : steer.spans) {
      ASSERT_LE(sp.end, prompt.size());
      EXPECT_EQ(prompt[sp.begin - 1], '\n');
      EXPECT_EQ(prompt[sp.end], '\n');
      EXPECT_EQ(prompt.substr(sp.begin, sp.end - sp.begin).find('\n'), std::string::npos);
    }
    EXPECT_EQ(steer.spans.size(), 6u);  // K = 6
  }
  EXPECT_EQ(plain, sel.questions);
}

}  // namespace
}  // namespace ragform::spotlight

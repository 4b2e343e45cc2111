// SpotlightRAG's document prior from calibrated attention (scoring.h ScoreParams::document_prior,
// calibrated_prior.h, `spotlight select --prior calibrated`): the prior replaces the positional
// shape in rho, and the CLI's prior is Found in the Middle's allocation softmax(rel / t) over its
// largest value (or, --prior-allocation minmax, the min-max normalised relevance) of the
// calibrated relevance that `ragform attention --doc-spans` and the bias curve give the prior's
// prompt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"
#include "pipelines/spotlight/calibrated_prior.h"
#include "pipelines/spotlight/evaluate.h"
#include "pipelines/spotlight/scoring.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using namespace ragform;
using nlohmann::json;
namespace rt = ragform::testing;

namespace {

TEST(SpotlightPrior, FromRelevanceIsMinMax) {
  EXPECT_EQ(spotlight::document_prior_from_relevance({0.1, -0.3, 0.5}),
            (std::vector<double>{(0.1 + 0.3) / 0.8, 0.0, 1.0}));
  EXPECT_EQ(spotlight::document_prior_from_relevance({0.2, 0.2}), (std::vector<double>{1, 1}));
}

TEST(SpotlightPrior, DocumentPriorReplacesThePositionalOne) {
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  eval::LoadOptions lo;
  lo.limit = 1;
  const auto recs = eval::load_qa_file(hotpot.string(), lo).records;
  auto wv = spotlight::WordVectors::load(glove.string());
  spotlight::StaticEncoder enc(wv);
  const auto docs = spotlight::documents_of(recs[0]);
  spotlight::ScoreParams p = spotlight::paper_score_params();
  p.scorer = spotlight::Scorer::MeanVector;  // R = cos - (1 - rho): the prior shows as is
  p.lambda = 1.0;
  p.document_prior.assign(docs.size(), 1.0);
  const auto flat = spotlight::score_question(enc, recs[0].question, docs, p);
  p.document_prior[0] = 0.0;
  p.document_prior[1] = 0.25;
  const auto low = spotlight::score_question(enc, recs[0].question, docs, p);
  ASSERT_EQ(flat.sentences.size(), low.sentences.size());
  for (size_t i = 0; i < flat.sentences.size(); ++i) {
    const int d = flat.sentences[i].doc;
    const double drop = d == 0 ? 1.0 : d == 1 ? 0.75 : 0.0;
    EXPECT_NEAR(flat.sentences[i].R - low.sentences[i].R, drop, 1e-12) << i;
  }
  // A prior of one value per document only.
  p.document_prior.pop_back();
  EXPECT_THROW(spotlight::score_question(enc, recs[0].question, docs, p), UsageError);
}

TEST(SpotlightPrior, SelectCalibratedPriorIsTheAttentionsRelevance) {
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const fs::path dir = rt::temp_dir("spotlight-prior");
  eval::LoadOptions lo;
  lo.limit = 1;
  const auto recs = eval::load_qa_file(hotpot.string(), lo).records;
  const auto docs = spotlight::documents_of(recs[0]);
  const size_t k = docs.size();
  auto c = rt::run_ragform("position-bias -m " + rt::quoted(model) + " --task needle -k " +
                           std::to_string(k) + " --limit 2 -o " + rt::quoted(dir / "curve.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto s = rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                           rt::quoted(glove) + " --limit 1 --json --prior calibrated --bias " +
                           rt::quoted(dir / "curve.json") + " --prior-ctx 8192 --prior-model " +
                           rt::quoted(model));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const json j = json::parse(s.out);
  ASSERT_EQ(j["prior"].size(), k);
  auto mm = rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                            rt::quoted(glove) + " --limit 1 --json --prior calibrated --bias " +
                            rt::quoted(dir / "curve.json") + " --prior-ctx 8192 --prior-model " +
                            rt::quoted(model) + " --prior-allocation minmax");
  ASSERT_EQ(mm.exit_code, 0) << mm.err;
  const json jm = json::parse(mm.out);

  const spotlight::PriorPrompt pp = spotlight::prior_prompt(recs[0].question, docs);
  rt::write_file(dir / "prompt.txt", pp.text);
  std::string spans;
  for (size_t d = 0; d < k; ++d)
    spans += (d ? "," : "") + std::to_string(pp.documents[d].begin) + ":" +
             std::to_string(pp.documents[d].end);
  const json curve = json::parse(rt::read_file(dir / "curve.json"));
  std::vector<double> cal(k, 0.0);
  for (int l = 0; l < 5; ++l) {  // stories260K's five layers
    auto a = rt::run_ragform("attention --ctx 8192 -m " + rt::quoted(model) + " --file " +
                             rt::quoted(dir / "prompt.txt") + " --json --layer " +
                             std::to_string(l) + " --doc-spans " + spans);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    for (size_t d = 0; d < k; ++d)
      cal[d] += json::parse(a.out)["documents"][d]["mean"].get<double>() / 5;  // the curve's
  }
  for (size_t d = 0; d < k; ++d) cal[d] -= curve["curve"][d].get<double>();
  const std::vector<double> want = spotlight::document_prior_from_relevance(cal);
  for (size_t d = 0; d < k; ++d) EXPECT_NEAR(jm["prior"][d].get<double>(), want[d], 1e-6) << d;
  // The default: exp((rel - max rel) / 5e-5), the softmax over its largest value.
  const double top = *std::max_element(cal.begin(), cal.end());
  for (size_t d = 0; d < k; ++d)
    EXPECT_NEAR(j["prior"][d].get<double>(), std::exp((cal[d] - top) / 5e-5), 1e-4) << d;
  // --temperature and --prior-allocation go with --prior calibrated only.
  for (const char* flag : {" --temperature 1e-3", " --prior-allocation minmax"})
    EXPECT_EQ(rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                              rt::quoted(glove) + " --limit 1" + flag)
                  .exit_code,
              2)
        << flag;

  // The prior changes the selection's scores against the positional one.
  auto plain = rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                               rt::quoted(glove) + " --limit 1 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(json::parse(plain.out)["selected"], j["selected"]);
  // A curve of another K is refused.
  auto bad = rt::run_ragform("position-bias -m " + rt::quoted(model) +
                             " --task needle -k 3 --limit 1 -o " + rt::quoted(dir / "k3.json"));
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_NE(rt::run_ragform("spotlight select --input " + rt::quoted(hotpot) + " --vectors " +
                            rt::quoted(glove) + " --limit 1 --prior calibrated --bias " +
                            rt::quoted(dir / "k3.json") + " --prior-model " + rt::quoted(model))
                .exit_code,
            0);
}

}  // namespace

// `sure filter --nli-model`: the bidirectional entailment check with an NLI cross-encoder
// (pipelines/sure/nli_encoder.h). Mechanics on tiny-bert-nli (random weights): every NLI-checked
// pair carries both directions' labels, which are the argmax labels of `ragform classify` on
// (original, perturbed) and (perturbed, original); a pair is kept iff both are entailment.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "pipelines/sure/nq_pairs_input.h"
#include "support/test_support.h"

using ragform::testing::json_lines;
using ragform::testing::quoted;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

namespace {
std::string argmax_label(const nlohmann::json& j) {
  size_t best = 0;
  for (size_t i = 1; i < j["scores"].size(); ++i)
    if (j["scores"][i].get<double>() > j["scores"][best].get<double>()) best = i;
  return j["labels"][best];
}
}  // namespace

TEST(SureNliModel, FilterClassifiesBothDirections) {
  REQUIRE_SHARED(nli, "fixtures/models/tiny-bert-nli.gguf");
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("sure_nli_model");
  write_file(dir / "qa.jsonl", ragform::testing::nq_pairs_input(nq, 2));
  auto r = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") + " --kinds logic");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  write_file(dir / "pairs.jsonl", r.out);

  auto f =
      run_ragform("sure filter --input " + quoted(dir / "pairs.jsonl") + " --nli all --nli-model " +
                  quoted(nli) + " --rejected " + quoted(dir / "rej.jsonl"));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  std::vector<nlohmann::json> all = json_lines(f.out);
  for (auto& j : json_lines(ragform::testing::read_file(dir / "rej.jsonl"))) all.push_back(j);
  size_t checked = 0;
  for (const auto& p : all) {
    if (!p.contains("nli_forward")) continue;
    ++checked;
    // The same verdicts as `classify` on the pair, both ways.
    write_file(dir / "a.txt", p["original"].get<std::string>());
    write_file(dir / "b.txt", p["perturbed"].get<std::string>());
    auto fw = run_ragform("classify -m " + quoted(nli) + " -f " + quoted(dir / "a.txt") +
                          " --pair-file " + quoted(dir / "b.txt") + " --json");
    auto bw = run_ragform("classify -m " + quoted(nli) + " -f " + quoted(dir / "b.txt") +
                          " --pair-file " + quoted(dir / "a.txt") + " --json");
    ASSERT_EQ(fw.exit_code, 0) << fw.err;
    EXPECT_EQ(p["nli_forward"], argmax_label(nlohmann::json::parse(fw.out)));
    EXPECT_EQ(p["nli_backward"], argmax_label(nlohmann::json::parse(bw.out)));
    const bool kept = !p.contains("reason");
    EXPECT_EQ(kept, p["nli_forward"] == "entailment" && p["nli_backward"] == "entailment");
    if (checked >= 4) break;  // each check runs the binary twice
  }
  EXPECT_GE(checked, 4u);
  EXPECT_NE(f.err.find("nli_checked"), std::string::npos) << f.err;

  // A model without an entailment label is refused before any work.
  auto bad = run_ragform("sure filter --input " + quoted(dir / "pairs.jsonl") +
                         " --nli all --nli-model " + quoted(bert));
  EXPECT_NE(bad.exit_code, 0);
}

// What the pipelines' use cases write for the front ends (cnorm/outputs.h, sure/outputs.h), which
// `ragform cnorm|data|sure` and `ragform demo` both print: the calibration table's columns, the
// filter's kept and dropped lines, the perturbation notes and the JSON lines' form.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipelines/cnorm/cnorm.h"
#include "pipelines/sure/sure.h"

namespace ragform {
namespace {

TEST(CnormOutputs, CalibrationLinesPadLabelsByCodePointsAndMarkTheBest) {
  cnorm::Profile prof;
  cnorm::CandidateScore dot;
  dot.delim.name = "\xC2\xB7";  // '·': two bytes, one column
  dot.abs = {0.5, 0.25};
  dot.mean = 0.375;
  dot.std = 0.125;
  cnorm::CandidateScore orig;
  orig.delim.name = "original";
  orig.abs = {0.5};
  orig.mean = 0.5;
  prof.candidates = {dot, orig};
  prof.best.name = "original";
  EXPECT_EQ(
      cnorm::calibration_lines(prof),
      (std::vector<std::string>{"  \xC2\xB7          ABS 0.375000 +- 0.125000 (2 prompts)",
                                "  original   ABS 0.500000 +- 0.000000 (1 prompts)  <- best"}));
  // A joint search names its best by label.
  prof.best_name = "\xC2\xB7";
  EXPECT_NE(cnorm::calibration_lines(prof)[0].find("<- best"), std::string::npos);
}

TEST(CnormOutputs, NeedleJsonlIsOneRecordALineGoldFirst) {
  const std::string jsonl = cnorm::needle_jsonl(3, 2, 0);
  size_t lines = 0;
  for (size_t at = 0; at < jsonl.size(); at = jsonl.find('\n', at) + 1) {
    const auto rec = nlohmann::json::parse(jsonl.substr(at, jsonl.find('\n', at) - at));
    ASSERT_EQ(rec["ctxs"].size(), 2u);
    EXPECT_TRUE(rec["ctxs"][0]["isgold"].get<bool>());
    EXPECT_FALSE(rec["ctxs"][1]["isgold"].get<bool>());
    ++lines;
  }
  EXPECT_EQ(lines, 3u);
  EXPECT_EQ(jsonl, cnorm::needle_jsonl(3, 2, 0));  // the same arguments give the same bytes
}

sure::Pair pair(const std::string& id, bool failed) {
  sure::Pair p;
  p.id = id;
  p.instance = id;
  p.perturbation = "logic/reverse";
  p.original = "a \xFF b";  // invalid UTF-8 is replaced, not an error
  p.failed = failed;
  return p;
}

TEST(SureOutputs, FilterLinesKeepAndDropWithTheirFields) {
  std::vector<sure::Pair> pairs = {pair("q1", false), pair("q2", true)};
  std::vector<sure::FilterVerdict> v(2);
  v[0].keep = true;
  v[0].nli_forward = "entailment";
  v[0].nli_backward = "entailment";
  v[1].reason = "failed_perturbation";
  const sure::FilterLines out = sure::filter_lines(pairs, v);
  EXPECT_EQ(out.n_kept, 1u);
  const auto kept = nlohmann::json::parse(out.kept);
  EXPECT_EQ(kept["id"], "q1");
  EXPECT_EQ(kept["nli_backward"], "entailment");
  EXPECT_EQ(kept["original"], "a \xEF\xBF\xBD b");
  const auto dropped = nlohmann::json::parse(out.rejected);
  EXPECT_EQ(dropped["reason"], "failed_perturbation");
  EXPECT_FALSE(dropped.contains("nli_forward"));
  EXPECT_EQ(out.kept.back(), '\n');
  // perturb's lines: every pair, in order, each as json_line writes it.
  EXPECT_EQ(sure::pairs_jsonl(pairs), sure::json_line(sure::pair_to_json(pairs[0])) +
                                          sure::json_line(sure::pair_to_json(pairs[1])));
}

TEST(SureOutputs, PerturbNotesCountRecordsWithoutDocumentsFirst) {
  sure::PerturbResult res;
  res.pairs = {pair("q1", false), pair("q2", true)};
  res.failed = 1;
  EXPECT_EQ(sure::perturb_notes(res, 2),
            (std::vector<std::string>{"sure perturb: 2 pairs (1 failed) from 2 records"}));
  res.no_ctx = 3;
  EXPECT_EQ(sure::perturb_notes(res, 5),
            (std::vector<std::string>{"sure perturb: 3 records without documents skipped",
                                      "sure perturb: 2 pairs (1 failed) from 5 records"}));
}

}  // namespace
}  // namespace ragform
